"""spaCy's rule-based tokenizer with the conventions of biomedical corpora as options.

GENIA keeps hyphenated names whole (``NF-kappa``, ``c-fos``, ``T-cell``), and no GENIA entity
starts or ends at a hyphen inside one of its tokens (where an entity ends at a hyphen inside a
written word, as ``IL-2`` in ``IL-2-induced``, GENIA splits its token there; text as written
keeps such a word whole under this option). spaCy's default English infix rules split at every
such hyphen, so a pipeline sees ``c``, ``-``, ``fos`` and can predict fragments like ``fos`` or
``-fos mRNA``.
With ``split_hyphens = false`` the tokenizer keeps such words whole while every other rule
(prefixes, suffixes, exceptions, other infixes) stays spaCy's own::

    [nlp.tokenizer]
    @tokenizers = "spacy-nested-mrc.Tokenizer.v1"
    split_hyphens = false

The rules are saved with the pipeline like any tokenizer's, so ``spacy.load`` restores them.
A text holding lone surrogates (half of a UTF-16 pair, which spaCy's string store cannot
encode) is read with each replaced by U+FFFD and warning NMW006 (``characters``).

It follows ``nlp.lang``: a language whose words spaCy's rule-based tokenizer cannot find
(Chinese, Japanese, Korean, Thai, Vietnamese) gets the tokenizer spaCy gives that language,
where ``split_hyphens`` does not apply (a warning says so when it is set to false).
"""

import re
import warnings
from typing import Any, Callable

from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.util import compile_infix_regex, registry

from .characters import repair_text
from .errors import Warnings

# a word whose hyphen spaCy's English infix rules split: the probe for which rule does it
HYPHENATED_PROBE = "kappa-B"


@registry.tokenizers("spacy-nested-mrc.Tokenizer.v1")
def create_tokenizer(split_hyphens: bool = True) -> Callable[[Language], Tokenizer]:
    """spaCy's default tokenizer for the language (``spacy.Tokenizer.v1``), optionally without
    the infix rules that split words at hyphens.

    split_hyphens (bool): split between letters or digits at a hyphen, dash or tilde, as
        spaCy's defaults do; false keeps ``NF-kappa`` one token, as GENIA's annotation does.
    RETURNS (Callable[[Language], Tokenizer]): the tokenizer factory.
    """
    make_default = registry.tokenizers.get("spacy.Tokenizer.v1")()

    def make_tokenizer(nlp: Language) -> Any:
        own = dict(nlp.Defaults.config.get("nlp", {}).get("tokenizer", {}))
        if own and own["@tokenizers"] != "spacy.Tokenizer.v1":
            if not split_hyphens:
                warnings.warn(Warnings.NMW014.format(lang=nlp.lang, name=own["@tokenizers"]))
            return registry.resolve({"tokenizer": own})["tokenizer"](nlp)
        tokenizer = RepairingTokenizer.like(make_default(nlp))
        if not split_hyphens:
            infixes = without_hyphen_rules(nlp.Defaults.infixes or [])
            tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
        return tokenizer

    return make_tokenizer


class RepairingTokenizer(Tokenizer):
    """spaCy's rule-based tokenizer, reading a text with its lone surrogates replaced by
    U+FFFD (one code point for one: offsets unchanged) and warning NMW006."""

    @classmethod
    def like(cls, tokenizer: Tokenizer) -> "RepairingTokenizer":
        """RETURNS (RepairingTokenizer): one with ``tokenizer``'s vocab and rules."""
        return cls(tokenizer.vocab, rules=tokenizer.rules,
                   prefix_search=tokenizer.prefix_search,
                   suffix_search=tokenizer.suffix_search,
                   infix_finditer=tokenizer.infix_finditer,
                   token_match=tokenizer.token_match, url_match=tokenizer.url_match,
                   faster_heuristics=tokenizer.faster_heuristics)

    def __call__(self, string: str) -> Any:
        text, count = repair_text(string)
        if count:
            warnings.warn(Warnings.NMW006.format(
                count=count, where=f"a text of {len(text):,} characters given to nlp()"))
        return super().__call__(text)


def without_hyphen_rules(infixes) -> list:
    """infixes (Iterable[str]): infix patterns. RETURNS (list): those that do not split
    ``HYPHENATED_PROBE`` at its hyphen."""
    return [pattern for pattern in infixes if not re.search(pattern, HYPHENATED_PROBE)]
