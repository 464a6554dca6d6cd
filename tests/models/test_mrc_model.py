"""Tests of the MRC query model: its registration and settings, questions, loss, decoding,
the encoder sequences it builds and its windows over long docs."""

import json
import math

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import MRC, MULTI_NER, PER_LABEL_MRC, build, mrc_blocks
from helpers.mrc_model import change_blocks, make_nlp
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry
from thinc.api import Config, Model, set_dropout_rate

from spacy_nested_mrc import windows as windows_module
from spacy_nested_mrc.encoder.hf import encoder_has_weights, get_tokenizer, hf_transformers
from spacy_nested_mrc.models.mrc import model as mrc_model
from spacy_nested_mrc.models.mrc import rows as mrc_rows
from spacy_nested_mrc.models.mrc.blocks import configure_mrc_heads
from spacy_nested_mrc.models.mrc.decode import MRCDecoder, candidate_pairs, pair_mask
from spacy_nested_mrc.models.mrc.loss import MRCLoss
from spacy_nested_mrc.models.mrc.model import (
    build_rows,
    query_layout,
    set_labels,
)
from spacy_nested_mrc.models.mrc.questions import make_questions
from spacy_nested_mrc.models.mrc.torch_module import MRCHeads, Packing, RowInputs
from spacy_nested_mrc.types import SpanBatch, contract_of
from spacy_nested_mrc.windows import Window

# tiny models: one thread avoids OpenMP spinning on busy CPUs

ARCHITECTURE_CFG = """
[model]
@architectures = "spacy-nested-mrc.MRCQuery.v2"

[model.encoder]
@misc = "spacy-nested-mrc.QueryEncoder.v1"
name = "no/such-encoder"
max_rows_per_pass = 12
precision = "fp32"

[model.questions]
@misc = "spacy-nested-mrc.Questions.v1"
style = "pseudo"

[model.windows]
@misc = "spacy-nested-mrc.QueryWindows.v1"

[model.heads]
@misc = "spacy-nested-mrc.MRCHeads.v1"
match_hidden = 16

[model.loss]
@misc = "spacy-nested-mrc.MRCLoss.v1"

[model.decoder]
@misc = "spacy-nested-mrc.MRCDecoder.v1"
"""
# pseudo questions and small heads without dropout
TINY = {"questions": {"style": "pseudo"}, "heads": {"match_hidden": 16, "dropout": 0.0}}


def tiny_model(encoder: str, labels, **blocks) -> Model:
    """An initialized per-label MRC model on the tiny BERT, its settings changed by
    ``blocks``."""
    fix_random_seed(0)
    model = build(mrc_blocks(PER_LABEL_MRC, TINY, {"encoder": encoder}, **blocks))
    set_labels(model, list(labels))
    model.initialize()
    return model


# registration and settings


def test_architecture_resolves_from_config_string():
    resolved = registry.resolve(Config().from_str(ARCHITECTURE_CFG))
    model = resolved["model"]
    assert isinstance(model, Model)
    assert model.name == "mrc_query"
    # construction loads nothing: the encoder is only looked up at initialization
    assert model.attrs["settings"].encoder.name == "no/such-encoder"
    assert model.attrs["labels"] == []
    assert model.attrs["docs_per_pass"] == 12
    assert callable(contract_of(model).set_labels)


@pytest.mark.parametrize(
    "block,setting,value,code",
    [
        ("questions", "style", "riddle", "NME006"),
        ("heads", "match_candidates", "bogus", "NME006"),
        ("loss", "kind", "bogus", "NME006"),
        ("decoder", "start_threshold", 1.5, "NME003"),
        ("decoder", "end_threshold", -0.1, "NME003"),
        ("heads", "dropout", 2, "NME003"),
        ("windows", "window_wordpieces", 0, "NME003"),
        ("encoder", "max_rows_per_pass", 0, "NME003"),
        ("heads", "match_hidden", 1.5, "NME003"),
        ("windows", "overlap_tokens", -1, "NME003"),
        ("decoder", "max_span_length", -2, "NME003"),
        ("heads", "lr_scale", -1.0, "NME003"),
        ("heads", "match_widths", -1, "NME003"),
    ],
)
def test_invalid_model_settings_fail_at_construction(block, setting, value, code):
    with pytest.raises(ValueError, match=code) as err:
        build(mrc_blocks(PER_LABEL_MRC, {"encoder": "no/such-encoder"}, {block: {setting: value}}))
    assert setting in str(err.value)


def test_zero_overlap_and_span_length_are_allowed():
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x", windows={"overlap_tokens": 0},
                            decoder={"max_span_length": 0}))
    assert model.attrs["settings"].windows.overlap_tokens == 0


@pytest.mark.parametrize(
    "max_rows,n_labels,expected", [(64, 1, 64), (64, 5, 12), (7, 3, 2), (4, 5, 1), (1, 3, 1)]
)
def test_docs_per_pass_is_flat_in_labels(max_rows, n_labels, expected):
    model = build(mrc_blocks(PER_LABEL_MRC, encoder={"name": "x", "max_rows_per_pass": max_rows},
                            questions={"style": "index"}))
    assert model.attrs["docs_per_pass"] == max_rows
    set_labels(model, [f"L{i}" for i in range(n_labels)])
    assert model.attrs["docs_per_pass"] == expected == max(1, max_rows // n_labels)
    assert model.attrs["labels"] == [f"L{i}" for i in range(n_labels)]


# questions


def test_natural_questions_come_from_presets():
    questions = make_questions(["DNA", "PER"])
    assert set(questions) == {"DNA", "PER"}
    assert all(q.strip() for q in questions.values())


def test_user_questions_take_precedence(tmp_path):
    path = tmp_path / "questions.json"
    path.write_text(json.dumps({"GADGET": "from the file", "DNA": "dna from the file"}))
    questions = make_questions(
        ["DNA", "GADGET", "WIDGET"],
        queries={"WIDGET": "find widgets", "DNA": "dna from the config"},
        queries_path=str(path),
    )
    assert questions == {
        "DNA": "dna from the config",
        "GADGET": "from the file",
        "WIDGET": "find widgets",
    }


def test_missing_question_names_the_label():
    with pytest.raises(ValueError, match="NME002") as err:
        make_questions(["DNA", "GADGET"])
    assert "GADGET" in str(err.value)
    with pytest.raises(ValueError, match="NME002"):
        make_questions(["GADGET"], queries={"GADGET": "   "})


def test_pseudo_and_index_questions_for_any_label():
    assert make_questions(["cell_type", "GADGET"], style="pseudo") == {
        "cell_type": "cell type",
        "GADGET": "GADGET",
    }
    assert make_questions(["GADGET", "WIDGET"], style="index") == {"GADGET": "1", "WIDGET": "2"}


def test_unknown_preset():
    with pytest.raises(ValueError, match="NME006"):
        make_questions(["DNA"], presets=["no-such-preset"])


def test_set_labels_checks_questions():
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x"))
    with pytest.raises(ValueError, match="NME002"):
        set_labels(model, ["GADGET"])
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x",
                            questions={"queries": {"GADGET": "find gadgets"}}))
    set_labels(model, ["GADGET"])
    assert model.attrs["questions"] == {"GADGET": "find gadgets"}


# loss


def test_bce_loss_hand_computed():
    loss = MRCLoss("bce")
    value = loss.binary(torch.tensor([0.0, 0.0]), torch.tensor([1, 0]))
    assert float(value) == pytest.approx(math.log(2))
    # a confident correct prediction costs almost nothing, a wrong one a lot
    assert float(loss.binary(torch.tensor([20.0]), torch.tensor([1]))) < 1e-6
    assert float(loss.binary(torch.tensor([-20.0]), torch.tensor([1]))) == pytest.approx(20.0)


def test_dice_loss_hand_computed():
    loss = MRCLoss("dice", dice_smooth=1.0)
    # probabilities .5 .5 against 1 0: 1 - (2 * .5 + 1) / (.25 + .25 + 1 + 1) = 0.2
    value = loss.binary(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0]))
    assert float(value) == pytest.approx(0.2)
    perfect = loss.binary(torch.tensor([30.0, -30.0, 30.0]), torch.tensor([1.0, 0.0, 1.0]))
    assert float(perfect) == pytest.approx(0.0, abs=1e-6)
    # all-negative targets predicted negative: smoothing keeps it at ~0, not NaN
    negatives = loss.binary(torch.tensor([-30.0, -30.0]), torch.tensor([0.0, 0.0]))
    assert float(negatives) == pytest.approx(0.0, abs=1e-6)


def test_dice_smoothing_changes_loss():
    logits, targets = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 0.0])
    # smooth 0: 1 - 1 / 1.5
    assert float(MRCLoss("dice", dice_smooth=0.0).binary(logits, targets)) == pytest.approx(1 / 3)


@pytest.mark.parametrize("kind", ["bce", "dice", "dice_bce"])
def test_loss_of_no_positions_is_zero_with_gradient(kind):
    logits = torch.zeros(0, requires_grad=True)
    value = MRCLoss(kind).binary(logits, torch.zeros(0))
    assert float(value.detach()) == 0.0
    value.backward()
    assert logits.grad is not None


def test_joint_loss_weights_each_head():
    loss = MRCLoss("bce", weight_start=2.0, weight_end=0.5, weight_match=3.0)
    zero, one = torch.tensor([0.0]), torch.tensor([1.0])
    # each head's bce at logit 0 is log 2
    value = loss(zero, zero, one, one, zero, one)
    assert float(value) == pytest.approx((2.0 + 0.5 + 3.0) * math.log(2))
    # no match candidates: the match head adds nothing
    empty = torch.zeros(0)
    assert float(loss(zero, zero, one, one, empty, empty)) == pytest.approx(2.5 * math.log(2))


@pytest.mark.parametrize("kind", ["bce", "dice", "dice_bce"])
def test_loss_gradient_points_to_targets(kind):
    logits = torch.tensor([0.0, 0.0], requires_grad=True)
    MRCLoss(kind).binary(logits, torch.tensor([1.0, 0.0])).backward()
    assert logits.grad[0] < 0 < logits.grad[1]


def test_dice_bce_is_the_sum_and_keeps_a_gradient_where_dice_vanishes():
    logits, targets = torch.tensor([0.3, -1.0, 2.0]), torch.tensor([1.0, 0.0, 0.0])
    both = MRCLoss("dice_bce").binary(logits, targets)
    parts = MRCLoss("dice").binary(logits, targets) + MRCLoss("bce").binary(logits, targets)
    assert float(both) == pytest.approx(float(parts))
    # a gold token the heads give probability ~1e-4 (a label pushed down): dice barely pulls
    # it back up, bce (and so the sum) pulls with about 1 / n
    grads = {}
    for kind in ("dice", "dice_bce"):
        low = torch.tensor([-9.0, -9.0, -9.0, -9.0], requires_grad=True)
        MRCLoss(kind).binary(low, torch.tensor([1.0, 0.0, 0.0, 0.0])).backward()
        grads[kind] = float(low.grad[0])
    assert -1e-3 < grads["dice"] < 0
    assert grads["dice_bce"] < -0.2


def test_unknown_loss():
    with pytest.raises(ValueError, match="NME006"):
        MRCLoss("hinge")


# decoding


def pairs_of(mask: torch.Tensor):
    return [tuple(p) for p in mask.nonzero().tolist()]


def test_pair_mask_hand_worked():
    starts = torch.tensor([[True, False, True]])
    ends = torch.tensor([[False, True, True]])
    assert pairs_of(pair_mask(starts, ends, 0)) == [(0, 0, 1), (0, 0, 2), (0, 2, 2)]
    assert pairs_of(pair_mask(starts, ends, 2)) == [(0, 0, 1), (0, 2, 2)]
    assert pairs_of(pair_mask(starts, ends, 1)) == [(0, 2, 2)]
    assert pair_mask(starts, ends, 0).shape == (1, 3, 3)


def test_pair_mask_never_ends_before_start():
    everything = torch.ones(2, 5, dtype=torch.bool)
    mask = pair_mask(everything, everything, 0)
    assert int(mask.sum()) == 2 * 15
    assert all(i <= j for _, i, j in pairs_of(mask))


CANDIDATES = {
    "token_mask": torch.tensor([[True, True, False]]),
    "start_pred": torch.tensor([[False, True, False]]),
    "end_pred": torch.tensor([[False, False, True]]),
    "gold_start": torch.tensor([[True, False, False]]),
    "gold_end": torch.tensor([[False, True, False]]),
}


@pytest.mark.parametrize(
    "mode,expected",
    [
        # every pair of real tokens
        ("all", [(0, 0, 0), (0, 0, 1), (0, 1, 1)]),
        # gold starts x gold ends
        ("gold", [(0, 0, 1)]),
        # (predicted or gold) starts x (predicted or gold) ends, masked: the predicted end
        # on the padding token is dropped
        ("pred_and_gold", [(0, 0, 1), (0, 1, 1)]),
    ],
)
def test_candidate_pairs_modes(mode, expected):
    c = CANDIDATES
    mask = candidate_pairs(
        mode, c["start_pred"], c["end_pred"], c["token_mask"], c["gold_start"], c["gold_end"], 0
    )
    assert pairs_of(mask) == expected


def test_candidate_pairs_respect_max_span_length():
    c = CANDIDATES
    mask = candidate_pairs(
        "all", c["start_pred"], c["end_pred"], c["token_mask"], c["gold_start"], c["gold_end"], 1
    )
    assert pairs_of(mask) == [(0, 0, 0), (0, 1, 1)]


# encoder sequences


def test_query_layout_and_room(tiny_bert):
    model = tiny_model(tiny_bert, ["DNA", "cell_type"])
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    questions = ["dna", "cell type"]
    layout = query_layout(tokenizer, questions, ["DNA", "cell_type"], 40)
    for question, prefix, suffix, types in zip(
        questions, layout.prefix, layout.suffix, layout.prefix_types
    ):
        q_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
        assert prefix.tolist() == [tokenizer.cls_token_id, *q_ids, tokenizer.sep_token_id]
        assert suffix.tolist() == [tokenizer.sep_token_id]
        assert types.tolist() == [0] * len(prefix)
    assert layout.context_type == 1
    longest = max(len(p) + len(s) for p, s in zip(layout.prefix, layout.suffix))
    assert layout.room == 40 - longest
    with pytest.raises(ValueError, match="NME008"):
        query_layout(tokenizer, questions, ["DNA", "cell_type"], longest)


def test_questions_too_long_fail_at_initialize(tiny_bert):
    with pytest.raises(ValueError, match="NME008"):
        tiny_model(tiny_bert, ["GADGET"],
                   questions={"queries": {"GADGET": "find " * 40}, "style": "natural"})


def test_build_rows_lays_out_question_and_context(tiny_bert):
    labels = ["DNA", "protein"]
    model = tiny_model(tiny_bert, labels)
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    vocab = spacy.blank("en").vocab
    words = ["IL-2", "gene", " ", "expression"]
    doc = Doc(vocab, words=words, spaces=[True, True, False, False])
    other = Doc(vocab, words=["the", "kinase"])
    gold = [np.asarray([[0, 2, 0], [0, 1, 1]]), np.zeros((0, 3), dtype=np.int64)]
    layout = mrc_model.layout_of(model)
    rows = build_rows(model, layout, [doc, other], gold)
    # one row per (doc, window, label)
    assert rows.n_rows == 4
    assert rows.doc.tolist() == [0, 0, 1, 1]
    assert rows.label.tolist() == [0, 1, 0, 1]
    assert rows.offset.tolist() == [0, 0, 0, 0]
    assert rows.core_end.tolist() == [4, 4, 2, 2]
    for r in range(rows.n_rows):
        d, k = rows.doc[r], rows.label[r]
        ids = rows.input_ids[r]
        prefix = layout.prefix[k]
        assert ids[: len(prefix)].tolist() == prefix.tolist()
        n_real = int(rows.attention_mask[r].sum())
        assert ids[n_real - 1] == tokenizer.sep_token_id
        assert (ids[n_real:] == tokenizer.pad_token_id).all()
        assert (rows.token_type_ids[r, len(prefix) : n_real] == 1).all()
        for t, word in enumerate([words, ["the", "kinase"]][d]):
            pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
            assert rows.token_mask[r, t] == bool(pieces)
            if pieces:
                assert ids[rows.start_index[r, t]] == pieces[0]
                assert ids[rows.end_index[r, t]] == pieces[-1]
    # the whitespace token has no wordpieces and is masked; padding tokens too
    assert not rows.token_mask[0, 2]
    assert not rows.token_mask[2, 2:].any()
    # gold: DNA [0, 2) in row 0, protein [0, 1) in row 1
    assert rows.gold_start[0].tolist() == [True, False, False, False]
    assert rows.gold_end[0].tolist() == [False, True, False, False]
    assert rows.gold_start[1].tolist() == [True, False, False, False]
    assert rows.gold_end[1].tolist() == [True, False, False, False]
    assert not rows.gold_start[2:].any()
    assert sorted(map(tuple, rows.gold_pairs.tolist())) == [(0, 0, 1), (1, 0, 0)]


def test_prediction_scores_and_spans_are_valid(tiny_bert):
    model = tiny_model(tiny_bert, ["DNA", "protein"])
    vocab = spacy.blank("en").vocab
    docs = [
        Doc(vocab, words=["IL-2", "gene", "expression", "in", "human", "T", "cells"]),
        Doc(vocab, words=[]),
        Doc(vocab, words=["kinase"]),
    ]
    output = model.predict(SpanBatch(docs))
    assert len(output.spans) == len(output.scores) == 3
    assert output.scored is None
    for doc, spans, scores in zip(docs, output.spans, output.scores):
        assert spans.shape == (len(scores), 3)
        assert ((scores >= 0) & (scores <= 1)).all()
        if len(spans):
            assert (spans[:, 0] >= 0).all() and (spans[:, 0] < spans[:, 1]).all()
            assert (spans[:, 1] <= len(doc)).all()
            assert set(spans[:, 2].tolist()) <= {0, 1}
            keys = [tuple(s) for s in spans.tolist()]
            assert keys == sorted(keys)


def test_training_loss_and_backprop(tiny_bert, check_backprop):
    model = tiny_model(tiny_bert, ["DNA", "protein"])
    set_dropout_rate(model, 0.0)
    vocab = spacy.blank("en").vocab
    docs = [Doc(vocab, words=["IL-2", "gene", "expression"])]
    gold = [np.asarray([[0, 2, 0], [0, 1, 1]])]
    output, backprop = model.begin_update(SpanBatch(docs, gold))
    heads = model.get_ref("heads").attrs["torch_module"]
    loss = check_backprop(model, output, backprop)
    assert loss > 0 and np.isfinite(loss)
    assert loss == pytest.approx(float(heads.loss_of(output.scored).detach()), rel=1e-6)
    # no docs with tokens: no rows, nothing to score, zero loss, and backprop does nothing
    empty, backprop_empty = model.begin_update(
        SpanBatch([Doc(vocab, words=[])], [np.zeros((0, 3), dtype=np.int64)])
    )
    assert empty.scored is None
    assert contract_of(model).get_loss(model, empty.scored) == (0.0, ())
    backprop_empty(())


def test_uninitialized_model_raises(tiny_bert):
    model = build(mrc_blocks(PER_LABEL_MRC, encoder=tiny_bert, questions={"style": "pseudo"}))
    doc = Doc(spacy.blank("en").vocab, words=["gene"])
    with pytest.raises(ValueError, match="NME001"):
        model.predict(SpanBatch([doc]))


def test_initialize_puts_a_loaded_encoder_in_the_empty_ones_place(tiny_bert):
    """load_encoder builds a new HFWrapper around the loaded weights and puts it where the
    empty one was (layers and the "encoder" ref), keeping the encoder's settings."""
    model = build(mrc_blocks(PER_LABEL_MRC, encoder={"name": tiny_bert, "precision": "bf16"},
                            questions={"style": "pseudo"}))
    empty = model.get_ref("encoder")
    set_labels(model, ["DNA"])
    model.initialize()
    loaded = model.get_ref("encoder")
    assert loaded is not empty and not encoder_has_weights(empty)
    assert encoder_has_weights(loaded) and model.layers[0] is loaded
    assert loaded.attrs["precision"] == "bf16"
    assert all(node is not empty for node in model.walk())
    assert len(hf_transformers(model)) == 1


@pytest.mark.parametrize("packed", [False, True])
def test_match_pairs_in_chunks_score_the_same(tiny_bert, tmp_path, packed):
    """``max_match_pairs`` bounds the pair vectors computed at once; the scores are those of
    one chunk (heads that let every pair through: an untrained model's worst case)."""
    nlp = make_nlp(tiny_bert, questions={"packed": packed},
                   decoder={"start_threshold": 0.0, "end_threshold": 0.0})
    nlp.to_disk(tmp_path / "pipeline")
    key = "components.nested_mrc_ner.model.decoder.max_match_pairs"
    texts = ["IL-2 gene expression in human T cells", "Jurkat cells express the c-fos gene"]
    found = []
    for value in (0, 7):
        loaded = spacy.load(tmp_path / "pipeline", config={key: value})
        output = loaded.get_pipe("nested_mrc_ner").predict([loaded.make_doc(t) for t in texts])
        found.append(output)
    assert sum(len(spans) for spans in found[0].spans) > 7  # more pairs than one chunk
    for spans, chunked in zip(found[0].spans, found[1].spans):
        np.testing.assert_array_equal(spans, chunked)
    for scores, chunked in zip(found[0].scores, found[1].scores):
        np.testing.assert_allclose(scores, chunked, rtol=1e-5, atol=1e-6)


# windows over long docs

LONG_WORDS = (
    "the il-2 gene promoter binding site of human t cells and the jurkat cell line in "
    "expression of c-fos mrna"
).split()


# windows of 24 wordpieces that overlap by 4 tokens, and the thresholds the tests decode at
LONG_WINDOWS = {"window_wordpieces": 24, "overlap_tokens": 4}
THRESHOLDS_03 = {"start_threshold": 0.3, "end_threshold": 0.3}


def long_doc(vocab, n_tokens: int) -> Doc:
    words = [LONG_WORDS[i % len(LONG_WORDS)] for i in range(n_tokens)]
    return Doc(vocab, words=words)


def test_long_doc_is_split_into_windows(tiny_bert, monkeypatch):
    nlp = make_nlp(tiny_bert, windows=LONG_WINDOWS, decoder=THRESHOLDS_03)
    # every pair the heads find is written, whatever the untrained match head scores it
    nlp.get_pipe("nested_mrc_ner").cfg["threshold"] = 0.0
    windows_per_doc = []
    plan = windows_module.plan_windows

    def counting_plan(counts, room, overlap):
        windows = plan(counts, room, overlap)
        windows_per_doc.append((len(counts), room, windows))
        return windows

    monkeypatch.setattr(windows_module, "plan_windows", counting_plan)
    doc = long_doc(nlp.vocab, 60)
    doc = nlp(doc)
    ((n_tokens, room, windows),) = windows_per_doc
    assert n_tokens == 60
    assert room <= 24
    assert len(windows) >= 3
    group = doc.spans["nested"]
    scores = group.attrs["scores"]
    assert len(scores) == len(group)
    keys = [(s.start, s.end, s.label_) for s in group]
    assert len(keys) == len(set(keys))
    for span in group:
        assert 0 <= span.start < span.end <= len(doc)
        assert span.label_ in {"DNA", "protein"}
    # the untrained heads fire everywhere, so the windows are really exercised: spans
    # are found in more than one window
    owners = {
        k
        for span in group
        for k, w in enumerate(windows)
        if w.core_start * 2 <= span.start + span.end - 1 < w.core_end * 2
    }
    assert len(owners) > 1


def test_long_doc_windows_agree_with_one_window_on_short_spans(tiny_bert):
    """Spans no longer than the overlap are found the same way wherever the windows cut:
    each comes from the window that owns it, so none is lost or doubled."""
    nlp = make_nlp(tiny_bert, windows=LONG_WINDOWS,
                   decoder={**THRESHOLDS_03, "max_span_length": 3})
    doc = nlp(long_doc(nlp.vocab, 45))
    keys = [(s.start, s.end, s.label_) for s in doc.spans["nested"]]
    assert len(keys) == len(set(keys))
    assert all(e - s <= 3 for s, e, _ in keys)


def test_training_on_long_docs(tiny_bert):
    nlp = make_nlp(tiny_bert, windows=LONG_WINDOWS)
    doc = long_doc(nlp.vocab, 50)
    reference = doc.copy()
    # spans across the window cuts, one longer than the overlap
    reference.spans["nested"] = [
        Span(reference, 1, 3, "DNA"),
        Span(reference, 18, 21, "DNA"),
        Span(reference, 19, 20, "protein"),
        Span(reference, 30, 40, "DNA"),
    ]
    losses = nlp.update([Example(doc, reference)], sgd=nlp.create_optimizer())
    assert np.isfinite(losses["nested_mrc_ner"]) and losses["nested_mrc_ner"] > 0


def test_token_longer_than_window(tiny_bert):
    """A token with more wordpieces than a window is cut to its first and last ones, with a
    warning; the doc is still processed and its spans stay inside it."""
    nlp = make_nlp(tiny_bert, windows={"window_wordpieces": 12},
                   decoder={"start_threshold": 0.0, "end_threshold": 0.0})
    nlp.get_pipe("nested_mrc_ner").cfg["threshold"] = 0.0  # every candidate span is written
    doc = Doc(nlp.vocab, words=["gene", "x#" * 30, "gene"])
    with pytest.warns(UserWarning, match="NMW011"):
        doc = nlp(doc)
    spans = doc.spans["nested"]
    # the window holds little more than the cut token: every token is found on its own
    found = {(s.start, s.end) for s in spans}
    assert {(0, 1), (1, 2), (2, 3)} <= found
    assert all(0 <= start < end <= 3 for start, end in found)


def test_gold_boundaries_of_spans_crossing_a_window_edge(tiny_bert, monkeypatch):
    """A gold span cut by a window edge still teaches the boundary inside that window (not a
    false 'no boundary' there), and teaches the match head only where it lies wholly inside."""
    model = tiny_model(tiny_bert, ["DNA"])
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words=["gene"] * 10)
    windows = [Window(0, 6, 0, 5), Window(4, 10, 5, 10)]
    monkeypatch.setattr(windows_module, "plan_windows", lambda counts, room, overlap: windows)
    gold = [np.asarray([[3, 8, 0]])]  # crosses both window edges: starts in 0, ends in 1
    rows = build_rows(model, mrc_model.layout_of(model), [doc], gold)
    assert rows.gold_start[0].tolist() == [False, False, False, True, False, False]
    assert not rows.gold_end[0].any()
    assert not rows.gold_start[1].any()
    assert rows.gold_end[1].tolist() == [False, False, False, True, False, False]
    assert rows.gold_pairs.shape == (0, 3)


def test_rows_of_a_long_doc_go_through_the_encoder_max_rows_at_a_time(tiny_bert, monkeypatch):
    """A long doc's many rows are split into encoder passes of at most max_rows, with the
    same spans and scores as in one pass."""
    nlp = make_nlp(tiny_bert, windows=LONG_WINDOWS, decoder=THRESHOLDS_03)
    model = nlp.get_pipe("nested_mrc_ner").model
    doc = long_doc(nlp.vocab, 60)
    first = nlp(doc.copy())
    one_pass = first.spans["nested"]
    sizes = []
    select = mrc_rows.MRCRows.select

    def counting_select(rows, part):
        selected = select(rows, part)
        sizes.append(selected.n_rows)
        return selected

    monkeypatch.setattr(mrc_rows.MRCRows, "select", counting_select)
    change_blocks(model, encoder={"max_rows_per_pass": 3})
    second = nlp(doc.copy())
    split = second.spans["nested"]
    assert len(sizes) > 1 and max(sizes) <= 3
    assert [(s.start, s.end, s.label_) for s in split] == [
        (s.start, s.end, s.label_) for s in one_pass
    ]
    assert np.allclose(split.attrs["scores"], one_pass.attrs["scores"], atol=1e-5)


@pytest.mark.parametrize("architecture", [MRC, MULTI_NER])
def test_boundary_prior_sets_the_initial_boundary_probability(tiny_bert, architecture):
    """With a prior, the start/end biases are its log-odds; with 0 (PyTorch's default
    initialization) they are near 0; a second initialize of the pipe does not reset them."""
    nlp = make_nlp(tiny_bert, architecture=architecture, heads={"boundary_prior": 0.01})
    heads = nlp.get_pipe("nested_mrc_ner").model.get_ref("heads").attrs["torch_module"]
    for head in (heads.start, heads.end):
        np.testing.assert_allclose(torch.sigmoid(head.bias.detach()).numpy(), 0.01, rtol=1e-4)
    with torch.no_grad():
        heads.start.bias.add_(1.0)
    doc = nlp.make_doc("IL-2 gene")
    nlp.initialize(lambda: [Example(doc, doc.copy())])
    assert torch.sigmoid(heads.start.bias.detach() - 1.0).numpy() == pytest.approx(0.01, rel=1e-4)
    plain = make_nlp(tiny_bert, architecture=architecture, heads={"boundary_prior": 0.0})
    plain_heads = plain.get_pipe("nested_mrc_ner").model.get_ref("heads").attrs["torch_module"]
    assert abs(torch.sigmoid(plain_heads.start.bias.detach()).mean().item() - 0.5) < 0.2


def heads_block(**settings):
    """The heads' block as a config gives it: every pair a candidate, no dropout and no
    boundary prior unless set."""
    return configure_mrc_heads(**{"match_candidates": "all", "dropout": 0.0,
                                  "boundary_prior": 0.0, **settings})


@pytest.mark.parametrize("typed,match_widths", [(False, 0), (True, 0), (False, 2), (True, 2)])
def test_packed_prediction_shortcut_equals_the_full_heads(typed, match_widths):
    """``predict_packed`` (per-row head weights, match projections at the pairs only) gives
    the pairs and probabilities of FiLM-modulated copies through ``score``."""
    torch.manual_seed(0)
    heads = MRCHeads(heads_block(match_hidden=6, dropout=0.3, match_widths=match_widths),
                     decoder=MRCDecoder(0.4, 0.4, 3, 0, 65536), loss=MRCLoss("bce"),
                     typed=typed, packed=True)
    heads.materialize(8, torch.device("cpu"), n_types=3)
    heads.eval()
    for parameter in heads.parameters():  # away from the init, so every term counts
        torch.nn.init.normal_(parameter)
    hidden = torch.randn(2, 12, 8)  # 2 sequences of 12 wordpieces, 3 question slots each
    pool = torch.zeros(2, 3, 12)
    pool[:, 0, 1], pool[:, 1, 2:4], pool[:, 2, 4] = 1.0, 0.5, 1.0
    packing = Packing(sequence=torch.tensor([0, 0, 0, 1, 1, 1]), question_pool=pool,
                      slot=torch.tensor([0, 1, 2, 0, 1, 2]))
    start_index = torch.tensor([[5, 6, 8, 9, 10]] * 6)
    end_index = torch.tensor([[5, 7, 8, 9, 10]] * 6)
    token_mask = torch.ones(6, 5, dtype=torch.bool)
    token_mask[3:, 4] = False  # the second sequence's context is a token shorter
    with torch.no_grad():
        fast = heads(hidden, RowInputs(start_index, end_index, token_mask, 3, packing))
        full = heads.score(*heads.token_vectors(hidden, start_index, end_index, packing),
                           token_mask, n_types=3)
    assert 0 < len(full[0]) < 6 * 5 * 3  # the thresholds kept some pairs, not all
    assert torch.equal(fast[0], full[0])
    for got, expected in zip(fast[1:], full[1:]):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("typed", [False, True])
def test_match_projections_at_the_pairs_are_those_of_every_token(typed):
    """The match head projects the start and end vectors where a pair takes them only: the
    logits and the gradients (to the vectors and to the weights) of projecting every token
    of every row and indexing the pairs, without the work for the tokens no pair takes."""
    torch.manual_seed(0)
    heads = MRCHeads(heads_block(match_hidden=6, match_widths=2),
                     decoder=MRCDecoder(0.5, 0.5, 0, 0, 65536), loss=MRCLoss("bce"),
                     typed=typed)
    heads.materialize(8, torch.device("cpu"), n_types=3)
    for parameter in heads.parameters():
        torch.nn.init.normal_(parameter)
    h_start = torch.randn(6, 7, 8, requires_grad=True)  # 2 windows of 3 label rows
    h_end = torch.randn(6, 7, 8, requires_grad=True)
    # pairs sharing starts and ends, in every row, some tokens taken by no pair
    pairs = torch.tensor([[r, i, j] for r in range(6) for i, j in ((0, 2), (0, 4), (3, 4))])

    def gradients(logits):
        heads.zero_grad()
        h_start.grad = h_end.grad = None
        (logits * torch.arange(1.0, len(logits) + 1)).sum().backward()
        return [h_start.grad, h_end.grad] + [p.grad for p in heads.parameters()
                                             if p.grad is not None]

    at_pairs = heads._match(h_start, h_end, pairs, 3 if typed else 1)
    fast = gradients(at_pairs)
    rows, i, j = pairs.unbind(-1)

    def everywhere(head, h):  # [R, T, M], as the heads took them before
        return head(h.reshape(2, 3, 7, 8)).reshape(6, 7, -1)

    proj = everywhere(heads.match_start, h_start)[rows, i] + everywhere(heads.match_end,
                                                                        h_end)[rows, j]
    full = heads._match_out(proj, pairs, 3 if typed else 1)
    torch.testing.assert_close(at_pairs, full, rtol=1e-5, atol=1e-5)
    slow = gradients(full)
    assert len(fast) == len(slow) > 2
    for got, expected in zip(fast, slow):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert h_start.grad[:, 1].abs().sum() == 0  # a token no pair starts at


def test_match_width_vectors_start_neutral_and_set_apart_the_widths_they_cover():
    """``match_widths``: zero at first (the paper's head, pair for pair); a width's vector
    moves the match probability of the pairs of that width only, and the last vector is
    shared by every wider span."""
    h_start, h_end = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, dtype=torch.bool)
    heads = MRCHeads(heads_block(match_hidden=6, match_widths=2),
                     decoder=MRCDecoder(0.0, 0.0, 0, 0, 65536), loss=MRCLoss("bce"))
    heads.materialize(8, torch.device("cpu"))
    heads.eval()
    widths, outputs = heads.match_width, []
    for match_width in (None, widths):  # without the width vectors, then with them
        heads.match_width = match_width
        with torch.no_grad():
            outputs.append(heads.score(h_start, h_end, mask))
    (pairs, plain, *_), (same_pairs, neutral, *_) = outputs
    assert torch.equal(pairs, same_pairs) and len(pairs) == 2 * 15
    torch.testing.assert_close(neutral, plain)
    with torch.no_grad():
        heads.match_width.weight[1] = 5.0  # spans of 2 tokens and more
        moved = heads.score(h_start, h_end, mask)[1]
    one_token = pairs[:, 1] == pairs[:, 2]
    torch.testing.assert_close(moved[one_token], plain[one_token])
    assert not torch.isclose(moved[~one_token], plain[~one_token]).any()


def test_saved_heads_may_lack_only_their_optional_state():
    """``load_heads_state``: width vectors missing from a saved state stay at zero; any
    other missing or unexpected parameter raises."""
    import io

    from spacy_nested_mrc.models.wrapping import load_heads_state

    def heads_and_state(drop=(), add=()):
        heads = MRCHeads(heads_block(match_hidden=4, match_widths=3),
                         decoder=MRCDecoder(0.5, 0.5, 0, 0, 65536), loss=MRCLoss("bce"))
        heads.materialize(8, torch.device("cpu"))
        state = {k: v for k, v in heads.state_dict().items() if k not in drop}
        state.update({k: torch.zeros(1) for k in add})
        data = io.BytesIO()
        torch.save(state, data)
        return heads, data.getvalue()

    saved, state_bytes = heads_and_state(drop=["match_width.weight"])
    fresh = MRCHeads(heads_block(match_hidden=4, match_widths=3),
                     decoder=MRCDecoder(0.5, 0.5, 0, 0, 65536), loss=MRCLoss("bce"))
    loaded = load_heads_state(fresh, state_bytes, torch.device("cpu"))
    assert not loaded.match_width.weight.any()
    torch.testing.assert_close(loaded.match_out.weight, saved.match_out.weight)
    for broken in ({"drop": ["match_out.weight"]}, {"add": ["extra.weight"]}):
        _, state_bytes = heads_and_state(**broken)
        with pytest.raises(RuntimeError, match="match_out.weight|extra.weight"):
            load_heads_state(heads_and_state()[0], state_bytes, torch.device("cpu"))


def test_heads_learn_at_their_lr_scale():
    """The heads' shim steps its parameters at ``lr_scale`` times the optimizer's rate; the
    architectures hand it their heads block's ``lr_scale``."""
    from thinc.api import SGD

    from spacy_nested_mrc.training.shims import HeadsShim

    steps = []
    for scale in (1.0, 10.0):
        module = torch.nn.Linear(2, 1)
        torch.nn.init.zeros_(module.weight)
        module.weight.grad = torch.ones_like(module.weight)
        HeadsShim(module, lr_scale=scale).finish_update(SGD(0.01, L2=0.0, grad_clip=0.0))
        steps.append(module.weight.detach().clone())
    torch.testing.assert_close(steps[0], torch.full((1, 2), -0.01))
    torch.testing.assert_close(steps[1], torch.full((1, 2), -0.1))
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x", heads={"lr_scale": 4.0}))
    assert model.get_ref("heads").shims[0].lr_scale == 4.0


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_per_label_share_mixes_pooled_and_per_label_dice(share):
    """A rare label (task 1, one token) weighs as much as a frequent one per label, and by
    its count pooled; ``per_label`` takes that share of the per-label mean."""
    torch.manual_seed(0)
    logits = torch.randn(9)
    targets = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    tasks = torch.tensor([0, 0, 0, 0, 0, 0, 0, 0, 1])
    weights = torch.ones(2)
    loss = MRCLoss("dice", per_label=share, weight_end=0.0, weight_match=0.0)
    pooled = loss.binary(logits, targets)
    per_label = loss.per_task(logits, targets, tasks, 2).mean()
    empty = torch.zeros(0)
    value = loss(logits, logits, targets, targets, empty, empty, (tasks, empty.long(), weights))
    assert float(value) == pytest.approx(float(share * per_label + (1 - share) * pooled))
    assert float(per_label) != pytest.approx(float(pooled))


def test_per_label_loss_setting_is_checked():
    with pytest.raises(ValueError, match="per_label_loss"):
        build(mrc_blocks(PER_LABEL_MRC, per_label_loss=1.5))


def test_a_mistyped_question_preset_is_refused_in_every_style(tiny_bert):
    """A preset is read in the natural style only; a typo is caught in every style."""
    for style in ("index", "pseudo", "natural"):
        with pytest.raises(ValueError, match="NME006.*question preset.*Genia.*genia"):
            spacy.blank("en").add_pipe("nested_mrc_ner", config={"model": {
                "@architectures": "spacy-nested-mrc.MRCQuery.v2",
                "encoder": {"@misc": "spacy-nested-mrc.QueryEncoder.v1", "name": tiny_bert},
                "questions": {"@misc": "spacy-nested-mrc.Questions.v1", "style": style,
                              "presets": ["Genia"]}}})
