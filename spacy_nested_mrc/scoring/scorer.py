"""The registered scorer: P/R/F of exact labelled spans (overall and per type), and recall of
nested vs non-nested gold entities.

Spans are compared on their characters (start, end, label), so the predicted doc may be
tokenized otherwise than the gold one (``spacy evaluate`` tokenizes the text with the
pipeline's tokenizer). Unlike spaCy's ``Scorer.score_spans``, which drops a predicted span
that cannot be aligned to the gold tokens, such a span counts as a false positive: a user
who reads ``doc.spans`` sees it. Text the reference gives as context only
(``annotation.unannotated_key``) is not scored: spans that start there are left out; text
that annotates some labels only (``annotation.labeled_key``: its corpus's) is scored on
those labels alone.
"""

from collections import defaultdict
from typing import Any, Callable, Dict, Iterable, Set, Tuple

import numpy as np
from spacy.scorer import PRFScore
from spacy.training import Example
from spacy.util import registry

from ..annotation import scored_only
from ..spans import nested_mask
from ..types import DEFAULT_SPANS_KEY

CharSpan = Tuple[int, int, str]


def char_spans(group: Iterable[Any]) -> Set[CharSpan]:
    """RETURNS (Set[CharSpan]): (start char, end char, label) of each span of ``group``."""
    return {(span.start_char, span.end_char, span.label_) for span in group}


def score_nested(
    examples: Iterable[Example], *, spans_key: str = DEFAULT_SPANS_KEY, **kwargs: Any
) -> Dict[str, Any]:
    """Score the spans in ``doc.spans[spans_key]`` against the gold ones.

    Examples whose reference has no group ``spans_key`` are skipped.
    RETURNS (Dict[str, Any]): ``spans_{key}_p/r/f``, ``spans_{key}_per_type`` and
        ``spans_{key}_nested_r`` / ``spans_{key}_non_nested_r`` (recall of gold entities
        that contain or lie in another gold entity, and of the others).
    """
    attr = f"spans_{spans_key}"
    overall, nested, flat = PRFScore(), PRFScore(), PRFScore()
    per_type: Dict[str, PRFScore] = defaultdict(PRFScore)
    for eg in examples:
        if spans_key not in eg.reference.spans:
            continue
        gold_group = eg.reference.spans[spans_key]
        gold = scored_only(char_spans(gold_group), eg.reference, spans_key)
        found = scored_only(char_spans(eg.predicted.spans.get(spans_key, [])), eg.reference,
                            spans_key)
        for span in gold | found:
            score = per_type[span[2]]
            hit = span in gold and span in found
            for target in (overall, score):
                target.tp += hit
                target.fp += span in found and not hit
                target.fn += span in gold and not hit
        starts = np.asarray([s.start for s in gold_group], dtype=np.int64)
        ends = np.asarray([s.end for s in gold_group], dtype=np.int64)
        for span, is_nested in zip(gold_group, nested_mask(starts, ends)):
            hit = (span.start_char, span.end_char, span.label_) in found
            target = nested if is_nested else flat
            target.tp += int(hit)
            target.fn += int(not hit)
    has_gold = overall.tp + overall.fn + overall.fp > 0
    return {
        f"{attr}_p": overall.precision if has_gold else None,
        f"{attr}_r": overall.recall if has_gold else None,
        f"{attr}_f": overall.fscore if has_gold else None,
        f"{attr}_per_type": {label: s.to_dict() for label, s in sorted(per_type.items())}
        if has_gold else None,
        f"{attr}_nested_r": nested.recall if nested.tp + nested.fn else None,
        f"{attr}_non_nested_r": flat.recall if flat.tp + flat.fn else None,
    }


@registry.scorers("spacy-nested-mrc.nested_scorer.v1")
def make_nested_scorer() -> Callable[..., Dict[str, Any]]:
    """RETURNS (Callable): the scorer of ``nested_mrc_ner``."""
    return score_nested
