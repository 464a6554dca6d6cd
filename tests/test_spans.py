"""Unit tests of the span arithmetic in spacy_nested_mrc.spans, on hand-worked cases."""


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
