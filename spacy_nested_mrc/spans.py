"""Span arithmetic shared by every model: wordpiece alignment, sentence starts, IoU, nested
and crossing spans, and the flat (non-overlapping) projection (windows: ``windows.py``).

All spans are token offsets ``(start, end)`` with ``end`` exclusive, as in spaCy.
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc


@dataclass
class WordpieceAlignment:
    """The wordpieces of one doc's tokens (no special tokens) and where each token lies.

    ids (np.ndarray): [W] wordpiece ids of the whole doc.
    first (np.ndarray): [N] index into ``ids`` of each token's first wordpiece, -1 if none.
    last (np.ndarray): [N] index into ``ids`` of each token's last wordpiece, -1 if none.
    """

    ids: np.ndarray
    first: np.ndarray
    last: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """RETURNS (np.ndarray): [N] number of wordpieces of each token."""
        return np.where(self.first >= 0, self.last - self.first + 1, 0)


def align_wordpieces(ids: Sequence[int], word_ids: Sequence, n_tokens: int) -> WordpieceAlignment:
    """Build the token -> wordpiece alignment from a fast tokenizer's ``word_ids()``.

    ids (Sequence[int]): [W] wordpiece ids, no special tokens.
    word_ids (Sequence[Optional[int]]): [W] the token each wordpiece belongs to.
    n_tokens (int): number of tokens of the doc.
    RETURNS (WordpieceAlignment): the alignment; tokens without wordpieces get -1.
    """
    wid = np.asarray([-1 if w is None else w for w in word_ids], dtype=np.int64)
    pos = np.arange(len(wid), dtype=np.int64)
    keep = wid >= 0
    first = np.full(n_tokens, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n_tokens, -1, dtype=np.int64)
    np.minimum.at(first, wid[keep], pos[keep])
    np.maximum.at(last, wid[keep], pos[keep])
    first[last < 0] = -1
    return WordpieceAlignment(np.asarray(ids, dtype=np.int64), first, last)


def shorten_long_tokens(alignment: WordpieceAlignment, max_pieces: int):
    """Cut tokens of more than ``max_pieces`` wordpieces down to their first
    ``max_pieces - 1`` wordpieces and their last one, so every token fits in a window.

    alignment (WordpieceAlignment): the doc's alignment.
    max_pieces (int): the most wordpieces a token may keep (>= 2).
    RETURNS (Tuple[WordpieceAlignment, int]): the new alignment and how many tokens were cut.
    """
    counts = alignment.counts
    n_long = int((counts > max_pieces).sum())
    if n_long == 0:
        return alignment, 0
    token_of = np.repeat(np.arange(len(counts)), counts)  # [W] token of each wordpiece
    rank = np.arange(len(token_of)) - np.repeat(np.where(counts > 0, alignment.first, 0), counts)
    keep = (rank < max_pieces - 1) | (rank == np.repeat(counts, counts) - 1)
    shortened = align_wordpieces(alignment.ids[keep], token_of[keep], len(counts))
    return shortened, n_long


def sentence_starts(doc: Doc) -> Optional[np.ndarray]:
    """RETURNS (Optional[np.ndarray]): the token indices where the doc's sentences start, or
    None for a doc without sentence boundaries."""
    if not doc.has_annotation("SENT_START"):
        return None
    return np.flatnonzero(doc.to_array("SENT_START") == 1)


def within_sentences(
    lengths: Sequence[int],
    starts_of_docs: Sequence[Optional[np.ndarray]],
    doc: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    unannotated: Optional[Sequence[Optional[np.ndarray]]] = None,
) -> np.ndarray:
    """Which spans lie inside one sentence of their doc (any span of a doc read as one text)
    and, with ``unannotated``, touch no token marked there.

    lengths (Sequence[int]): [D] tokens of each doc.
    starts_of_docs (Sequence[Optional[np.ndarray]]): per doc, where its sentences start (as
        ``sentences.reading_starts`` gives), or None.
    doc, start, end (np.ndarray): [S] the spans.
    unannotated (Optional[Sequence[Optional[np.ndarray]]]): per doc [N] bool or None.
    RETURNS (np.ndarray): [S] bool.
    """
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sentence = np.zeros(int(offsets[-1]), dtype=np.int64)
    skip = np.zeros(int(offsets[-1]) + 1, dtype=np.int64)  # cumulative unannotated tokens
    for k, starts in enumerate(starts_of_docs):
        if starts is not None:  # each doc's own sentence numbers: spans never cross docs
            first = np.zeros(int(lengths[k]), dtype=np.int64)
            first[starts] = 1
            sentence[offsets[k] : offsets[k + 1]] = np.cumsum(first)
        if unannotated is not None and unannotated[k] is not None:
            skip[offsets[k] + 1 : offsets[k + 1] + 1] = unannotated[k]
    skip = np.cumsum(skip)
    first, last = offsets[doc] + start, offsets[doc] + end - 1
    keep = sentence[first] == sentence[last]
    return keep & (skip[last + 1] - skip[first] == 0)


def iou(a_starts: np.ndarray, a_ends: np.ndarray, b_starts: np.ndarray, b_ends: np.ndarray):
    """Token-level intersection over union of every span in A with every span in B.

    a_starts, a_ends (array): [A]; b_starts, b_ends (array): [B]. Works on numpy arrays and
    torch tensors alike.
    RETURNS (array): [A, B] IoU in [0, 1].
    """
    right = np.minimum(a_ends[:, None], b_ends[None, :])
    left = np.maximum(a_starts[:, None], b_starts[None, :])
    inter = (right - left).clip(0)
    union = (a_ends - a_starts)[:, None] + (b_ends - b_starts)[None, :] - inter
    return inter / np.maximum(union, 1)


def overlap_groups(starts: np.ndarray, ends: np.ndarray) -> List[np.ndarray]:
    """Split spans into groups such that spans of different groups share no token, and no
    group can be split so (connected components of the "overlaps" relation).

    starts, ends (np.ndarray): [S] int, end exclusive.
    RETURNS (List[np.ndarray]): the groups left to right, each the ascending indices of its
        spans.
    """
    if len(starts) == 0:
        return []
    order = np.lexsort((ends, starts))
    reach = np.maximum.accumulate(ends[order])  # the furthest end so far, in start order
    breaks = np.flatnonzero(starts[order][1:] >= reach[:-1]) + 1
    return [np.sort(group) for group in np.split(order, breaks)]


def flat_projection(starts: np.ndarray, ends: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Choose non-overlapping spans: highest score first, then the longest, then leftmost.

    starts, ends, scores (np.ndarray): [S].
    RETURNS (np.ndarray): indices of the chosen spans, in document order.
    """
    order = np.lexsort((starts, -(ends - starts), -scores))
    taken = np.zeros(int(ends.max()) if len(ends) else 0, dtype=bool)
    chosen = []
    for i in order:
        if not taken[starts[i] : ends[i]].any():
            taken[starts[i] : ends[i]] = True
            chosen.append(i)
    chosen_arr = np.asarray(chosen, dtype=np.int64)
    return chosen_arr[np.argsort(starts[chosen_arr], kind="stable")]


def consistent_spans(
    starts: np.ndarray,
    ends: np.ndarray,
    scores: np.ndarray,
    *,
    allow_crossing: bool,
    one_label_per_span: bool,
) -> np.ndarray:
    """Choose spans that form a valid nested annotation, highest score first (then the
    longest, then the leftmost): a span is dropped if it crosses (partly overlaps, neither
    inside the other) a span already chosen, unless ``allow_crossing``, or has the
    boundaries of one already chosen, under ``one_label_per_span``.

    The chosen spans are indexed by position: for each end, the leftmost start of a chosen
    span ending there; for each start, the rightmost end of one starting there. A span
    [s, e) crosses a chosen one exactly when a chosen span ending inside (s, e) starts
    before s, or one starting inside (s, e) ends after e, so each span costs time in its own
    length, never in the number of spans chosen: linear in the spans of a doc of bounded
    span lengths, however many overlap one another.

    starts, ends, scores (np.ndarray): [S].
    RETURNS (np.ndarray): [S] bool, which spans are kept.
    """
    keep = np.ones(len(starts), dtype=bool)
    if (allow_crossing and not one_label_per_span) or len(starts) < 2:
        return keep
    size = int(ends.max()) + 1
    leftmost_start_by_end = np.full(size, size, dtype=np.int64)
    rightmost_end_by_start = np.full(size, -1, dtype=np.int64)
    chosen = set()
    order = np.lexsort((starts, -(ends - starts), -scores))
    for i in order.tolist():
        s, e = int(starts[i]), int(ends[i])
        if one_label_per_span and (s, e) in chosen:
            keep[i] = False
            continue
        if not allow_crossing and e - s > 1 and (
            leftmost_start_by_end[s + 1 : e].min() < s
            or rightmost_end_by_start[s + 1 : e].max() > e
        ):
            keep[i] = False
            continue
        chosen.add((s, e))
        leftmost_start_by_end[e] = min(leftmost_start_by_end[e], s)
        rightmost_end_by_start[s] = max(rightmost_end_by_start[s], e)
    return keep


def count_conflicts(starts: np.ndarray, ends: np.ndarray) -> Tuple[int, int]:
    """Count what :func:`consistent_spans` would refuse among gold spans (per overlap group,
    so memory stays linear in a doc's length).

    starts, ends (np.ndarray): [S] of spans (with their labels: a span listed twice has
        two labels).
    RETURNS (Tuple[int, int]): pairs of crossing spans, and spans that repeat the boundaries
        of an earlier one.
    """
    crossing = same = 0
    for group in overlap_groups(starts, ends):
        a_s, a_e = starts[group][:, None], ends[group][:, None]
        b_s, b_e = starts[group][None, :], ends[group][None, :]
        crossing += int(((a_s < b_s) & (b_s < a_e) & (a_e < b_e)).sum())
        same += len(group) - len({(int(x), int(y)) for x, y in zip(starts[group], ends[group])})
    return crossing, same


def inside_and_crossing(starts: np.ndarray, ends: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Which spans lie inside another span with other boundaries, and which partly overlap
    (cross) another; compared within overlap groups, so memory stays linear in a doc's
    length.

    starts, ends (np.ndarray): [S] int, end exclusive; a span listed twice (two labels) is
        answered for each.
    RETURNS (Tuple[np.ndarray, np.ndarray]): [S] bool each.
    """
    inside = np.zeros(len(starts), dtype=bool)
    crossing = np.zeros(len(starts), dtype=bool)
    for group in overlap_groups(starts, ends):
        s, e = starts[group], ends[group]
        within = (s[None, :] <= s[:, None]) & (e[:, None] <= e[None, :])  # [i, j]: i in j
        same = (s[:, None] == s[None, :]) & (e[:, None] == e[None, :])
        inside[group] = (within & ~same).any(axis=1)
        cross = (s[:, None] < s[None, :]) & (s[None, :] < e[:, None]) & (e[:, None] < e[None, :])
        crossing[group] = (cross | cross.T).any(axis=1)
    return inside, crossing


def nested_mask(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which spans contain, or lie inside, another span of the same set (any label).

    starts, ends (np.ndarray): [S].
    RETURNS (np.ndarray): [S] bool.
    """
    if len(starts) == 0:
        return np.zeros(0, dtype=bool)
    inside = (starts[:, None] <= starts[None, :]) & (ends[None, :] <= ends[:, None])
    same = (starts[:, None] == starts[None, :]) & (ends[:, None] == ends[None, :])
    related = (inside | inside.T) & ~same
    return related.any(axis=1)


def enumerate_spans(
    lengths: Sequence[int], widths: Sequence[int]
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every span whose width is one of ``widths``, in every doc, without a loop over spans.

    lengths (Sequence[int]): [D] tokens of each doc.
    widths (Sequence[int]): span widths in tokens, each >= 1 (repeats count once).
    RETURNS (Tuple[np.ndarray, np.ndarray, np.ndarray]): doc index, start and end of each span,
        [S] int64 each, ordered by doc, then start, then width; S <= len(widths) * sum(lengths).
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    sizes = np.unique(np.asarray(widths, dtype=np.int64))
    starts = np.arange(int(lengths.max(initial=0)), dtype=np.int64)
    # [D, N, W]: does the span of width W from token N fit in doc D
    fits = starts[None, :, None] + sizes[None, None, :] <= lengths[:, None, None]
    doc, start, size = np.nonzero(fits)
    return doc.astype(np.int64), start.astype(np.int64), start + sizes[size]


def ranks_in_groups(groups: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The rank of each item among the items of its group (e.g. the spans of its doc), in a
    given order of preference, without a loop over groups.

    groups (np.ndarray): [N] int, the group of each item.
    order (np.ndarray): [N] a permutation of the items, the most preferred first.
    RETURNS (np.ndarray): [N] int64, 0 for the first item of its group in ``order``, 1 for
        the next, and so on.
    """
    groups = np.asarray(groups)
    ordered = np.asarray(order, dtype=np.int64)
    ordered = ordered[np.argsort(groups[ordered], kind="stable")]
    grouped = groups[ordered]
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[ordered] = np.arange(len(groups)) - np.searchsorted(grouped, grouped, side="left")
    return ranks


def best_match(
    starts: np.ndarray,
    ends: np.ndarray,
    ref_starts: np.ndarray,
    ref_ends: np.ndarray,
    groups: Optional[np.ndarray] = None,
    ref_groups: Optional[np.ndarray] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """For each span, the reference span of largest IoU with it (the first on ties).

    starts, ends (np.ndarray): [S] the spans; ref_starts, ref_ends (np.ndarray): [R].
    groups, ref_groups (Optional[np.ndarray]): [S] and [R], e.g. doc indices: a span is only
        matched within its own group.
    RETURNS (Tuple[np.ndarray, np.ndarray]): index [S] int64 into the references (-1 where
        none overlaps) and the IoU [S] float64 (0 there).
    """
    overlap = np.asarray(iou(starts, ends, ref_starts, ref_ends), dtype=np.float64)
    if groups is not None and ref_groups is not None:
        overlap = np.where(
            np.asarray(groups)[:, None] == np.asarray(ref_groups)[None, :], overlap, 0.0
        )
    if overlap.shape[1] == 0:
        return np.full(len(overlap), -1, dtype=np.int64), np.zeros(len(overlap))
    index = overlap.argmax(axis=1)
    best = overlap[np.arange(len(overlap)), index]
    return np.where(best > 0, index, -1).astype(np.int64), best
