"""Unit tests of the span arithmetic in spacy_nested_mrc.spans, on hand-worked cases."""

import itertools

import numpy as np
import pytest
import spacy
import torch
from helpers.documents import document
from spacy.tokens import Doc

from spacy_nested_mrc.models.mrc.rows import sentence_starts
from spacy_nested_mrc.spans import (
    align_wordpieces,
    consistent_spans,
    enumerate_spans,
    flat_projection,
    inside_and_crossing,
    iou,
    nested_mask,
    owned_by,
    plan_context_windows,
    plan_windows,
    within_sentences,
)


def arr(*values):
    return np.asarray(values, dtype=np.int64)


# iou


def test_iou_hand_worked():
    # A = [0, 4); B = [2, 6) [4, 8) [0, 4) [1, 2)
    result = iou(arr(0), arr(4), arr(2, 4, 0, 1), arr(6, 8, 4, 2))
    assert result.shape == (1, 4)
    # [0,4) & [2,6): 2 shared tokens of 6 in the union
    np.testing.assert_allclose(result[0], [2 / 6, 0.0, 1.0, 1 / 4])


def test_iou_matrix_is_symmetric_and_bounded():
    starts = arr(0, 1, 3, 5, 5)
    ends = arr(2, 4, 6, 6, 9)
    matrix = iou(starts, ends, starts, ends)
    assert matrix.shape == (5, 5)
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(np.diag(matrix), 1.0)
    assert (matrix >= 0).all() and (matrix <= 1).all()
    # [1,4) and [3,6) share one token, union 5
    assert matrix[1, 2] == pytest.approx(1 / 5)


def test_iou_empty_sets():
    assert iou(arr(), arr(), arr(0), arr(1)).shape == (0, 1)
    assert iou(arr(0), arr(1), arr(), arr()).shape == (1, 0)


def test_iou_accepts_torch_tensors():
    result = iou(torch.tensor([0]), torch.tensor([4]), torch.tensor([2, 4]), torch.tensor([6, 8]))
    np.testing.assert_allclose(np.asarray(result, dtype=np.float64)[0], [1 / 3, 0.0], rtol=1e-6)


# flat_projection


def test_flat_projection_prefers_score_then_length_then_left():
    #              0       1       2       3
    starts = arr(0, 0, 3, 2)
    ends = arr(2, 1, 5, 4)
    scores = np.asarray([0.9, 0.95, 0.6, 0.6])
    # 1 (best score) wins over 0, which overlaps it; 3 and 2 tie on score and length,
    # the leftmost (3, at token 2) wins and blocks 2.
    assert flat_projection(starts, ends, scores).tolist() == [1, 3]


def test_flat_projection_tie_on_score_takes_longest():
    chosen = flat_projection(arr(0, 0), arr(1, 3), np.asarray([0.5, 0.5]))
    assert chosen.tolist() == [1]


def test_flat_projection_returns_document_order_and_no_overlap():
    starts = arr(6, 0, 3, 1)
    ends = arr(8, 2, 5, 4)
    scores = np.asarray([0.99, 0.98, 0.97, 0.5])
    chosen = flat_projection(starts, ends, scores)
    assert chosen.tolist() == [1, 2, 0]
    taken = np.zeros(8, dtype=int)
    for i in chosen:
        taken[starts[i] : ends[i]] += 1
    assert taken.max() == 1


def test_flat_projection_empty():
    chosen = flat_projection(arr(), arr(), np.zeros(0))
    assert chosen.shape == (0,)
    assert chosen.dtype == np.int64


# nested_mask


def _consistent_all_pairs(starts, ends, scores, allow_crossing, one_label_per_span):
    """The greedy choice of ``consistent_spans`` with every candidate compared against every
    span chosen before it: the reference, quadratic in the spans."""
    keep = np.ones(len(starts), dtype=bool)
    chosen = []
    for i in np.lexsort((starts, -(ends - starts), -scores)):
        s, e = starts[i], ends[i]
        same = any(starts[j] == s and ends[j] == e for j in chosen)
        crossing = any(
            starts[j] < s < ends[j] < e or s < starts[j] < e < ends[j] for j in chosen
        )
        if (one_label_per_span and same) or (not allow_crossing and crossing):
            keep[i] = False
        else:
            chosen.append(i)
    return keep


def test_consistent_spans_hand_worked():
    # [0,3) 0.9 wins; [2,5) crosses it; [1,3) nests in it; [1,3) again repeats a boundary
    starts, ends = arr(0, 2, 1, 1, 5), arr(3, 5, 3, 3, 6)
    scores = np.asarray([0.9, 0.8, 0.7, 0.6, 0.5])
    keep = consistent_spans(starts, ends, scores, allow_crossing=False, one_label_per_span=True)
    assert keep.tolist() == [True, False, True, False, True]
    keep = consistent_spans(starts, ends, scores, allow_crossing=True, one_label_per_span=True)
    assert keep.tolist() == [True, True, True, False, True]
    keep = consistent_spans(starts, ends, scores, allow_crossing=False, one_label_per_span=False)
    assert keep.tolist() == [True, False, True, True, True]


@pytest.mark.parametrize("allow_crossing,one_label_per_span",
                         [(False, True), (False, False), (True, True)])
def test_consistent_spans_equals_the_all_pairs_reference(allow_crossing, one_label_per_span):
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 300))
        starts = rng.integers(0, 60, n)
        ends = starts + rng.integers(1, 12, n)
        scores = rng.choice([0.3, 0.5, 0.7, 0.9], n)  # ties: the order's other keys decide
        expected = _consistent_all_pairs(starts, ends, scores, allow_crossing, one_label_per_span)
        keep = consistent_spans(starts, ends, scores, allow_crossing=allow_crossing,
                                one_label_per_span=one_label_per_span)
        assert keep.tolist() == expected.tolist()


def test_consistent_spans_of_one_chain_of_overlaps_form_a_nested_annotation():
    """200,000 spans chained into one overlap group (every span of up to 4 tokens of a
    50,000-token doc; the pass it replaces compared each span with every span chosen
    before it, which took minutes on a fifth of this): what is kept nests."""
    n_tokens = 50_000
    starts = np.repeat(np.arange(n_tokens), 4)
    ends = np.minimum(starts + np.tile(np.arange(1, 5), n_tokens), n_tokens)
    scores = np.random.default_rng(0).uniform(0.0, 1.0, len(starts))
    keep = consistent_spans(starts, ends, scores, allow_crossing=False, one_label_per_span=True)
    kept = np.flatnonzero(keep)
    assert 0 < len(kept) < len(starts)
    # what is kept is a nested annotation: no two kept spans cross
    order = np.lexsort((-ends[kept], starts[kept]))
    stack = []
    for s, e in zip(starts[kept][order], ends[kept][order]):
        while stack and stack[-1] <= s:
            stack.pop()
        assert not stack or e <= stack[-1]
        stack.append(e)


def test_nested_mask_hand_worked():
    # [0,3) holds [1,3); the same span twice (two labels) is not nesting; crossing spans
    # [7,9) and [8,10) are not nested either.
    starts = arr(0, 1, 5, 5, 7, 8)
    ends = arr(3, 3, 6, 6, 9, 10)
    assert nested_mask(starts, ends).tolist() == [True, True, False, False, False, False]


def test_nested_mask_same_start_or_same_end_counts():
    assert nested_mask(arr(0, 0), arr(1, 4)).tolist() == [True, True]
    assert nested_mask(arr(2, 0), arr(4, 4)).tolist() == [True, True]


def test_nested_mask_empty():
    assert nested_mask(arr(), arr()).shape == (0,)


# align_wordpieces


def test_align_wordpieces_hand_worked():
    # token 0 -> 2 pieces, token 1 -> none (e.g. whitespace), token 2 -> 2, token 3 -> 1,
    # token 4 -> none at the end
    alignment = align_wordpieces([11, 12, 13, 14, 15], [0, 0, 2, 2, 3], 5)
    assert alignment.ids.tolist() == [11, 12, 13, 14, 15]
    assert alignment.first.tolist() == [0, -1, 2, 4, -1]
    assert alignment.last.tolist() == [1, -1, 3, 4, -1]
    assert alignment.counts.tolist() == [2, 0, 2, 1, 0]


def test_align_wordpieces_skips_special_pieces():
    alignment = align_wordpieces([101, 7, 8, 102], [None, 0, 1, None], 2)
    assert alignment.first.tolist() == [1, 2]
    assert alignment.last.tolist() == [1, 2]
    assert alignment.counts.tolist() == [1, 1]


def test_align_wordpieces_empty_doc():
    alignment = align_wordpieces([], [], 0)
    assert alignment.ids.shape == (0,)
    assert alignment.counts.shape == (0,)


# plan_windows and owned_by


def as_tuples(windows):
    return [(w.start, w.end, w.core_start, w.core_end) for w in windows]


def test_plan_windows_hand_worked():
    # 10 one-piece tokens, room 4, overlap 1: [0,4) [3,7) [6,10), cores cut the overlaps
    windows = plan_windows(np.ones(10, dtype=np.int64), room=4, overlap=1)
    assert as_tuples(windows) == [(0, 4, 0, 3), (3, 7, 3, 6), (6, 10, 6, 10)]


def test_plan_windows_short_doc_is_one_window():
    assert as_tuples(plan_windows(arr(2, 1, 3), room=6, overlap=2)) == [(0, 3, 0, 3)]
    # tokens without wordpieces take no room
    assert as_tuples(plan_windows(arr(0, 0, 0), room=1, overlap=0)) == [(0, 3, 0, 3)]


def test_plan_windows_empty_doc():
    assert plan_windows(arr(), room=4, overlap=1) == []


def test_plan_windows_token_longer_than_room():
    with pytest.raises(ValueError, match="NME010") as err:
        plan_windows(arr(1, 5, 1), room=4, overlap=1)
    assert "Token 1" in str(err.value)


def check_windows(counts, room, overlap):
    n = len(counts)
    windows = plan_windows(counts, room, overlap)
    assert windows[0].start == 0 and windows[-1].end == n
    # cores partition the doc, in order
    assert windows[0].core_start == 0 and windows[-1].core_end == n
    for prev, nxt in zip(windows, windows[1:]):
        assert prev.core_end == nxt.core_start
        # no gap, at most `overlap` shared tokens, progress
        assert prev.start < nxt.start <= prev.end
        assert prev.end - nxt.start <= max(overlap, prev.end - prev.start - 1)
    for w in windows:
        # a core may be empty when the overlap is as long as the windows
        assert w.start <= w.core_start <= w.core_end <= w.end
        # the window fits the room
        assert counts[w.start : w.end].sum() <= room
        # and is as long as it may be
        if w.end < n:
            assert counts[w.start : w.end + 1].sum() > room
    return windows


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("room,overlap", [(5, 0), (5, 2), (12, 3), (3, 8)])
def test_plan_windows_properties(seed, room, overlap):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, size=int(rng.integers(1, 40))).astype(np.int64)
    counts = np.minimum(counts, room)
    check_windows(counts, room, overlap)


def test_plan_windows_overlap_tokens_shared():
    windows = check_windows(np.ones(30, dtype=np.int64), room=8, overlap=3)
    for prev, nxt in zip(windows, windows[1:]):
        assert prev.end - nxt.start == 3
    assert all(w.core_start < w.core_end for w in windows)


@pytest.mark.parametrize(
    "counts,room,overlap",
    [
        (np.ones(13, dtype=np.int64), 4, 1),
        (np.ones(17, dtype=np.int64), 7, 3),
        (np.asarray([1, 2, 1, 3, 1, 1, 2, 1, 1, 1, 3, 2, 1], dtype=np.int64), 9, 2),
    ],
)
def test_owned_by_assigns_every_span_to_exactly_one_window(counts, room, overlap):
    windows = plan_windows(counts, room, overlap)
    assert len(windows) > 1
    n = len(counts)
    spans = np.asarray([(s, e) for s in range(n) for e in range(s + 1, n + 1)], dtype=np.int64)
    starts, ends = spans[:, 0], spans[:, 1]
    owners = np.stack([owned_by(starts, ends, w.core_start, w.core_end) for w in windows])
    assert (owners.sum(axis=0) == 1).all()
    # a span no longer than the overlap lies wholly in the window that owns it
    # (when windows hold more than `overlap` tokens, as here)
    short = (ends - starts) <= overlap
    for k, w in enumerate(windows):
        mine = owners[k] & short
        assert (starts[mine] >= w.start).all() and (ends[mine] <= w.end).all()


def test_owned_by_per_span_cores():
    starts, ends = arr(0, 2, 4), arr(2, 4, 6)
    # centres (twice): 1, 5, 9; cores given per span
    owned = owned_by(starts, ends, arr(0, 3, 4), arr(1, 3, 5))
    assert owned.tolist() == [True, False, True]


def test_owned_by_scalar_core():
    starts = arr(*range(6))
    ends = starts + 1
    assert owned_by(starts, ends, 2, 4).tolist() == [False, False, True, True, False, False]


def test_owned_by_every_split_point():
    # two cores [0, c) and [c, n): each span goes to exactly one side
    n = 7
    pairs = list(itertools.combinations(range(n + 1), 2))
    starts = arr(*[s for s, _ in pairs])
    ends = arr(*[e for _, e in pairs])
    for c in range(1, n):
        left = owned_by(starts, ends, 0, c)
        right = owned_by(starts, ends, c, n)
        assert (left ^ right).all()


def test_shorten_long_tokens_keeps_first_and_last_pieces():
    from spacy_nested_mrc.spans import shorten_long_tokens

    # token 0: 1 piece, token 1: 5 pieces, token 2: none, token 3: 2 pieces
    alignment = align_wordpieces([10, 20, 21, 22, 23, 24, 30, 31], [0, 1, 1, 1, 1, 1, 3, 3], 4)
    short, n_cut = shorten_long_tokens(alignment, 3)
    assert n_cut == 1
    assert short.ids.tolist() == [10, 20, 21, 24, 30, 31]
    assert short.first.tolist() == [0, 1, -1, 4]
    assert short.last.tolist() == [0, 3, -1, 5]
    same, none_cut = shorten_long_tokens(alignment, 5)
    assert none_cut == 0 and same is alignment


def test_inside_and_crossing_match_the_pairwise_definition():
    """Compared within overlap groups, the answer is the all-pairs one."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        starts = rng.integers(0, 15, size=rng.integers(0, 12))
        ends = starts + rng.integers(1, 7, size=len(starts))
        inside, crossing = inside_and_crossing(starts, ends)
        pairs = list(zip(starts.tolist(), ends.tolist()))
        for k, (s, e) in enumerate(pairs):
            assert inside[k] == any(a <= s and e <= b and (a, b) != (s, e) for a, b in pairs)
            assert crossing[k] == any(a < s < b < e or s < a < e < b for a, b in pairs)


# plan_context_windows: windows that read context around whole sentences


def check_partition(windows, counts, room):
    cum = np.concatenate([[0], np.cumsum(counts)])
    assert windows[0].core_start == 0 and windows[-1].core_end == len(counts)
    for a, b in zip(windows[:-1], windows[1:]):
        assert a.core_end == b.core_start
    for w in windows:
        assert w.start <= w.core_start < w.core_end <= w.end
        assert cum[w.end] - cum[w.start] <= room


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("context", [0, 1, 3, 8])
def test_context_windows_partition_any_doc(seed, context):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    counts = rng.integers(0, 4, size=n)
    room = int(rng.integers(max(4, counts.max()), 30))
    sentences = np.flatnonzero(rng.random(n) < 0.15) if seed % 2 else None
    windows = plan_context_windows(counts, sentences, room, context)
    check_partition(windows, counts, room)
    bounds = set() if sentences is None else {0, *sentences.tolist(), n}
    for w in windows:
        if w.strict:  # whole sentences, and the context is at most what was asked
            assert w.core_start in bounds and w.core_end in bounds
        cum = np.concatenate([[0], np.cumsum(counts)])
        limit = min(context, room // 4)
        assert cum[w.core_start] - cum[w.start] <= limit
        assert cum[w.end] - cum[w.core_end] <= limit


def test_context_windows_hand_worked():
    counts = np.array([2, 1, 1, 3, 1, 1, 1, 2, 1, 1, 1, 1])
    # room 12, context 2: cores of at most 8 wordpieces, whole sentences [0,4) [4,8) [8,12)
    windows = plan_context_windows(counts, np.array([0, 4, 8]), 12, 2)
    assert [(w.start, w.end, w.core_start, w.core_end, w.strict) for w in windows] == [
        (0, 6, 0, 4, True),
        (4, 10, 4, 8, True),
        (7, 12, 8, 12, True),
    ]
    # sentences that fit together share a core
    assert [(w.core_start, w.core_end) for w in plan_context_windows(counts, [0, 4, 8], 40, 2)] \
        == [(0, 12)]
    # no sentences: cut between any tokens, not strict
    windows = plan_context_windows(counts, None, 12, 2)
    assert [(w.core_start, w.core_end, w.strict) for w in windows] == [(0, 5, False),
                                                                      (5, 12, False)]


def test_sentence_longer_than_the_core_is_cut_and_not_strict():
    counts = np.ones(30, dtype=np.int64)
    windows = plan_context_windows(counts, np.array([0, 3, 25]), 12, 2)
    check_partition(windows, counts, 12)
    assert windows[0].strict and (windows[0].core_start, windows[0].core_end) == (0, 3)
    middle = [w for w in windows if 3 <= w.core_start < 25]
    assert len(middle) > 1 and not any(w.strict for w in middle)


# within_sentences: seed spans inside sentences, out of context-only text


def test_seeds_stay_inside_sentences_and_out_of_context_only_text():
    nlp = spacy.blank("en")
    doc, _ = document(nlp, [["a", "b", "c"], ["d", "e"], ["f", "g", "h"]])
    raw = Doc(nlp.vocab, words=["x", "y", "z"])
    spans = enumerate_spans([len(doc), len(raw)], [1, 2, 3])
    skip = np.zeros(len(doc), dtype=bool)
    skip[3:5] = True  # "d e" is context only
    starts = [sentence_starts(doc), sentence_starts(raw)]  # raw: None, read as one text
    keep = within_sentences([len(doc), len(raw)], starts, *spans, [skip, None])
    kept = {(int(d), int(s), int(e)) for d, s, e, k in zip(*spans, keep) if k}
    assert kept == {(0, 0, 1), (0, 1, 2), (0, 2, 3), (0, 0, 2), (0, 1, 3), (0, 0, 3),
                    (0, 5, 6), (0, 6, 7), (0, 7, 8), (0, 5, 7), (0, 6, 8), (0, 5, 8),
                    (1, 0, 1), (1, 1, 2), (1, 2, 3), (1, 0, 2), (1, 1, 3), (1, 0, 3)}
