"""Unit tests of spacy_nested_mrc.windows: how a long doc is cut into windows (wordpieces and
tokens), and which window owns a span."""

import itertools

import numpy as np
import pytest
import spacy

from spacy_nested_mrc.windows import (
    fit_wordpieces,
    owned_by,
    plan_context_windows,
    plan_windows,
    sentence_by_sentence,
    sentences_of,
    strided,
)


def arr(*values):
    return np.asarray(values, dtype=np.int64)


# plan_windows and owned_by


def as_tuples(windows):
    return [(w.start, w.end, w.core_start, w.core_end) for w in windows]


def test_plan_windows_hand_worked():
    # 10 one-piece tokens, room 4, overlap 1: [0,4) [3,7) [6,10), cores cut the overlaps
    windows = plan_windows(np.ones(10, dtype=np.int64), room_wordpieces=4, overlap_tokens=1)
    assert as_tuples(windows) == [(0, 4, 0, 3), (3, 7, 3, 6), (6, 10, 6, 10)]


def test_plan_windows_short_doc_is_one_window():
    windows = plan_windows(arr(2, 1, 3), room_wordpieces=6, overlap_tokens=2)
    assert as_tuples(windows) == [(0, 3, 0, 3)]
    # tokens without wordpieces take no room
    windows = plan_windows(arr(0, 0, 0), room_wordpieces=1, overlap_tokens=0)
    assert as_tuples(windows) == [(0, 3, 0, 3)]


def test_plan_windows_empty_doc():
    assert plan_windows(arr(), room_wordpieces=4, overlap_tokens=1) == []


def test_plan_windows_token_longer_than_room():
    with pytest.raises(ValueError, match="NME010") as err:
        plan_windows(arr(1, 5, 1), room_wordpieces=4, overlap_tokens=1)
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
    windows = check_windows(np.ones(30, dtype=np.int64), 8, 3)
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


# sentence_by_sentence, strided, sentences_of: windows that follow sentences


def test_sentence_by_sentence_reads_each_sentence_alone():
    counts = np.ones(10, dtype=np.int64)
    windows = sentence_by_sentence(counts, arr(0, 3, 7), room_wordpieces=3, overlap_tokens=1)
    assert [(w.start, w.end) for w in windows] == [(0, 3), (3, 6), (5, 7), (7, 10)]
    # cores partition the doc; no window crosses a sentence
    assert [(w.core_start, w.core_end) for w in windows] == [(0, 3), (3, 5), (5, 7), (7, 10)]
    assert [(w.start, w.end) for w in sentence_by_sentence(counts, None, 6, 2)] == \
        [(w.start, w.end) for w in plan_windows(counts, 6, 2)]


def test_strided_token_windows_and_sentences_of():
    nlp = spacy.blank("en")
    doc = nlp("a b c d e f g")
    assert [(s.start, s.end) for s in strided(doc[0:7], window_tokens=3, stride_tokens=2)] == [
        (0, 3), (2, 5), (4, 7)]
    assert [(s.start, s.end) for s in strided(doc[1:3], 3, 2)] == [(1, 3)]
    assert [(s.start, s.end) for s in sentences_of(doc, arr(0, 4))] == [(0, 4), (4, 7)]
    assert [(s.start, s.end) for s in sentences_of(doc, None)] == [(0, 7)]
    assert sentences_of(nlp(""), None) == []


class CharTokenizer:
    """A tokenizer of one wordpiece per character, with [CLS] and [SEP]."""

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return 2

    def __call__(self, text, add_special_tokens=True, verbose=False):
        return {"input_ids": [0] * (len(text) + 2)}


def test_fit_wordpieces_halves_a_span_until_each_part_fits():
    doc = spacy.blank("en")("aaaa bbbb cccc dddd")
    oversize = []
    parts = fit_wordpieces(doc[0:4], CharTokenizer(), room_wordpieces=12, oversize=oversize)
    assert [(p.start, p.end) for p in parts] == [(0, 2), (2, 4)] and oversize == []
    assert fit_wordpieces(doc[0:1], CharTokenizer(), 5, oversize) == [doc[0:1]]
    assert oversize == [6]  # one token of 4 characters and 2 specials: kept whole, counted
