"""Which text of a gold doc is annotated.

A document may hold sentences given as context only: their text is read by the model, but they
carry no annotation, so nothing is learned from them and spans predicted there are not scored
(GENIA dev sentences inside their whole abstracts, whose other sentences belong to train).
The reader marks such text as spans of the group ``unannotated_key(spans_key)`` of the
reference doc; the component and the scorer read it back by character offsets, so it holds
whatever the tokenization of the predicted doc.
"""

from typing import Iterable, Optional, Tuple

import numpy as np
from spacy.tokens import Doc


def unannotated_key(spans_key: str) -> str:
    """RETURNS (str): the span group of the text of a doc that ``spans_key`` does not
    annotate (context only)."""
    return f"{spans_key}_unannotated"


def unannotated_regions(reference: Doc, spans_key: str) -> np.ndarray:
    """RETURNS (np.ndarray): [U, 2] the character ranges [start, end) of the reference's
    context-only text, sorted; none when the whole doc is annotated."""
    group = reference.spans.get(unannotated_key(spans_key), [])
    regions = sorted((span.start_char, span.end_char) for span in group)
    return np.asarray(regions, dtype=np.int64).reshape(-1, 2)


def in_regions(chars: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """Which character offsets lie inside one of the regions.

    chars (np.ndarray): [C] character offsets.
    regions (np.ndarray): [U, 2] sorted, non-overlapping ranges [start, end).
    RETURNS (np.ndarray): [C] bool.
    """
    chars = np.asarray(chars, dtype=np.int64)
    if len(regions) == 0:
        return np.zeros(len(chars), dtype=bool)
    k = np.searchsorted(regions[:, 0], chars, side="right") - 1
    return (k >= 0) & (chars < regions[np.maximum(k, 0), 1])


def unannotated_tokens(reference: Doc, predicted: Doc, spans_key: str) -> Optional[np.ndarray]:
    """The tokens of ``predicted`` (the reference's text, tokenized in any way) that start in
    context-only text of ``reference``.

    RETURNS (Optional[np.ndarray]): [N] bool over the predicted doc's tokens, or None when
        the reference has no context-only text.
    """
    regions = unannotated_regions(reference, spans_key)
    if len(regions) == 0:
        return None
    return in_regions(np.asarray([token.idx for token in predicted]), regions)


def annotated_only(
    spans: Iterable[Tuple[int, int, str]], regions: np.ndarray
) -> set:
    """RETURNS (set): the character spans (start, end, label) that do not start in one of
    the context-only ``regions``."""
    spans = list(spans)
    if len(regions) == 0 or not spans:
        return set(spans)
    inside = in_regions(np.asarray([span[0] for span in spans]), regions)
    return {span for span, skip in zip(spans, inside) if not skip}
