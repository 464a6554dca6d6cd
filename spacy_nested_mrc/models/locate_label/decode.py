"""Decoding of the Locate-and-Label heads: capping the proposals of a doc, adjusting seed spans
by the regressed offsets, and choosing the entities among the labelled proposals with Soft-NMS
(the paper's Algorithm 1).

Pure functions, unit-tested on hand-worked cases.
"""

import heapq
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import torch

from ...spans import iou, overlap_groups, ranks_in_groups


def top_per_doc(docs: torch.Tensor, scores: torch.Tensor, limit: int) -> torch.Tensor:
    """The ``limit`` highest-scoring items of each doc (the earlier one on ties).

    docs (torch.Tensor): [K] long, the doc of each item.
    scores (torch.Tensor): [K] their scores.
    limit (int): the most items kept per doc, >= 1.
    RETURNS (torch.Tensor): [K'] long, the indices of the kept items in ascending order, on
        the device of ``docs``.
    """
    order = np.argsort(-scores.detach().float().cpu().numpy(), kind="stable")
    ranks = ranks_in_groups(docs.cpu().numpy(), order)
    return torch.as_tensor(np.flatnonzero(ranks < limit), device=docs.device)


def regress_spans(
    starts: torch.Tensor, ends: torch.Tensor, offsets: torch.Tensor, lengths: torch.Tensor
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Move spans by their (left, right) offsets, rounded to whole tokens and clipped to the doc.

    A span whose boundaries cross after the move (end <= start) keeps its seed boundaries.
    Rounding is half to even (``torch.round``).

    starts, ends (torch.Tensor): [S] long, the seed spans (end exclusive).
    offsets (torch.Tensor): [S, 2] the regressed offsets of the start and the end.
    lengths (torch.Tensor): [S] long, the length of each span's doc.
    RETURNS (Tuple[torch.Tensor, torch.Tensor]): the adjusted starts and ends, [S] long.
    """
    moved = torch.round(offsets.detach().float()).long()
    new_starts = torch.minimum((starts + moved[:, 0]).clamp(min=0), lengths)
    new_ends = torch.minimum((ends + moved[:, 1]).clamp(min=0), lengths)
    crossed = new_ends <= new_starts
    return torch.where(crossed, starts, new_starts), torch.where(crossed, ends, new_ends)


def soft_nms(
    starts: np.ndarray,
    ends: np.ndarray,
    scores: np.ndarray,
    *,
    decay: float,
    iou_threshold: float,
    score_threshold: float,
    docs: Optional[np.ndarray] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Soft-NMS as in Algorithm 1 of Shen et al. (2021).

    Repeatedly take the remaining proposal of highest score (the earlier one on ties) and
    multiply the score of every proposal still remaining whose IoU with it is >= k by the
    decay u; proposals are never removed on the way. At the end, those whose score is >= the
    threshold delta are kept. Labels play no part: proposals of any label decay each other.

    With k > 0 only overlapping proposals can decay each other, so the algorithm runs on each
    group of transitively overlapping proposals (``overlap_groups``) on its own, with the same
    final scores as one run over all: O(sum of squared group sizes) time instead of O(P^2),
    which keeps a long document's decoding linear in its length. A group of one proposal
    keeps its score. With ``docs``, the proposals of several docs are decoded in one call,
    each doc's as if alone (proposals of different docs never decay each other).

    starts, ends (np.ndarray): [P] the proposals (end exclusive).
    scores (np.ndarray): [P] their scores.
    decay (float): u, the factor applied to the score of an overlapping proposal.
    iou_threshold (float): k, the IoU from which a proposal decays.
    score_threshold (float): delta, the least final score of a kept proposal.
    docs (Optional[np.ndarray]): [P] int >= 0, the doc of each proposal; None: one doc.
    RETURNS (Tuple[np.ndarray, np.ndarray]): the indices of the kept proposals (groups left to
        right, docs in order, in the order taken within a group), and the final scores [P]
        float32 of all proposals.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    final = np.asarray(scores, dtype=np.float64).copy()
    docs = np.zeros(len(final), np.int64) if docs is None else np.asarray(docs, np.int64)
    if iou_threshold > 0:
        # each doc on its own stretch of positions, so no two docs' proposals overlap
        shift = docs * (int(ends.max(initial=0)) + 1)
        groups = overlap_groups(starts + shift, ends + shift)
    else:  # IoU 0 >= k: every proposal decays every other of its doc
        order = np.argsort(docs, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(docs[order])) + 1) if len(order) else []
    kept = []
    for rows in groups:
        if len(rows) == 1:  # nothing to decay it
            if final[rows[0]] >= score_threshold:
                kept.append(rows)
            continue
        taken = _soft_nms_group(starts, ends, final, rows, decay, iou_threshold)
        kept.append(taken[final[taken] >= score_threshold])
    kept_all = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    return kept_all, final.astype(np.float32)


def _soft_nms_group(
    starts: np.ndarray,
    ends: np.ndarray,
    final: np.ndarray,
    rows: np.ndarray,
    decay: float,
    iou_threshold: float,
) -> np.ndarray:
    """Soft-NMS over the G proposals ``rows`` of all P (starts, ends, final [P]), decaying
    their scores in ``final`` in place. RETURNS (np.ndarray): ``rows`` in the order taken [G].

    Memory is linear in G: the proposal to take next comes from a max-heap whose stale
    entries (scores decayed since they were pushed) are pushed again when they surface, and
    with k > 0 the IoU of the one taken is computed only against the proposals that can
    overlap it (those starting less than the group's longest span before its end, found by
    binary search in start order). Ties go to the earlier proposal in ``rows``, as an argmax
    over the remaining ones would.
    """
    order = np.argsort(starts[rows], kind="stable")  # group positions in start order
    by_start = starts[rows][order]
    longest = int((ends[rows] - starts[rows]).max())
    scores = final[rows]
    remaining = np.ones(len(rows), dtype=bool)
    taken: List[int] = []
    heap = [(-float(score), i) for i, score in enumerate(scores)]
    heapq.heapify(heap)
    while heap:
        stored, best = heapq.heappop(heap)
        if not remaining[best]:
            continue
        if -stored != scores[best]:  # decayed since pushed
            heapq.heappush(heap, (-float(scores[best]), best))
            continue
        taken.append(best)
        remaining[best] = False
        start, end = starts[rows[best]], ends[rows[best]]
        if iou_threshold > 0:  # only proposals that overlap it can reach the threshold
            low = np.searchsorted(by_start, start - longest, side="right")
            high = np.searchsorted(by_start, end, side="left")
            near = order[low:high]
        else:  # IoU 0 >= k: every remaining proposal decays
            near = np.arange(len(rows))
        near = near[remaining[near]]
        overlap = iou(np.asarray([start]), np.asarray([end]),
                      starts[rows[near]], ends[rows[near]])[0]
        near = near[overlap >= iou_threshold]
        scores[near] *= decay
    final[rows] = scores
    return rows[np.asarray(taken, dtype=np.int64)]


def unique_proposals(
    starts: np.ndarray,
    ends: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    docs: Optional[np.ndarray] = None,
) -> np.ndarray:
    """One proposal per distinct (start, end, label) of a doc: the one of highest score.

    Different seed spans often regress onto the same span; as predictions they are one entity.
    starts, ends, labels, scores (np.ndarray): [P].
    docs (Optional[np.ndarray]): [P] the doc of each proposal; None: one doc.
    RETURNS (np.ndarray): indices of the chosen proposals, ordered by (doc, start, end, label).
    """
    docs = np.zeros(len(starts), np.int64) if docs is None else np.asarray(docs)
    order = np.lexsort((-np.asarray(scores), labels, ends, starts, docs))
    keys = np.stack([docs[order], starts[order], ends[order], labels[order]], axis=1)
    first = np.ones(len(order), dtype=bool)
    first[1:] = (keys[1:] != keys[:-1]).any(axis=1)
    return order[first]


def decode_proposals(
    docs: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    n_docs: int,
    *,
    use_soft_nms: bool,
    decay: float,
    iou_threshold: float,
    score_threshold: float,
) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    """Labelled proposals of several docs -> per doc, the entities and their scores.

    Per doc: duplicates collapse to their best (``unique_proposals``), then Soft-NMS
    (``soft_nms``) with ``use_soft_nms``, else no suppression at all (scores unchanged: hard
    NMS would delete nested entities); either way spans scoring below ``score_threshold`` are
    dropped. All docs go through each step at once, each doc's proposals as if alone.

    docs, starts, ends, labels (np.ndarray): [P] int, the proposals (label ids from 0).
    scores (np.ndarray): [P] their classifier confidences.
    n_docs (int): number of docs.
    RETURNS (Tuple[List[np.ndarray], List[np.ndarray]]): per doc, spans [S, 3] int64 (start,
        end, label) sorted, and their scores [S] float32.
    """
    docs = np.asarray(docs, dtype=np.int64)
    starts, ends, labels = (np.asarray(x, dtype=np.int64) for x in (starts, ends, labels))
    scores = np.asarray(scores)
    rows = unique_proposals(starts, ends, labels, scores, docs)
    docs, starts, ends, labels = docs[rows], starts[rows], ends[rows], labels[rows]
    final = scores[rows].astype(np.float32)
    if use_soft_nms:
        kept, final = soft_nms(starts, ends, final, decay=decay, iou_threshold=iou_threshold,
                               score_threshold=score_threshold, docs=docs)
        kept = np.sort(kept)  # back to (doc, start, end, label) order
    else:
        kept = np.flatnonzero(final >= score_threshold)
    spans = np.stack([starts[kept], ends[kept], labels[kept]], axis=1)
    kept_scores = final[kept].astype(np.float32)
    bounds = np.searchsorted(docs[kept], np.arange(n_docs + 1))
    return ([spans[bounds[d] : bounds[d + 1]] for d in range(n_docs)],
            [kept_scores[bounds[d] : bounds[d + 1]] for d in range(n_docs)])


@dataclass(frozen=True)
class SoftNMSDecoder:
    """The decoder of ``spacy-nested-mrc.SoftNMSDecoder.v1``: the heads read which seeds
    are proposed (``filter_threshold``, ``max_proposals``); ``decode`` picks the entities
    among the classified proposals."""

    filter_threshold: float
    max_proposals: int
    use_soft_nms: bool
    nms_decay: float
    nms_iou: float
    nms_score: float

    def decode(
        self, doc: np.ndarray, start: np.ndarray, end: np.ndarray, label: np.ndarray,
        score: np.ndarray, n_docs: int,
    ) -> Tuple[List[np.ndarray], List[np.ndarray]]:
        """The entities of ``n_docs`` docs from their proposals (arrays [P]: doc, start,
        end, label, score), by Soft-NMS (``decode.decode_proposals``).
        RETURNS (Tuple[List[np.ndarray], List[np.ndarray]]): per doc, spans [E, 3] (start,
            end, label) and their scores [E]."""
        return decode_proposals(
            doc, start, end, label, score, n_docs, use_soft_nms=self.use_soft_nms,
            decay=self.nms_decay, iou_threshold=self.nms_iou, score_threshold=self.nms_score,
        )
