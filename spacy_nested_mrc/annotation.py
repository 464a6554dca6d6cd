"""Which text of a gold doc is annotated.

A document may hold sentences given as context only: their text is read by the model, but they
carry no annotation, so nothing is learned from them and spans predicted there are not scored
(GENIA dev sentences inside their whole abstracts, whose other sentences belong to train).
The reader marks such text as spans of the group ``unannotated_key(spans_key)`` of the
reference doc; the component and the scorer read it back by character offsets, so it holds
whatever the tokenization of the predicted doc.
"""

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc, Span

from .errors import Errors


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


# Which labels a text annotates.
#
# Corpora annotate their own label sets: a sentence of a gene corpus says nothing about
# diseases, so an unannotated disease there must not be taught as "no entity". A record may
# say which labels it annotates ("labels": [...], or a reader setting for all its records):
# the reader marks its text with one span per annotated label in the group
# ``labeled_key(spans_key)``. Text without such spans annotates every label; text given as
# context only annotates none (``unannotated_key``).


def labeled_key(spans_key: str) -> str:
    """RETURNS (str): the span group marking, for text that annotates only some labels,
    one span per annotated label over that text."""
    return f"{spans_key}_labels"


def mark_labels(doc: Doc, spans_key: str, labels: Iterable[str]) -> None:
    """Mark the whole of ``doc`` as annotating ``labels`` only (one span per label in
    ``doc.spans[labeled_key(spans_key)]``); an empty doc is left as it is."""
    if len(doc):
        doc.spans[labeled_key(spans_key)] = [
            Span(doc, 0, len(doc), label=label) for label in sorted(set(labels))
        ]


def label_regions(reference: Doc, spans_key: str) -> Dict[str, np.ndarray]:
    """RETURNS (Dict[str, np.ndarray]): label -> [U, 2] the sorted character ranges
    [start, end) of the reference's text marked as annotating that label; empty when the
    whole doc annotates every label."""
    ranges: Dict[str, List[Tuple[int, int]]] = {}
    for span in reference.spans.get(labeled_key(spans_key), []):
        ranges.setdefault(span.label_, []).append((span.start_char, span.end_char))
    return {label: _merged(found) for label, found in ranges.items()}


def labeled_text(reference: Doc, spans_key: str) -> np.ndarray:
    """RETURNS (np.ndarray): [U, 2] the sorted, merged character ranges of the reference's
    text that annotates only some labels (the union of ``label_regions``)."""
    group = reference.spans.get(labeled_key(spans_key), [])
    return _merged([(span.start_char, span.end_char) for span in group])


def _merged(ranges: List[Tuple[int, int]]) -> np.ndarray:
    merged: List[List[int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return np.asarray(merged, dtype=np.int64).reshape(-1, 2)


def label_mask(
    reference: Doc, predicted: Doc, spans_key: str, labels: Sequence[str]
) -> Optional[np.ndarray]:
    """Which labels each token of ``predicted`` (the reference's text, tokenized in any way)
    is annotated for: all of them, except in text that the reference marks as annotating
    only some (``labeled_key``), where only those.

    labels (Sequence[str]): the pipe's labels, in label-id order.
    RETURNS (Optional[np.ndarray]): [N, K] bool, or None when every token is annotated for
        every label.
    RAISES (ValueError): NME220 when the reference names a label that is not in ``labels``.
    """
    by_label = label_regions(reference, spans_key)
    if not by_label:
        return None
    unknown = sorted(set(by_label) - set(labels))
    if unknown:
        raise ValueError(Errors.NME220.format(unknown=unknown, labels=list(labels)))
    chars = np.asarray([token.idx for token in predicted], dtype=np.int64)
    mask = np.repeat(~in_regions(chars, labeled_text(reference, spans_key))[:, None],
                     len(labels), axis=1)
    for k, label in enumerate(labels):
        if label in by_label:
            mask[:, k] |= in_regions(chars, by_label[label])
    return mask


def scored_only(spans: Iterable[Tuple[int, int, str]], reference: Doc, spans_key: str) -> set:
    """The character spans (start, end, label) that count when scoring against ``reference``:
    not starting in context-only text, and, in text that annotates only some labels, of one
    of those labels.

    RETURNS (set): the spans that are scored.
    """
    found = annotated_only(spans, unannotated_regions(reference, spans_key))
    by_label = label_regions(reference, spans_key)
    if not by_label or not found:
        return found
    found_list = sorted(found)
    starts = np.asarray([span[0] for span in found_list], dtype=np.int64)
    partial = in_regions(starts, labeled_text(reference, spans_key))
    kept = set()
    for span, start, limited in zip(found_list, starts, partial):
        regions = by_label.get(span[2])
        if not limited or (regions is not None and in_regions(np.asarray([start]), regions)[0]):
            kept.add(span)
    return kept
