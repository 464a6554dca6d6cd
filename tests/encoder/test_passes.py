"""How encoder layers are called (``spacy_nested_mrc.encoder.passes``): sequences grouped by
length under a token budget, prediction in passes and in calls by length with the output of one
call, training in calls by length and with gradient checkpointing with the loss and gradient of
one, for the MRC family's own encoder and for the shared ``transformer`` component."""

from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import PER_LABEL_MRC, build, mrc_blocks
from helpers.encoders import make_tiny_bert
from helpers.locate_label import shared_pipeline
from helpers.pipes import (
    KEY,
    PIPE,
    TRAIN,
    blank_nlp,
    initialized_nlp,
    make_examples,
    span_keys,
    torch_grads,
)
from spacy.util import fix_random_seed

from spacy_nested_mrc.encoder import passes
from spacy_nested_mrc.encoder.hf import hf_transformers
from spacy_nested_mrc.encoder.passes import encode_by_length, length_groups

# sequences grouped by length


@pytest.mark.parametrize("max_tokens", [0, 1, 10, 40, 1000])
def test_length_groups_fit_the_budget_and_cover_each_sequence_once(max_tokens):
    lengths = np.random.default_rng(max_tokens).integers(1, 30, size=25)
    groups = length_groups(lengths, max_tokens)
    assert sorted(np.concatenate(groups).tolist()) == list(range(25))
    flat = np.concatenate([lengths[g] for g in groups])
    assert (np.diff(flat) >= 0).all()  # shortest first, so each group's lengths are alike
    for group in groups:
        padded = len(group) * lengths[group].max()
        assert not max_tokens or padded <= max_tokens or len(group) == 1
    if not max_tokens:
        assert len(groups) == 1


# the MRC family: its own encoder


def predict_with_budget(tiny_bert: str, budget: int, texts: list):
    """The spans and scores an untrained pipe (same weights whatever the budget) writes for
    ``texts`` with ``max_pass_tokens = budget``, and the shape of each encoder call."""
    fix_random_seed(0)
    nlp = blank_nlp(tiny_bert, model={"encoder": {"max_pass_tokens": budget},
                                      "heads": {"boundary_prior": 0.0}}, threshold=0.0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    calls = []
    shim = nlp.get_pipe(PIPE).model.get_ref("encoder").shims[0]
    predict = shim.predict
    shim.predict = lambda X: calls.append(tuple(X.kwargs["input_ids"].shape)) or predict(X)
    docs = list(nlp.pipe(texts))
    return ([span_keys(doc) for doc in docs],
            [list(doc.spans[KEY].attrs["scores"]) for doc in docs], calls)


def test_prediction_by_length_gives_the_spans_and_scores_of_one_call(tiny_bert):
    """``max_pass_tokens`` in prediction: a pass's sequences go through the encoder sorted by
    length in calls of that many padded wordpieces, with the predictions of one call."""
    texts = [text for text, _ in TRAIN] + ["IL-2", " ".join(["human T cells"] * 12)]
    spans_one, scores_one, calls_one = predict_with_budget(tiny_bert, 0, texts)
    spans_split, scores_split, calls_split = predict_with_budget(tiny_bert, 48, texts)
    assert len(calls_split) > len(calls_one)
    assert sum(rows * width for rows, width in calls_split) < sum(
        rows * width for rows, width in calls_one)
    assert spans_one == spans_split and any(spans_one)
    for a, b in zip(scores_one, scores_split):
        assert np.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("packed", [False, True])
def test_encoder_calls_by_length_give_the_gradient_of_one_call(tiny_bert, monkeypatch, packed):
    """``max_pass_tokens`` runs a pass's sequences through the encoder in calls of similar
    length; the heads and the dice loss still see the whole pass, so loss and gradients are
    those of one padded call."""
    calls = []

    def counting(encoder, inputs, max_tokens):
        lengths = inputs.kwargs["attention_mask"].sum(dim=1).numpy()
        calls.append(len(length_groups(lengths, max_tokens)))
        return encode_by_length(encoder, inputs, max_tokens)

    # the encoder layer runs a pass in calls by length (the model hands it the whole pass)
    monkeypatch.setattr(passes, "encode_by_length", counting)
    data = [
        ("IL-2 gene expression", [(0, 2, "DNA"), (0, 1, "protein")]),
        ("Jurkat cells express IL-2 and the c-fos gene in human T cells after activation",
         [(0, 2, "cell_line"), (3, 4, "protein"), (7, 9, "DNA"), (10, 13, "cell_type")]),
        ("human T cells bind", [(0, 3, "cell_type"), (1, 3, "cell_type")]),
    ]
    grads, calls_by_budget = [], []
    for max_tokens in (0, 24):
        model = {"encoder": {"max_pass_tokens": max_tokens}, "loss": {"kind": "dice"},
                 "questions": {"packed": packed}}
        nlp = initialized_nlp(tiny_bert, model=model)
        calls.clear()
        losses = nlp.update(make_examples(nlp, data), sgd=None, drop=0.0)
        calls_by_budget.append(list(calls))
        grads.append((losses[PIPE], torch_grads(nlp.get_pipe(PIPE))))
    # no budget: one call a pass (never split); 24 wordpieces: the pass in several calls
    assert all(n == 1 for n in calls_by_budget[0])
    assert calls_by_budget[1] and max(calls_by_budget[1]) > 1
    (loss_one, grads_one), (loss_split, grads_split) = grads
    assert loss_one == pytest.approx(loss_split, rel=1e-5)
    assert len(grads_one) == len(grads_split) > 0
    for a, b in zip(grads_one, grads_split):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def count_layer_calls(nlp) -> list:
    """A list that grows by one each time the first layer of the pipe's encoder starts to run
    (a recomputation may stop early, before the layer's forward hooks)."""
    transformer = hf_transformers(nlp.get_pipe(PIPE).model.get_ref("encoder"))[0]
    calls: list = []
    transformer.encoder.layer[0].register_forward_pre_hook(lambda *args: calls.append(1))
    return calls


def test_gradient_checkpointing_recomputes_with_the_same_gradient(tmp_path):
    """``gradient_checkpointing`` runs each encoder layer again in the backward pass (its
    activations were not kept), with the encoder's dropout on: the loss and gradients are
    those of a run without it."""
    encoder = str(make_tiny_bert(tmp_path / "bert", dropout=0.2))
    results = []
    for checkpointing in (False, True):
        nlp = initialized_nlp(encoder, model={"encoder": {"gradient_checkpointing": checkpointing}})
        calls = count_layer_calls(nlp)
        fix_random_seed(1)
        losses = nlp.update(make_examples(nlp, TRAIN), sgd=None)
        results.append((losses[PIPE], torch_grads(nlp.get_pipe(PIPE)), len(calls)))
        transformer = hf_transformers(nlp.get_pipe(PIPE).model.get_ref("encoder"))[0]
        assert transformer.is_gradient_checkpointing == checkpointing
        assert transformer.config.hidden_dropout_prob > 0  # the recomputation has dropout
    (loss_off, grads_off, calls_off), (loss_on, grads_on, calls_on) = results
    assert calls_on == 2 * calls_off > 0
    assert loss_off == pytest.approx(loss_on, rel=1e-6)
    assert len(grads_off) == len(grads_on) > 0
    for a, b in zip(grads_off, grads_on):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_gradient_checkpointing_follows_the_config_after_loading(tiny_bert, tmp_path):
    """A saved pipeline trains as its config says: switched on from the config after
    ``spacy.load``, and off when the loaded config turns it off."""
    nlp = initialized_nlp(tiny_bert, model={"encoder": {"gradient_checkpointing": True}})
    nlp.to_disk(tmp_path / "pipeline")
    setting = f"components.{PIPE}.model.encoder.gradient_checkpointing"
    for value in (True, False):
        loaded = spacy.load(tmp_path / "pipeline", config={setting: value})
        calls = count_layer_calls(loaded)
        loaded.update(make_examples(loaded, TRAIN[:1]), sgd=None)
        assert len(calls) == (2 if value else 1)


def test_gradient_checkpointing_is_validated_and_needs_a_model_that_can(tiny_bert, monkeypatch):
    with pytest.raises(ValueError, match="NME003.*gradient_checkpointing"):
        build(mrc_blocks(PER_LABEL_MRC, encoder={"name": tiny_bert,
                                                  "gradient_checkpointing": "yes"}))
    nlp = initialized_nlp(tiny_bert, model={"encoder": {"gradient_checkpointing": True}})
    transformer = hf_transformers(nlp.get_pipe(PIPE).model.get_ref("encoder"))[0]
    monkeypatch.setattr(type(transformer), "supports_gradient_checkpointing", False)
    with pytest.raises(ValueError, match="NME155"):
        nlp.update(make_examples(nlp, TRAIN[:1]), sgd=None)


# the shared transformer component


# the passes are checked to give one call's output and gradient to float32 rounding: the
# shipped configs' bf16 rounds each call's products by their shape, so these run in fp32
FP32 = {"components.transformer.model.precision": "fp32",
        "components.nested_mrc_ner.model.heads.precision": "fp32"}

def encode_in_passes(tiny_bert: str, tmp_path: Path, limit: int):
    """The shared transformer's output for a doc of many windows, and the number of windows
    its torch model saw in each call (no token budget: passes by window count only)."""
    key = "components.transformer.model.max_windows_per_pass"
    nlp = shared_pipeline(tiny_bert, tmp_path, {key: limit},
                           {"components.transformer.model.max_pass_tokens": 0}, FP32)
    examples = make_examples(nlp, TRAIN)
    nlp.initialize(lambda: examples)
    passes = []
    shim = nlp.get_pipe("transformer").model.layers[0].shims[0]
    predict = shim.predict
    shim.predict = lambda X: passes.append(len(X.kwargs["input_ids"])) or predict(X)
    doc = nlp.get_pipe("transformer")(nlp.make_doc(" ".join(["il-2 gene"] * 600)))
    return doc._.trf_data, passes


def test_long_doc_encoder_passes_give_the_same_output(tiny_bert, tmp_path):
    """The shared transformer predicts a doc of many windows in passes of at most
    ``max_windows_per_pass`` windows, with the output of one pass over all of them."""
    whole, passes = encode_in_passes(tiny_bert, tmp_path, 0)
    n_windows = len(whole.wordpieces)
    assert passes == [n_windows] and n_windows > 8
    split, passes = encode_in_passes(tiny_bert, tmp_path, 4)
    assert passes == [4] * (n_windows // 4) + ([n_windows % 4] if n_windows % 4 else [])
    one, several = whole.model_output.last_hidden_state, split.model_output.last_hidden_state
    assert one.shape == several.shape
    real = whole.wordpieces.attention_mask.astype(bool)  # the padding is not computed
    assert np.allclose(one[real], several[real], atol=1e-5)


def predict_batch(tiny_bert: str, tmp_path: Path, max_tokens: int):
    """The shared transformer's prediction for a batch of docs of different lengths, and
    the (windows, width) of each call its torch model saw."""
    nlp = shared_pipeline(tiny_bert, tmp_path,
                           {"components.transformer.model.max_pass_tokens": max_tokens}, FP32)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    calls = []
    shim = nlp.get_pipe("transformer").model.layers[0].shims[0]
    predict = shim.predict
    shim.predict = lambda X: calls.append(tuple(X.kwargs["input_ids"].shape)) or predict(X)
    docs = [nlp.make_doc(" ".join(["il-2 gene"] * n)) for n in (3, 30, 1, 17, 8, 25, 2)]
    return nlp.get_pipe("transformer").predict(docs), calls


def test_transformer_predicts_windows_by_length_with_the_output_of_one_call(tiny_bert, tmp_path):
    """In prediction the shared transformer runs a batch's windows sorted by length, in calls
    of at most ``max_pass_tokens`` padded wordpieces each cut to its longest window: the
    output of every wordpiece is that of one padded call, for less padding computed."""
    one, calls_one = predict_batch(tiny_bert, tmp_path, 0)
    by_length, calls = predict_batch(tiny_bert, tmp_path, 120)
    assert len(calls_one) == 1 and len(calls) > 1
    assert sum(rows for rows, _ in calls) == calls_one[0][0]
    assert all(rows * width <= 120 or rows == 1 for rows, width in calls)
    assert sum(rows * width for rows, width in calls) < calls_one[0][0] * calls_one[0][1]
    a = one.model_output.last_hidden_state
    b = by_length.model_output.last_hidden_state
    assert a.shape == b.shape
    real = one.wordpieces.attention_mask.astype(bool)
    assert np.allclose(a[real], b[real], atol=1e-5)


def transformer_training_pass(
    tiny_bert: str, tmp_path: Path, max_tokens: int, checkpointing: bool = False
):
    """One update of the shipped pipeline (no optimizer step): its loss, the shared
    transformer's gradients and the windows its torch model saw in each training call."""
    nlp = shared_pipeline(
        tiny_bert, tmp_path,
        {"components.transformer.model.max_pass_tokens": max_tokens},
        {"components.transformer.model.gradient_checkpointing": checkpointing},
        {"components.nested_mrc_ner.model.heads.dropout": 0.0},
        {"components.nested_mrc_ner.model.heads.hidden_width": 32},
        FP32,
    )
    data = TRAIN + [("human t cells of the jurkat cell line bind the il-2 gene promoter and "
                     "the nf-kappa b site in activation", [(0, 3, "cell_type")])]
    examples = make_examples(nlp, data)
    fix_random_seed(0)
    nlp.initialize(lambda: examples)
    shim = nlp.get_pipe("transformer").model.layers[0].shims[0]
    calls, begin_update = [], shim.begin_update
    shim.begin_update = lambda X: calls.append(len(X.kwargs["input_ids"])) or begin_update(X)
    losses = nlp.update(examples, sgd=None, drop=0.0)
    transformer = hf_transformers(nlp.get_pipe("transformer").model)[0]
    assert transformer.is_gradient_checkpointing == checkpointing
    grads = [p.grad.detach().clone() for p in transformer.parameters() if p.grad is not None]
    return losses[PIPE], grads, calls


def test_transformer_trains_in_calls_by_length_with_the_gradient_of_one(tiny_bert, tmp_path):
    """``max_pass_tokens`` of the shared transformer: a training batch's windows go through
    the encoder in calls of similar length, with the loss and gradient of one padded call."""
    loss_one, grads_one, calls_one = transformer_training_pass(tiny_bert, tmp_path, 0)
    loss_split, grads_split, calls_split = transformer_training_pass(tiny_bert, tmp_path, 40)
    assert len(calls_one) == 1 and len(calls_split) > 1
    assert sum(calls_split) == calls_one[0]
    assert loss_one == pytest.approx(loss_split, rel=1e-5)
    assert len(grads_one) == len(grads_split) > 0
    for a, b in zip(grads_one, grads_split):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_transformer_with_gradient_checkpointing_gives_the_same_gradient(tiny_bert, tmp_path):
    """``gradient_checkpointing`` of the shared transformer: the same loss and gradient."""
    loss_off, grads_off, _ = transformer_training_pass(tiny_bert, tmp_path, 40)
    loss_on, grads_on, _ = transformer_training_pass(tiny_bert, tmp_path, 40, True)
    assert loss_off == pytest.approx(loss_on, rel=1e-6)
    assert len(grads_off) == len(grads_on) > 0
    for a, b in zip(grads_off, grads_on):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
