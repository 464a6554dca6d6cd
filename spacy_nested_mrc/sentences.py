"""The sentences a pipe reads a doc by.

Our models learn from sentences and read each sentence in windows of its own. A doc whose
sentence boundaries are set (a parser, ``senter`` or ``sentencizer`` ran, or the corpus gave
them) is read by those; a doc without them (``nlp(text)`` on a blank pipeline, ``annotate``
over raw abstracts) is read by the boundaries spaCy's rule-based ``Sentencizer`` finds (its
default sentence-final punctuation), found for reading only: the doc is left as it was unless
the component's ``write_sents`` asks. A doc without any sentence punctuation (a table dump, a
token list) is one sentence, cut into overlapping windows like any sentence too long for one.
"""

from typing import List, Optional, Sequence

import numpy as np
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc

from .spans import sentence_starts

# the default of ``split_sentences`` (the pipe's, and the span getters' of a shared
# transformer): find the sentences of a doc that has no boundaries
DEFAULT_SPLIT_SENTENCES = True

# stateless: ``predict`` reads the tokens' text only, so one splitter serves every pipe and
# thread
_SPLITTER = Sentencizer()


def found_starts(doc: Doc) -> np.ndarray:
    """Where the sentences of ``doc`` start by spaCy's rule-based ``Sentencizer``, whatever the
    doc's own annotation; the doc is not changed.

    RETURNS (np.ndarray): [K] ascending token indices, 0 first; empty for an empty doc.
    """
    guesses = _SPLITTER.predict([doc])[0]
    return np.flatnonzero(np.asarray(guesses, dtype=bool)).astype(np.int64)


def reading_starts(doc: Doc, split: bool) -> Optional[np.ndarray]:
    """Where the sentences a pipe reads start: the doc's own boundaries where it has them,
    else, with ``split``, those ``found_starts`` gives.

    doc (Doc): the doc.
    split (bool): find boundaries for a doc that has none.
    RETURNS (Optional[np.ndarray]): ascending token indices, or None to read the doc as one
        text (no boundaries and ``split`` off).
    """
    own = sentence_starts(doc)
    if own is not None or not split:
        return own
    return found_starts(doc)


def reading_starts_of(docs: Sequence[Doc], split: bool) -> List[Optional[np.ndarray]]:
    """``reading_starts`` of each doc."""
    return [reading_starts(doc, split) for doc in docs]


def write_starts(doc: Doc, starts: np.ndarray) -> None:
    """Set the sentence boundaries of a doc that has none: the tokens at ``starts`` begin a
    sentence and no other token does.

    doc (Doc): a doc without sentence boundaries (``doc.has_annotation("SENT_START")`` False).
    starts (np.ndarray): [K] token indices.
    """
    first = {0, *np.asarray(starts, dtype=np.int64).tolist()}
    for token in doc:
        token.is_sent_start = token.i in first
