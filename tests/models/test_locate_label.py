"""Tests of the Locate-and-Label model (spacy-nested-mrc.LocateAndLabel.v2): its seed spans,
targets, losses and Soft-NMS on hand-worked cases, and the model in the ``nested_mrc_ner`` pipe
on a tiny random BERT (its own encoder, or a shared ``transformer`` component, also on documents
with context-only sentences)."""

import warnings
from dataclasses import replace
from importlib.metadata import entry_points

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import locate_label_blocks
from helpers.documents import DOCUMENT_RECORDS, write_jsonl
from helpers.locate_label import (
    ENCODER,
    TEXTS,
    encoder_of,
    model_config,
    shared_pipeline,
    shipped_pipeline,
    tok2vec_config,
)
from helpers.pipes import KEY, LABELS, PIPE, TRAIN, make_examples
from spacy.lang.en import English
from spacy.util import fix_random_seed, registry
from thinc.api import Adam, Config

from spacy_nested_mrc.annotation import unannotated_tokens
from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.encoder.hf import hf_transformers
from spacy_nested_mrc.models.locate_label.blocks import Seeds, configure_seed_spans
from spacy_nested_mrc.models.locate_label.decode import (
    decode_proposals,
    regress_spans,
    soft_nms,
    top_per_doc,
    unique_proposals,
)
from spacy_nested_mrc.models.locate_label.loss import (
    LocateLabelLoss,
    focal_loss,
    overlap_loss,
    regression_targets,
    soft_example_weights,
)
from spacy_nested_mrc.models.locate_label.model import NO_LIMIT, sample_seeds
from spacy_nested_mrc.spans import best_match, enumerate_spans, iou, overlap_groups
from spacy_nested_mrc.types import SpanBatch, contract_of

MAX_STEPS = 300


def arr(*values):
    return np.asarray(values, dtype=np.int64)


def span_keys(doc):
    return sorted((s.start, s.end, s.label_) for s in doc.spans[KEY])


def train_to_fit(nlp, examples, max_steps: int = MAX_STEPS):
    """Update until the examples are predicted perfectly; RETURNS the losses of the steps."""
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples)
    history = []
    for step in range(max_steps):
        history.append(nlp.update(examples, sgd=optimizer)[PIPE])
        if step % 5 == 4 and nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0:
            break
    return history


def blank_nlp(encoder: str, **blocks) -> English:
    """A pipe of the small Locate-and-Label, its settings changed by ``blocks`` (in blocks)."""
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": model_config(encoder, **blocks)})
    return nlp


@pytest.fixture(scope="module")
def trained(tiny_bert):
    """A pipe trained (two docs per pass) until it predicts its examples perfectly."""
    nlp = blank_nlp(tiny_bert, max_docs_per_pass=2)
    examples = make_examples(nlp, TRAIN)
    history = train_to_fit(nlp, examples)
    return nlp, examples, history


# seed spans and their gold entities


def test_enumerate_spans_hand_worked():
    doc, start, end = enumerate_spans([3, 0, 1], [2, 1, 2])
    rows = list(zip(doc.tolist(), start.tolist(), end.tolist()))
    # doc 0 by start then width; the empty doc has none; doc 2 only width 1
    assert rows == [(0, 0, 1), (0, 0, 2), (0, 1, 2), (0, 1, 3), (0, 2, 3), (2, 0, 1)]
    assert doc.dtype == start.dtype == end.dtype == np.int64


@pytest.mark.parametrize("lengths", [[0], [], [5, 17, 1], [40]])
def test_enumerate_spans_count_is_bounded(lengths):
    widths = [1, 2, 3, 5, 8]
    doc, start, end = enumerate_spans(lengths, widths)
    expected = sum(max(0, n - w + 1) for n in lengths for w in widths)
    assert len(doc) == expected <= len(widths) * sum(lengths)
    assert set((end - start).tolist()) <= set(widths)
    assert (end <= np.asarray(lengths, dtype=np.int64)[doc]).all() if len(doc) else True


def test_best_match_hand_worked():
    # spans [0,2) [1,4) [5,6) [0,2) (the last in doc 1); gold [1,3) [3,4) in doc 0, [0,1) in doc 1
    index, overlap = best_match(
        arr(0, 1, 5, 0), arr(2, 4, 6, 2), arr(1, 3, 0), arr(3, 4, 1), arr(0, 0, 0, 1), arr(0, 0, 1)
    )
    assert index.tolist() == [0, 0, -1, 2]
    # [0,2)&[1,3): 1/3; [1,4)&[1,3): 2/3 (beats [3,4): 1/3); none; [0,2)&[0,1) in doc 1: 1/2
    np.testing.assert_allclose(overlap, [1 / 3, 2 / 3, 0.0, 1 / 2])


def test_best_match_ties_and_no_references():
    # [0,2) matches [0,1) and [1,2) equally: the first wins
    index, overlap = best_match(arr(0), arr(2), arr(0, 1), arr(1, 2))
    assert index.tolist() == [0] and overlap.tolist() == [0.5]
    index, overlap = best_match(arr(0, 3), arr(2, 4), arr(), arr())
    assert index.tolist() == [-1, -1] and overlap.tolist() == [0.0, 0.0]


def settings(**changes) -> Seeds:
    """The seed sampler's settings (``SeedSpans.v1``) of these tests, with ``changes``."""
    values = dict(window_sizes=(1, 2, 3), filter_iou=0.6, soft_eta=1.0, use_soft_examples=True,
                  negative_ratio=0.0, hard_negative_ratio=0.0, seed=0)
    values.update(changes)
    return configure_seed_spans(**values)


def test_seed_gold_assignment_and_regression_targets():
    # one doc of 4 tokens with the entity [1,3), label 2; seeds of widths 1-3
    gold = np.asarray([[0, 1, 3, 2]])
    seeds = sample_seeds([4], gold, settings(), np.random.default_rng(0))
    table = {
        (s, e): (o, p, tuple(t), w)
        for s, e, o, p, t, w in zip(
            seeds.start.tolist(),
            seeds.end.tolist(),
            seeds.overlap.tolist(),
            seeds.positive.tolist(),
            seeds.targets.tolist(),
            seeds.weights.tolist(),
        )
    }
    assert len(table) == 4 + 3 + 2  # every seed: no downsampling
    # positives (IoU >= 0.6): the entity itself, and [0,3), [1,4) at 2/3
    assert {k for k, v in table.items() if v[1]} == {(1, 3), (0, 3), (1, 4)}
    # offsets (left, right) to the entity, then the entity
    assert table[(1, 3)][2] == (0.0, 0.0, 1.0, 3.0)
    assert table[(0, 3)][2] == (1.0, 0.0, 1.0, 3.0)
    assert table[(1, 4)][2] == (0.0, -1.0, 1.0, 3.0)
    assert table[(2, 3)][2] == (0.0, 0.0, 0.0, 0.0)  # negatives have none
    # soft-example weights: IoU for positives, 1 - IoU for negatives
    assert table[(0, 3)][3] == pytest.approx(2 / 3)
    assert table[(2, 3)][3] == pytest.approx(1 - 1 / 2)
    assert table[(3, 4)][3] == pytest.approx(1.0)


def test_regression_targets_hand_worked():
    targets = regression_targets(arr(0, 4), arr(2, 6), arr(1, 3), arr(3, 8))
    assert targets.tolist() == [[1.0, 1.0], [-1.0, 2.0]]


def test_negatives_are_downsampled_per_doc_and_deterministic():
    lengths = [30, 30, 12]
    # doc 0 has two entities, doc 1 one, doc 2 none
    gold = np.asarray([[0, 2, 5, 0], [0, 10, 11, 1], [1, 4, 6, 0]])
    config = settings(negative_ratio=2.0, window_sizes=(1, 2, 3, 4), filter_iou=0.7)
    draw = sample_seeds(lengths, gold, config, np.random.default_rng([0, 3]))
    again = sample_seeds(lengths, gold, config, np.random.default_rng([0, 3]))
    other = sample_seeds(lengths, gold, config, np.random.default_rng([1, 3]))
    every = sample_seeds(
        lengths, gold, settings(window_sizes=(1, 2, 3, 4), filter_iou=0.7), np.random.default_rng(0)
    )
    for d in range(3):
        n_pos = int(every.positive[every.doc == d].sum())
        chosen = draw.doc == d
        # every positive is kept, and ratio x positives (at least ratio) negatives
        assert draw.positive[chosen].sum() == n_pos
        assert (~draw.positive[chosen]).sum() == 2 * max(1, n_pos)
    assert np.array_equal(draw.start, again.start) and np.array_equal(draw.end, again.end)
    assert not (np.array_equal(draw.start, other.start) and np.array_equal(draw.end, other.end))
    # order: by doc, then start, then width
    order = np.lexsort((draw.end - draw.start, draw.start, draw.doc))
    assert np.array_equal(order, np.arange(len(order)))


def test_hard_negatives_are_the_filters_highest_then_random_ones():
    lengths = [30, 12]
    gold = np.asarray([[0, 2, 5, 0], [0, 10, 11, 1], [1, 4, 6, 0]])
    every = sample_seeds(lengths, gold, settings(window_sizes=(1, 2, 3, 4), filter_iou=0.7),
                         np.random.default_rng(0))
    probs = np.random.default_rng(7).random(len(every.doc)).astype(np.float32)
    config = settings(window_sizes=(1, 2, 3, 4), filter_iou=0.7, negative_ratio=1.0,
                      hard_negative_ratio=2.0)
    draw = sample_seeds(lengths, gold, config, np.random.default_rng(3), probs)
    chosen = {(d, s, e) for d, s, e in zip(draw.doc.tolist(), draw.start.tolist(),
                                            draw.end.tolist())}
    for d in range(2):
        mine = every.doc == d
        n_pos = int(every.positive[mine].sum())
        negatives = np.flatnonzero(mine & ~every.positive)
        hardest = negatives[np.argsort(-probs[negatives])][: 2 * n_pos]
        # the two hardest per positive are all in, and one random negative per positive more
        assert {(d, int(every.start[i]), int(every.end[i])) for i in hardest} <= chosen
        in_doc = draw.doc == d
        assert draw.positive[in_doc].sum() == n_pos
        assert (~draw.positive[in_doc]).sum() == 3 * n_pos
    # the random part still follows the generator; the hard part does not
    other = sample_seeds(lengths, gold, config, np.random.default_rng(4), probs)
    assert not np.array_equal(draw.start, other.start) or not np.array_equal(draw.end, other.end)


def test_hard_negatives_train_a_step_and_need_the_filter(tiny_bert):
    nlp = blank_nlp(tiny_bert, seeds={"hard_negative_ratio": 1.0})
    examples = make_examples(nlp, TRAIN)
    nlp.initialize(lambda: examples)
    losses = nlp.update(examples, sgd=nlp.create_optimizer())
    assert losses[PIPE] > 0
    config = Config().from_str(ARCH_CONFIG)
    config["model"]["seeds"]["hard_negative_ratio"] = 1.0
    config["model"]["heads"]["use_filter"] = False
    with pytest.raises(ValueError, match="NME022"):
        registry.resolve(config)


def test_seeds_without_gold_are_all_negative():
    seeds = sample_seeds([3], np.zeros((0, 4), np.int64), settings(), np.random.default_rng(0))
    assert len(seeds.doc) == 6 and not seeds.positive.any()
    assert (seeds.targets == 0).all() and (seeds.weights == 1).all()


# losses


def test_soft_example_weights_hand_worked():
    overlap = np.asarray([1.0, 0.8, 0.5, 0.0])
    np.testing.assert_allclose(soft_example_weights(overlap, 0.7, 1.0), [1.0, 0.8, 0.5, 1.0])
    np.testing.assert_allclose(soft_example_weights(overlap, 0.7, 2.0), [1.0, 0.64, 0.25, 1.0])
    np.testing.assert_allclose(soft_example_weights(overlap, 0.7, 0.0), [1.0] * 4)
    # alpha = 1: only exact matches are positive, the 0.8 match is a negative of weight 0.2
    np.testing.assert_allclose(soft_example_weights(overlap, 1.0, 1.0), [1.0, 0.2, 0.5, 1.0])


def test_focal_loss_hand_worked():
    logits = torch.tensor([0.0, 0.0, 2.0])
    targets = torch.tensor([1.0, 0.0, 1.0])
    ones = torch.ones(3)
    p = torch.sigmoid(torch.tensor(2.0)).item()
    # p = 0.5: 0.5^2 * log 2 for either target; p = sigmoid(2) with target 1: (1-p)^2 (-log p)
    expected = [0.25 * np.log(2), 0.25 * np.log(2), (1 - p) ** 2 * -np.log(p)]
    assert focal_loss(logits, targets, ones, 2.0).item() == pytest.approx(np.mean(expected))
    # gamma 0 is binary cross-entropy; weights scale each example
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets).item()
    assert focal_loss(logits, targets, ones, 0.0).item() == pytest.approx(bce, rel=1e-6)
    weights = torch.tensor([1.0, 0.0, 0.5])
    weighted = (expected[0] + 0.5 * expected[2]) / 3
    assert focal_loss(logits, targets, weights, 2.0).item() == pytest.approx(weighted)


def test_losses_of_nothing_are_zero_with_gradient():
    logits = torch.zeros(0, requires_grad=True)
    loss = focal_loss(logits, torch.zeros(0), torch.zeros(0), 2.0)
    loss.backward()
    assert loss.item() == 0.0 and logits.grad is not None
    offsets = torch.zeros(0, 2, requires_grad=True)
    empty = torch.zeros(0)
    assert LocateLabelLoss().regression(offsets, offsets, empty, empty, empty, empty).item() == 0


def test_overlap_loss_hand_worked():
    starts = torch.tensor([1.0, 0.0, 0.0, 0.5])
    ends = torch.tensor([3.0, 2.0, 1.0, 3.5])
    gold_starts = torch.tensor([1, 1, 2, 1])
    gold_ends = torch.tensor([3, 3, 4, 3])
    loss = overlap_loss(starts, ends, gold_starts, gold_ends)
    # exact: 0; [0,2) vs [1,3): 1 - 1/3; disjoint [0,1) vs [2,4): gap 1 of cover 4, 1 + 1/4;
    # [0.5,3.5) vs [1,3): 1 - 2/3
    np.testing.assert_allclose(loss.numpy(), [0.0, 2 / 3, 1.25, 1 / 3], rtol=1e-6)


def test_overlap_loss_pulls_disjoint_spans_together():
    starts = torch.tensor([0.0], requires_grad=True)
    ends = torch.tensor([1.0], requires_grad=True)
    overlap_loss(starts, ends, torch.tensor([2]), torch.tensor([4])).sum().backward()
    # though they do not overlap, the end is pulled towards the entity: d(loss)/d(end) =
    # -1 / d_c = -1/4 (and d(loss)/d(start) = -d_o / d_c^2 = 1/16)
    assert ends.grad.item() == pytest.approx(-0.25)
    assert starts.grad.item() == pytest.approx(1 / 16)


def test_regression_loss_is_smooth_l1_plus_overlap():
    offsets = torch.tensor([[0.5, -2.0]])
    targets = torch.tensor([[0.0, 0.0]])
    # seed [1,3) moved to [1.5, 1.0): crossed; gold [1,3)
    loss = LocateLabelLoss().regression(
        offsets, targets, torch.tensor([1]), torch.tensor([3]), torch.tensor([1]), torch.tensor([3])
    )
    smooth = 0.5 * 0.5**2 + (2.0 - 0.5)
    d_o, d_c = 1.0 - 1.5, 3.0 - 1.0
    assert loss.item() == pytest.approx(smooth + 1 - d_o / d_c)


def test_joint_loss_weights_each_part():
    loss = LocateLabelLoss(weight_filter=2.0, weight_regression=0.5, weight_classifier=3.0)
    parts = torch.tensor(1.0), torch.tensor(2.0), torch.tensor(4.0)
    assert loss(*parts).item() == pytest.approx(2.0 + 1.0 + 12.0)


def test_classifier_loss_is_weighted_cross_entropy():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    classes = torch.tensor([0, 2])
    per = torch.nn.functional.cross_entropy(logits, classes, reduction="none")
    loss = LocateLabelLoss().classifier(logits, classes, torch.tensor([1.0, 0.5]))
    assert loss.item() == pytest.approx(((per[0] + 0.5 * per[1]) / 2).item())


# decoding


def test_regress_spans_rounds_clips_and_keeps_crossed_seeds():
    starts, ends = regress_spans(
        torch.tensor([0, 2, 1, 3]),
        torch.tensor([2, 3, 2, 4]),
        torch.tensor([[-0.6, 0.4], [0.2, 5.0], [1.0, -1.0], [-1.4, 1.6]]),
        torch.tensor([5, 4, 5, 6]),
    )
    # [-1, 2) clipped to [0, 2); [2, 8) clipped to the doc's 4 tokens; [2, 1) crossed: seed
    assert starts.tolist() == [0, 2, 1, 2]
    assert ends.tolist() == [2, 4, 2, 6]


def test_soft_nms_hand_worked():
    # A [0,4) .9, B [0,3) .8, C [0,2) .7, D [5,6) .3
    starts, ends, scores = arr(0, 0, 0, 5), arr(4, 3, 2, 6), np.asarray([0.9, 0.8, 0.7, 0.3])
    kept, final = soft_nms(starts, ends, scores, decay=0.5, iou_threshold=0.6, score_threshold=0.3)
    # take A: B (IoU 3/4) decays to .4, C (IoU 1/2) does not; take C (.7): B (IoU 2/3) decays
    # again to .2; take D; take B, then drop it (.2 < .3)
    np.testing.assert_allclose(final, [0.9, 0.2, 0.7, 0.3], rtol=1e-6)
    assert kept.tolist() == [0, 2, 3]
    assert final.dtype == np.float32


def test_soft_nms_threshold_is_inclusive_and_labels_do_not_matter():
    # IoU exactly k decays; a score exactly delta is kept
    kept, final = soft_nms(
        arr(0, 0),
        arr(2, 1),
        np.asarray([1.0, 0.8]),
        decay=0.5,
        iou_threshold=0.5,
        score_threshold=0.4,
    )
    np.testing.assert_allclose(final, [1.0, 0.4])
    assert kept.tolist() == [0, 1]
    # ties: the earlier proposal is taken first and decays the later one
    kept, final = soft_nms(
        arr(0, 0),
        arr(2, 2),
        np.asarray([0.6, 0.6]),
        decay=0.5,
        iou_threshold=0.9,
        score_threshold=0.0,
    )
    np.testing.assert_allclose(final, [0.6, 0.3])
    assert kept.tolist() == [0, 1]


def test_soft_nms_of_nothing():
    kept, final = soft_nms(
        arr(), arr(), np.zeros(0), decay=0.9, iou_threshold=0.6, score_threshold=0.4
    )
    assert kept.shape == (0,) and final.shape == (0,)


def test_overlap_groups_split_where_no_span_crosses():
    # [0,2) and [1,4) overlap, [4,5) only touches [1,4); [6,9) contains [7,8)
    groups = overlap_groups(arr(7, 0, 4, 1, 6), arr(8, 2, 5, 4, 9))
    assert [g.tolist() for g in groups] == [[1, 3], [2], [0, 4]]
    assert overlap_groups(arr(), arr()) == []


def _soft_nms_all_pairs(starts, ends, scores, decay, iou_threshold):
    """The final scores of Algorithm 1 run over all proposals at once (the reference)."""
    final = np.asarray(scores, dtype=np.float64).copy()
    remaining = np.ones(len(final), dtype=bool)
    for _ in range(len(final)):
        best = int(np.argmax(np.where(remaining, final, -np.inf)))
        remaining[best] = False
        overlap = iou(starts[best : best + 1], ends[best : best + 1], starts, ends)[0]
        final[remaining & (overlap >= iou_threshold)] *= decay
    return final


@pytest.mark.parametrize("iou_threshold", [0.0, 0.3, 0.6, 1.0])
def test_soft_nms_by_groups_equals_one_run_over_all(iou_threshold):
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(1, 60))
        starts = rng.integers(0, 80, n)
        ends = starts + rng.integers(1, 8, n)
        scores = rng.choice([0.3, 0.5, 0.7, 0.9], n)  # ties on purpose
        kept, final = soft_nms(
            starts, ends, scores, decay=0.5, iou_threshold=iou_threshold, score_threshold=0.4
        )
        expected = _soft_nms_all_pairs(starts, ends, scores, 0.5, iou_threshold)
        np.testing.assert_allclose(final, expected, rtol=1e-6)
        assert sorted(kept.tolist()) == np.flatnonzero(expected >= 0.4).tolist()


@pytest.mark.parametrize("iou_threshold", [0.0, 0.2, 0.6])
def test_soft_nms_equals_the_dense_reference_on_long_and_crowded_proposals(iou_threshold):
    rng = np.random.default_rng(1)
    for _ in range(10):
        n = int(rng.integers(100, 400))
        starts = rng.integers(0, 120, n)
        ends = starts + rng.integers(1, 25, n)  # long spans reach far back
        scores = rng.choice([0.2, 0.45, 0.5, 0.8, 0.95], n)
        kept, final = soft_nms(starts, ends, scores, decay=0.9, iou_threshold=iou_threshold,
                               score_threshold=0.45)
        expected = _soft_nms_all_pairs(starts, ends, scores, 0.9, iou_threshold)
        np.testing.assert_allclose(final, expected, rtol=1e-6)
        assert sorted(kept.tolist()) == np.flatnonzero(expected >= 0.45).tolist()


def test_soft_nms_memory_is_linear_in_one_huge_group():
    """30,000 proposals chained into one overlap group: a dense IoU matrix would take
    30,000^2 * 8 bytes = 7.2 GB; the heap and the windowed IoU stay within megabytes."""
    import tracemalloc

    n = 30_000
    starts = np.repeat(np.arange(n // 6), 6)
    ends = starts + np.tile(np.arange(1, 7), n // 6)
    scores = np.random.default_rng(0).uniform(0.1, 1.0, n)
    tracemalloc.start()
    kept, final = soft_nms(starts, ends, scores, decay=0.9, iou_threshold=0.6,
                           score_threshold=0.5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(final) == n and 0 < len(kept) < n
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_top_per_doc_keeps_the_best_of_each_doc():
    """The ``limit`` highest scores of each doc, the earlier item on ties, in item order."""
    docs = torch.tensor([1, 0, 0, 1, 0, 1, 0])
    scores = torch.tensor([0.2, 0.5, 0.9, 0.8, 0.5, 0.6, 0.1])
    assert top_per_doc(docs, scores, 2).tolist() == [1, 2, 3, 5]
    assert top_per_doc(docs, scores, 1).tolist() == [2, 3]
    assert top_per_doc(docs, scores, 7).tolist() == list(range(7))
    assert top_per_doc(docs[:0], scores[:0], 1).tolist() == []


def test_unique_proposals_keeps_the_best_of_duplicates():
    starts, ends, labels = arr(1, 0, 1, 1), arr(3, 2, 3, 3), arr(0, 0, 0, 1)
    chosen = unique_proposals(starts, ends, labels, np.asarray([0.5, 0.6, 0.9, 0.7]))
    assert chosen.tolist() == [1, 2, 3]


@pytest.mark.parametrize("use_soft_nms", [True, False])
def test_decode_proposals_per_doc(use_soft_nms):
    # doc 0: [0,2) twice (one entity), [0,3) nested, [4,5) too weak; doc 1: nothing; doc 2: one
    docs = arr(0, 2, 0, 0, 0)
    starts, ends, labels = arr(0, 1, 0, 0, 4), arr(2, 2, 2, 3, 5), arr(1, 0, 1, 2, 0)
    scores = np.asarray([0.8, 0.95, 0.9, 0.7, 0.3], dtype=np.float32)
    spans, final = decode_proposals(
        docs,
        starts,
        ends,
        labels,
        scores,
        3,
        use_soft_nms=use_soft_nms,
        decay=0.9,
        iou_threshold=0.6,
        score_threshold=0.45,
    )
    assert [s.tolist() for s in spans] == [[[0, 2, 1], [0, 3, 2]], [], [[1, 2, 0]]]
    # with Soft-NMS, [0,3) (IoU 2/3 with the better [0,2)) decays by 0.9
    nested = 0.7 * 0.9 if use_soft_nms else 0.7
    np.testing.assert_allclose(final[0], [0.9, nested], rtol=1e-6)
    np.testing.assert_allclose(final[2], [0.95])
    assert all(s.dtype == np.int64 and s.shape[1] == 3 for s in spans)


@pytest.mark.parametrize("use_soft_nms,iou_threshold", [(True, 0.6), (True, 0.0), (False, 0.6)])
def test_decode_proposals_of_many_docs_as_of_each_alone(use_soft_nms, iou_threshold):
    """All docs decoded in one call give each doc what decoding it alone gives: the same
    spans, the same scores to the last bit (duplicates, ties and overlaps on purpose)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, n_docs = int(rng.integers(0, 120)), int(rng.integers(1, 6))
        docs = rng.integers(0, n_docs, n)
        starts = rng.integers(0, 15, n)
        ends, labels = starts + rng.integers(1, 5, n), rng.integers(0, 3, n)
        scores = rng.choice([0.3, 0.5, 0.6, 0.9], n).astype(np.float32)
        settings = dict(use_soft_nms=use_soft_nms, decay=0.7, iou_threshold=iou_threshold,
                        score_threshold=0.45)
        spans, final = decode_proposals(docs, starts, ends, labels, scores, n_docs, **settings)
        for d in range(n_docs):
            mine = docs == d
            (alone,), (alone_scores,) = decode_proposals(
                np.zeros(int(mine.sum()), np.int64), starts[mine], ends[mine], labels[mine],
                scores[mine], 1, **settings)
            assert spans[d].tolist() == alone.tolist()
            assert np.array_equal(final[d], alone_scores)
            assert spans[d].dtype == np.int64 and final[d].dtype == np.float32


# the architecture


def test_entry_point_declared():
    found = [ep for ep in entry_points(group="spacy_architectures")
             if ep.name == "spacy-nested-mrc.LocateAndLabel.v2"]
    assert len(found) == 1
    assert found[0].load().__name__ == "build_locate_label_model"


# the architecture alone (its own transformer, never loaded) as a config string
ARCH_CONFIG = Config({"model": locate_label_blocks(
    tok2vec={**tok2vec_config("not/downloaded"), "get_spans": {
        "@span_getters": "spacy-transformers.strided_spans.v1", "window": 128, "stride": 96}},
    seeds={"window_sizes": [1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15]}, max_docs_per_pass=8)}).to_str()


def test_architecture_resolves_from_config_string():
    """Built alone from a config string, without loading the encoder."""
    model = registry.resolve(Config().from_str(ARCH_CONFIG))["model"]
    assert model.name == "locate_label"
    assert model.attrs["docs_per_pass"] == 8
    assert model.attrs["labels"] == []
    assert model.attrs["settings"].seeds.window_sizes == (1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15)
    assert callable(contract_of(model).set_labels)


def test_whole_batch_in_one_pass_by_default():
    config = Config().from_str(ARCH_CONFIG)
    del config["model"]["max_docs_per_pass"]
    assert registry.resolve(config)["model"].attrs["docs_per_pass"] == NO_LIMIT


@pytest.mark.parametrize(
    "block,setting,value,code",
    [
        ("seeds", "window_sizes", [], "NME021"),
        ("seeds", "window_sizes", [1, 0], "NME021"),
        ("seeds", "window_sizes", [2, 2], "NME021"),
        ("seeds", "filter_iou", 1.5, "NME003"),
        ("seeds", "classifier_iou", -0.1, "NME003"),
        ("decoder", "nms_decay", 2.0, "NME003"),
        ("decoder", "nms_iou", -1, "NME003"),
        ("decoder", "nms_score", 1.1, "NME003"),
        ("decoder", "filter_threshold", 3, "NME003"),
        ("heads", "dropout", 1.2, "NME003"),
        ("seeds", "negative_ratio", -1.0, "NME003"),
        ("seeds", "hard_negative_ratio", -1.0, "NME003"),
        ("loss", "focal_gamma", -2.0, "NME003"),
        ("seeds", "soft_eta", -0.5, "NME003"),
        ("loss", "weight_regression", -1, "NME003"),
        ("heads", "hidden_width", 0, "NME003"),
        ("heads", "max_span_tokens", 0, "NME003"),
        (None, "max_docs_per_pass", -1, "NME003"),
        ("decoder", "max_proposals", -1, "NME003"),
    ],
)
def test_invalid_settings_fail_at_construction(block, setting, value, code):
    """Each setting's check, of the architecture or of its block (``block``)."""
    config = Config().from_str(ARCH_CONFIG)
    (config["model"] if block is None else config["model"][block])[setting] = value
    with pytest.raises(ValueError, match=code) as error:
        registry.resolve(config)
    assert setting in str(error.value)


def test_listener_needs_the_whole_batch_in_one_pass():
    config = Config().from_str(ARCH_CONFIG)
    config["model"]["tok2vec"] = {
        "@architectures": "spacy-transformers.TransformerListener.v1",
        "pooling": {"@layers": "reduce_mean.v1"},
    }
    with pytest.raises(ValueError, match="NME020"):
        registry.resolve(config)
    config["model"]["max_docs_per_pass"] = 0
    assert registry.resolve(config)["model"].attrs["docs_per_pass"] == NO_LIMIT


def test_predict_before_initialize_raises(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    with pytest.raises(ValueError, match="NME001"):
        nlp("IL-2 gene")


# training through the pipe


def test_overfit_gives_perfect_scores(trained):
    nlp, examples, history = trained
    scores = nlp.evaluate(examples)
    assert scores[f"spans_{KEY}_f"] == 1.0
    assert scores[f"spans_{KEY}_nested_r"] == 1.0
    assert history[-1] < history[0]
    assert nlp.get_pipe(PIPE).labels == LABELS


def test_predictions_match_gold_with_scores(trained):
    nlp, _, _ = trained
    threshold = nlp.get_pipe(PIPE).cfg["threshold"]
    for (_, gold), doc in zip(TRAIN, nlp.pipe([t for t, _ in TRAIN])):
        assert span_keys(doc) == sorted(gold)
        scores = doc.spans[KEY].attrs["scores"]
        assert scores.dtype == np.float32 and scores.shape == (len(gold),)
        assert ((scores >= threshold) & (scores <= 1.0)).all()


def test_proposal_counts_are_kept(trained):
    nlp, _, _ = trained
    model = nlp.get_pipe(PIPE).model
    docs = [nlp.make_doc(t) for t in ("", "IL-2", "human T cells bind")]
    nlp.get_pipe(PIPE).predict(docs)
    seeds, proposals = model.attrs["last_seed_counts"], model.attrs["last_proposal_counts"]
    # widths 1-10: 0, 1 and 4 + 3 + 2 + 1 seed spans
    assert seeds == [0, 1, 10]
    assert all(0 <= p <= s for p, s in zip(proposals, seeds))
    assert proposals[2] >= 2  # at least the two entities


def test_prediction_does_not_depend_on_batching(trained):
    """Neither the docs per pass nor the token vectors pooled at once change predictions."""
    nlp, _, _ = trained
    model = nlp.get_pipe(PIPE).model
    heads = model.get_ref("heads").attrs["torch_module"]
    saved = model.attrs["docs_per_pass"], heads.settings
    results = []
    try:
        for per_pass, span_tokens in ((1, 65536), (3, 7), (NO_LIMIT, 1)):
            model.attrs["docs_per_pass"] = per_pass
            heads.settings = replace(saved[1], max_span_tokens=span_tokens)
            results.append(list(nlp.pipe(TEXTS, batch_size=len(TEXTS))))
    finally:
        model.attrs["docs_per_pass"], heads.settings = saved
    for docs in results[1:]:
        for a, b in zip(results[0], docs):
            assert span_keys(a) == span_keys(b)
            np.testing.assert_allclose(
                a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"], atol=1e-5
            )


def test_empty_and_one_token_docs(trained):
    nlp, _, _ = trained
    assert span_keys(nlp("")) == []
    assert span_keys(nlp("IL-2")) == [(0, 1, "protein")]
    docs = list(nlp.pipe(["", "IL-2", "", "kinase"]))
    assert [span_keys(d) for d in docs] == [[], [(0, 1, "protein")], [], []]
    # training on a batch of only empty docs leaves the loss at 0
    examples = make_examples(nlp, [("", [])])
    assert nlp.update(examples)[PIPE] == 0.0


def assert_same_predictions(nlp_a, nlp_b):
    for a, b in zip(nlp_a.pipe(TEXTS), nlp_b.pipe(TEXTS)):
        assert span_keys(a) == span_keys(b)
        np.testing.assert_allclose(
            a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"], rtol=1e-5, atol=1e-6
        )


def test_to_disk_and_load(trained, tmp_path):
    nlp, examples, _ = trained
    nlp.to_disk(tmp_path / "pipeline")
    # the encoder travels with the pipeline: its folder is not needed
    override = {"components": {PIPE: {"model": {"tok2vec": {"name": str(tmp_path / "gone")}}}}}
    loaded = spacy.load(tmp_path / "pipeline", config=override)
    pipe = loaded.get_pipe(PIPE)
    assert pipe.labels == LABELS
    assert pipe.model.attrs["labels"] == list(LABELS)
    assert pipe.model.attrs["docs_per_pass"] == 2
    assert_same_predictions(nlp, loaded)
    assert loaded.evaluate(examples)[f"spans_{KEY}_f"] == 1.0


def test_to_bytes_and_from_bytes(trained):
    nlp, _, _ = trained
    fresh = English.from_config(nlp.config)
    fresh.from_bytes(nlp.to_bytes())
    assert fresh.get_pipe(PIPE).labels == LABELS
    assert_same_predictions(nlp, fresh)


def test_decoding_settings_can_be_changed_at_load(trained, tmp_path):
    """Decoding settings are read from the config, not from the saved model."""
    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipeline")
    override = {"components": {PIPE: {"model": {"decoder": {"nms_score": 1.0}}}}}
    loaded = spacy.load(tmp_path / "pipeline", config=override)
    assert loaded.get_pipe(PIPE).model.attrs["settings"].decoder.nms_score == 1.0
    assert all(span_keys(doc) == [] for doc in loaded.pipe(TEXTS))


def load_with(nlp, path, **settings):
    """The pipeline saved and loaded with model settings given in the config."""
    nlp.to_disk(path)
    return spacy.load(path, config={"components": {PIPE: {"model": {"decoder": settings}}}})


def test_max_proposals_caps_each_doc_with_one_warning(trained, tmp_path):
    """With every seed span past the filter, each doc keeps ``max_proposals`` of them; one
    NMW120 per call counts the dropped ones (here over several passes of two docs)."""
    nlp, _, _ = trained
    cap = 3
    loaded = load_with(nlp, tmp_path / "pipeline", filter_threshold=0.0, max_proposals=cap)
    model = loaded.get_pipe(PIPE).model
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        output = loaded.get_pipe(PIPE).predict([loaded.make_doc(t) for t in TEXTS])
    seeds = np.asarray(model.attrs["last_seed_counts"])
    proposals = np.asarray(model.attrs["last_proposal_counts"])
    np.testing.assert_array_equal(proposals, np.minimum(seeds, cap))
    assert all(len(spans) <= cap for spans in output.spans)
    messages = [str(w.message) for w in record if "NMW120" in str(w.message)]
    assert len(messages) == 1
    dropped, docs = int((seeds - proposals).sum()), int((seeds > cap).sum())
    assert dropped > 0
    assert messages[0].startswith(f"[NMW120] {dropped} span proposals dropped in {docs} doc(s)")
    assert f"'max_proposals' ({cap})" in messages[0]


def test_without_a_cap_every_proposal_is_decoded(trained, tmp_path):
    """``max_proposals = 0``: the predictions of the default (a cap these docs never reach),
    and with every seed span past the filter, every one is a proposal, without a warning."""
    nlp, _, _ = trained
    uncapped = load_with(nlp, tmp_path / "uncapped", max_proposals=0)
    assert_same_predictions(nlp, uncapped)
    loose = load_with(nlp, tmp_path / "loose", filter_threshold=0.0, max_proposals=0)
    model = loose.get_pipe(PIPE).model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loose.get_pipe(PIPE).predict([loose.make_doc(t) for t in TEXTS])
    assert model.attrs["last_proposal_counts"] == model.attrs["last_seed_counts"]


def test_entity_longer_than_every_window_is_found_by_regression(tiny_bert):
    """No seed span covers the 4-token entity; regression stretches a 3-token seed onto it."""
    data = [
        ("the il-2 gene promoter binding site", [(1, 5, "DNA")]),
        ("human t cells", [(0, 3, "cell_type")]),
    ]
    nlp = blank_nlp(tiny_bert, seeds={"window_sizes": [1, 2, 3]})
    examples = make_examples(nlp, data)
    train_to_fit(nlp, examples)
    doc = nlp(data[0][0])
    assert span_keys(doc) == [(1, 5, "DNA")]
    assert max(nlp.get_pipe(PIPE).model.attrs["settings"].seeds.window_sizes) < 4


@pytest.mark.parametrize(
    "block,switch", [("heads", "use_filter"), ("heads", "use_regressor"),
                     ("seeds", "use_soft_examples"), ("decoder", "use_soft_nms")]
)
def test_ablations_train_and_predict(tiny_bert, block, switch):
    nlp = blank_nlp(tiny_bert, **{block: {switch: False}})
    examples = make_examples(nlp, TRAIN)
    history = train_to_fit(nlp, examples, max_steps=10)
    assert history[-1] < history[0]
    for doc in nlp.pipe(TEXTS):
        spans = doc.spans[KEY]
        assert all(0 <= s.start < s.end <= len(doc) for s in spans)
    if switch == "use_filter":  # every seed span is a proposal
        model = nlp.get_pipe(PIPE).model
        assert model.attrs["last_proposal_counts"] == model.attrs["last_seed_counts"]


@pytest.mark.parametrize("classifier_gold", [False, True])
def test_classifier_gold_adds_the_gold_entities_to_its_examples(tiny_bert, classifier_gold):
    """With one-token seeds and no regressor, no seed span equals the 3-token entity: only
    ``classifier_gold`` gives the classifier that exact span to learn from."""
    data = [("human t cells", [(0, 3, "cell_type")])]
    nlp = blank_nlp(tiny_bert, seeds={"window_sizes": [1], "classifier_gold": classifier_gold},
                    heads={"use_regressor": False})
    examples = make_examples(nlp, data)
    nlp.initialize(lambda: examples)
    heads = nlp.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"]
    seen = []
    original = heads._classifier_targets

    def spy(doc, starts, ends, gold):
        seen.extend(zip(doc.tolist(), starts.tolist(), ends.tolist()))
        return original(doc, starts, ends, gold)

    heads._classifier_targets = spy
    nlp.update(examples, sgd=Adam(0.001))
    assert ((0, 0, 3) in seen) == classifier_gold
    assert {(d, s, e) for d, s, e in seen if e - s == 1} == {(0, 0, 1), (0, 1, 2), (0, 2, 3)}


SMALL_HEADS = ({"components.nested_mrc_ner.model.heads.hidden_width": 32},
               {"components.nested_mrc_ner.model.heads.dropout": 0.0})


@pytest.mark.parametrize("shared", [False, True])
def test_shipped_config_trains_and_predicts(tiny_bert, tmp_path, shared):
    """The shipped CPU config on the tiny encoder, its encoder the pipe's own or (as the GPU
    config has it) a shared transformer component with a listener: the model learns and its
    gradient reaches the encoder."""
    if shared:
        nlp = shared_pipeline(tiny_bert, tmp_path, *SMALL_HEADS)
        assert nlp.pipe_names == ["transformer", PIPE]
    else:
        nlp = shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path, *SMALL_HEADS)
        assert nlp.pipe_names == [PIPE]
    examples = make_examples(nlp, TRAIN)
    fix_random_seed(0)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.001)  # the config's warm-up is for real data
    (transformer,) = hf_transformers(encoder_of(nlp))
    before = [p.detach().clone() for p in transformer.parameters()]
    losses = []
    for step in range(MAX_STEPS):
        losses.append(nlp.update(examples, sgd=optimizer)[PIPE])
        if step % 5 == 4 and nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0:
            break
    assert losses[-1] < losses[0]
    assert nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0
    assert any(not torch.equal(a, b) for a, b in zip(before, transformer.parameters()))
    docs = list(nlp.pipe(TEXTS))
    assert span_keys(docs[0]) == sorted(TRAIN[0][1])


def test_replacing_the_listener_keeps_the_predictions(tiny_bert, tmp_path):
    """A trained pipeline with a shared transformer component, its listener replaced by the
    encoder itself (``nlp.replace_listeners``, the shipped CPU config's form) and the
    component removed: the same spans with the same scores."""
    nlp = shared_pipeline(tiny_bert, tmp_path, *SMALL_HEADS, {
        f"components.{PIPE}.threshold": 0.0,
        f"components.{PIPE}.model.decoder.filter_threshold": 0.0,
        f"components.{PIPE}.model.decoder.nms_score": 0.0})
    examples = make_examples(nlp, TRAIN)
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    shared = list(nlp.pipe(TEXTS))
    nlp.replace_listeners("transformer", PIPE, ["model.tok2vec"])
    nlp.remove_pipe("transformer")
    own = list(nlp.pipe(TEXTS))
    assert sum(len(doc.spans[KEY]) for doc in own) > 0
    for a, b in zip(shared, own):
        assert span_keys(a) == span_keys(b)
        np.testing.assert_allclose(a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"],
                                   atol=1e-6)


def test_locate_label_with_context_trains_on_documents(tiny_bert, tmp_path):
    """The shipped Locate-and-Label CPU config with context windows and own-window token
    vectors: trains on a document with a context-only sentence, and predicts no span that
    crosses a sentence."""
    context_only = {**DOCUMENT_RECORDS[1], "entities": []}
    corpus = write_jsonl(tmp_path / "documents.jsonl",
                         [DOCUMENT_RECORDS[0], context_only, DOCUMENT_RECORDS[2]])
    nlp = shipped_pipeline(
        "locate_label_cpu.cfg", tiny_bert, tmp_path,
        {"paths.train": str(corpus), "corpora.train.group_by": "doc",
         "components.nested_mrc_ner.model.heads.hidden_width": 32,
         f"{ENCODER}.token_vectors": "own_window",
         f"{ENCODER}.get_spans": {
             "@span_getters": "spacy-nested-mrc.context_windows.v2", "window_tokens": 8,
             "context_tokens": 2}},
    )
    examples = list(create_jsonl_reader(corpus, group_by="doc")(nlp))
    assert unannotated_tokens(examples[0].reference, examples[0].predicted, "nested").any()
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples)
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert np.isfinite(losses["nested_mrc_ner"]) and losses["nested_mrc_ner"] > 0
    pipe = nlp.get_pipe("nested_mrc_ner")
    pipe.cfg["threshold"] = 0.0
    predicted = nlp(examples[0].predicted.copy())
    bounds = {s.start for s in predicted.sents}
    for span in predicted.spans["nested"]:
        assert not any(span.start < b < span.end for b in bounds)


def test_gpu_config_resolves(tiny_bert, tmp_path):
    nlp = shipped_pipeline("locate_label_gpu.cfg", tiny_bert, tmp_path)
    assert nlp.pipe_names == ["transformer", PIPE]
    model = nlp.get_pipe(PIPE).model
    assert model.attrs["docs_per_pass"] == NO_LIMIT
    # bf16 for the heads and the transformer it listens to (fp16 where a GPU lacks bf16)
    assert model.get_ref("heads").attrs["settings"].precision == "bf16"
    transformer = nlp.get_pipe("transformer").model
    assert any(getattr(node.attrs.get("settings"), "precision", None) == "bf16"
               for node in transformer.walk())


@pytest.mark.parametrize(
    "parts", [{}, {"heads": {"use_filter": False}}, {"heads": {"use_regressor": False}},
              {"seeds": {"classifier_gold": False}}]
)
def test_get_loss_gradient_is_the_heads_own(tiny_bert, parts, check_backprop):
    """The component's get_loss gives d(loss)/d(scores); backprop with it gives the heads'
    parameters the gradient that autograd gives through the heads and their loss in one."""
    nlp = blank_nlp(tiny_bert, **parts)
    examples = make_examples(nlp, TRAIN)
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe(PIPE)
    batch = SpanBatch([eg.predicted for eg in examples], pipe._gold(examples))
    output, backprop = pipe.model.begin_update(batch)
    loss = check_backprop(pipe.model, output, backprop)
    assert loss > 0 and np.isfinite(loss)
    assert pipe.get_loss(examples, output)[0] == loss


def test_span_max_pool_by_width_equals_the_gathered_one():
    """Prediction pools many spans by sliding maxima per width; the result is the gathered
    pooling's, exactly."""
    from spacy_nested_mrc.models.locate_label.torch_module import _max_pooled, _token_rows
    from spacy_nested_mrc.spans import enumerate_spans

    torch.manual_seed(0)
    tokens = [torch.randn(9, 6), torch.randn(4, 6), torch.randn(0, 6), torch.randn(2, 6)]
    table = _token_rows(tokens)
    doc, start, end = (torch.as_tensor(a) for a in enumerate_spans([9, 4, 0, 2], range(1, 6)))
    assert len(start) >= len(table.rows)  # the sliding path
    found = _max_pooled(table, doc, start, end)
    for k in range(len(start)):
        expected = tokens[int(doc[k])][int(start[k]) : int(end[k])].amax(dim=0)
        assert torch.equal(found[k], expected)
    few = _max_pooled(table, doc[:3], start[:3], end[:3])  # the gathering path
    assert torch.equal(few, found[:3])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_token_rows_gather_as_indexing_the_padded_docs_does(dtype):
    """The heads read token vectors by (doc, position) from one table of the docs' rows,
    without padding to the longest doc; values and gradients are those of indexing the docs
    padded to [D, N + 2, H] (a zero row before each doc, zeros after its last token), for
    one position per span and for a [spans, width] block of positions."""
    from spacy_nested_mrc.models.locate_label.torch_module import _token_rows

    torch.manual_seed(0)
    lengths = [5, 0, 2]
    base = [torch.randn(n, 4).to(dtype) for n in lengths]
    doc = torch.tensor([2, 0, 0, 1, 2, 0])
    position = torch.tensor([3, 0, 3, 1, 1, 6])
    blocks = torch.tensor([[0, 1, 2], [4, 5, 6], [2, 2, 2], [0, 0, 1], [1, 2, 3], [6, 6, 6]])
    assert _token_rows(base).rows.shape == (sum(lengths) + len(lengths) + 1, 4)
    for index in ((doc, position), (doc[:, None], blocks)):
        mine = [t.clone().requires_grad_(True) for t in base]
        theirs = [t.clone().requires_grad_(True) for t in base]
        padded = torch.stack([torch.nn.functional.pad(t, (0, 0, 1, 7 - len(t)))
                              for t in theirs])  # [D, N + 2, H], N = 5
        found, expected = _token_rows(mine).at(*index), padded[index]
        assert found.shape == expected.shape and found.dtype == dtype
        assert torch.equal(found, expected)
        weights = torch.randn(expected.shape).to(dtype)
        (found * weights).float().sum().backward()
        (expected * weights).float().sum().backward()
        for m, t in zip(mine, theirs):
            if not len(m):  # an empty doc has no rows in the table
                continue
            if dtype == torch.float32:
                assert torch.equal(m.grad, t.grad)
            else:  # a row gathered twice sums its two gradients in another order
                assert torch.allclose(m.grad.float(), t.grad.float(), atol=0.02)


def _small_heads(max_span_tokens: int, dropout: float):
    """Locate-and-Label heads of hidden width 12 on token vectors of width 6, materialized."""
    from spacy_nested_mrc.models.locate_label.blocks import (
        configure_locate_label_heads,
        configure_seed_spans,
    )
    from spacy_nested_mrc.models.locate_label.decode import SoftNMSDecoder
    from spacy_nested_mrc.models.locate_label.loss import LocateLabelLoss
    from spacy_nested_mrc.models.locate_label.torch_module import LocateLabelHeads

    heads = LocateLabelHeads(
        configure_locate_label_heads(hidden_width=12, dropout=dropout,
                                     max_span_tokens=max_span_tokens),
        configure_seed_spans(classifier_iou=0.7, use_soft_examples=False),
        decoder=SoftNMSDecoder(0.5, 0, True, 0.9, 0.6, 0.45),
        loss=LocateLabelLoss(2.0, 1.0, 1.0, 1.0),
    )
    heads.materialize(6, torch.device("cpu"))
    return heads


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gathered_max_is_autograds_amax(dtype):
    """The training pool (``_GatheredMax``) gives the maxima and the gradient of autograd's
    gather and ``amax``, to the last bit, with rows repeated in a span (as the positions
    past a span's end are) and values tied between rows (the gradient shared equally)."""
    from spacy_nested_mrc.models.locate_label.torch_module import _GatheredMax

    torch.manual_seed(0)
    table = torch.randn(6, 5).to(dtype)
    table[4] = table[1]  # rows 1 and 4 tie everywhere
    table[2, :2] = table[3, :2]  # rows 2 and 3 tie in two columns
    rows = torch.tensor([[0, 1, 4, 4], [2, 3, 3, 3], [5, 5, 5, 5], [1, 2, 3, 4]])
    mine = table.clone().requires_grad_(True)
    theirs = table.clone().requires_grad_(True)
    found = _GatheredMax.apply(mine, rows)
    expected = theirs[rows].amax(dim=1)
    assert found.dtype == dtype and torch.equal(found, expected)
    weights = torch.randn(expected.shape).to(dtype)
    (found * weights).float().sum().backward()
    (expected * weights).float().sum().backward()
    assert torch.equal(mine.grad, theirs.grad)
    assert mine.grad[1].abs().sum() > 0 and mine.grad[4].abs().sum() > 0  # ties share


def test_heads_pool_once_for_heads_of_the_same_spans():
    """The filter and the regressor read the same seed spans in training: ``_heads`` pools
    them once and gives each head the output its own ``_head`` gives, in chunks or not."""
    from spacy_nested_mrc.models.locate_label import torch_module
    from spacy_nested_mrc.spans import enumerate_spans

    torch.manual_seed(0)
    for max_span_tokens in (65536, 7):
        heads = _small_heads(max_span_tokens, dropout=0.0)
        tokens = [torch.randn(9, 6, requires_grad=True), torch.randn(4, 6)]
        table = torch_module._token_rows(tokens)
        doc, start, end = (torch.as_tensor(a) for a in enumerate_spans([9, 4], range(1, 4)))
        pools = []
        original = torch_module._max_pooled

        def counting(*args, pools=pools, original=original, **kwargs):
            pools.append(1)
            return original(*args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(torch_module, "_max_pooled", counting)
            both = heads._heads([(heads.filter, False), (heads.regressor, True)],
                                table, doc, start, end)
        chunks = len(range(0, len(doc), max(1, max_span_tokens // 3)))
        assert len(pools) == chunks  # once per chunk, for both heads
        assert [tuple(o.shape) for o in both] == [(len(doc), 1), (len(doc), 2)]
        assert torch.equal(both[0], heads._head(heads.filter, table, doc, start, end, False))
        assert torch.equal(both[1], heads._head(heads.regressor, table, doc, start, end, True))


def test_span_max_pool_takes_the_sliding_path_from_half_the_cells():
    """Prediction pools by sliding maxima once the spans' tokens number half the cells of the
    sliding maxima (token rows x widest span), else by gathering each span's own tokens a
    width at a time, with the same maxima either way."""
    from spacy_nested_mrc.models.locate_label import torch_module
    from spacy_nested_mrc.spans import enumerate_spans

    torch.manual_seed(0)
    tokens = [torch.randn(9, 6), torch.randn(4, 6)]
    table = torch_module._token_rows(tokens)
    doc, start, end = (torch.as_tensor(a) for a in enumerate_spans([9, 4], range(1, 4)))
    cells = len(table.rows) * 3  # every seed width up to 3 is there
    gathered = torch.cumsum(end - start, 0)
    many = int((gathered < cells * torch_module._SLIDING_FROM).sum()) + 1  # just past half
    assert many < len(start)
    slid = []
    original = torch.maximum

    def counting(*args, **kwargs):
        slid.append(1)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch_module.torch, "maximum", counting)
        found = torch_module._max_pooled(table, doc[:many], start[:many], end[:many])
        assert slid, "the sliding path was not taken"
        slid.clear()
        fewer = torch_module._max_pooled(table, doc[: many - 1], start[: many - 1],
                                         end[: many - 1])
        assert not slid
    for k in range(many):
        expected = tokens[int(doc[k])][int(start[k]) : int(end[k])].amax(dim=0)
        assert torch.equal(found[k], expected)
    assert torch.equal(fewer, found[: many - 1])


@pytest.mark.parametrize("max_span_tokens", [65536, 7])
def test_filter_by_parts_is_the_filter_head(max_span_tokens):
    """Prediction scores the seed spans with the filter's first layer taken by parts (the
    boundary tokens' products once per token); the logits are the whole head's on the
    concatenated span vectors, to float rounding, in chunks or not; in training mode
    (dropout on) the whole head runs."""
    from spacy_nested_mrc.models.locate_label.torch_module import _token_rows
    from spacy_nested_mrc.spans import enumerate_spans

    torch.manual_seed(0)
    heads = _small_heads(max_span_tokens, dropout=0.5)
    heads.eval()
    tokens = [torch.randn(9, 6), torch.randn(4, 6), torch.randn(0, 6)]
    table = _token_rows(tokens)
    doc, start, end = (torch.as_tensor(a) for a in enumerate_spans([9, 4, 0], range(1, 6)))
    with torch.no_grad():
        whole = heads._head(heads.filter, table, doc, start, end, False).squeeze(-1)
        parts = heads._filter_by_parts(table, doc, start, end)
    assert parts.shape == whole.shape
    assert torch.allclose(parts, whole, atol=1e-5)
    heads.train()
    torch.manual_seed(1)
    trained = heads._filter_by_parts(table, doc, start, end)
    torch.manual_seed(1)
    assert torch.equal(trained, heads._head(heads.filter, table, doc, start, end,
                                            False).squeeze(-1))
