"""Dropout with cheaper masks on a CPU (``runtime.dropout``): the same distribution and
scaling as torch's, the gradient of the mask it drew, torch's own generator (seeds repeat
a mask), off in prediction, and the encoder's and heads' dropout switched to it in training."""

import pytest
import spacy
import torch
from helpers.pipes import PIPE, TRAIN, make_examples, model_config
from torch import nn

from spacy_nested_mrc.encoder.hf import hf_transformers
from spacy_nested_mrc.models.wrapping import torch_module
from spacy_nested_mrc.runtime.dropout import (
    CheapDropout,
    cheap_dropout,
    keep_mask,
    masked_dropout,
)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_masks_drop_at_the_rate_and_scale_what_they_keep(p, dtype):
    torch.manual_seed(0)
    x = torch.ones(400, 1001, dtype=dtype)
    y = masked_dropout(x, p, training=True)
    assert y.shape == x.shape and y.dtype == dtype
    dropped = (y == 0).double().mean().item()
    # 400,400 elements: the standard error of the rate is below 8e-4
    assert dropped == pytest.approx(p, abs=4e-3)
    kept = y[y != 0].float()
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - p)), rtol=1e-2)
    # the mean is kept, as torch's dropout keeps it
    assert y.float().mean().item() == pytest.approx(1.0, abs=0.02)


def test_the_mask_is_not_periodic_within_a_draw():
    torch.manual_seed(1)
    keep = keep_mask(torch.Size([4, 100_000]), 0.5, torch.device("cpu"))
    # each 64-bit draw gives four elements: neighbours must still be independent
    a, b = keep[:, :-1].double(), keep[:, 1:].double()
    correlation = ((a - a.mean()) * (b - b.mean())).mean() / (a.std() * b.std())
    assert abs(correlation.item()) < 0.01


def test_the_gradient_is_the_mask_scaled():
    torch.manual_seed(0)
    x = torch.randn(64, 33, requires_grad=True)
    y = masked_dropout(x, 0.3, training=True)
    grad = torch.randn_like(y)
    y.backward(grad)
    keep = y != 0
    torch.testing.assert_close(x.grad, torch.where(keep, grad / 0.7, 0))
    torch.testing.assert_close(y, torch.where(keep, x.detach() / 0.7, 0))


def test_seeds_repeat_masks_and_prediction_is_untouched():
    x = torch.randn(10, 50)
    torch.manual_seed(3)
    a = masked_dropout(x, 0.2, training=True)
    torch.manual_seed(3)
    b = masked_dropout(x, 0.2, training=True)
    assert torch.equal(a, b)
    assert masked_dropout(x, 0.2, training=False) is x or torch.equal(
        masked_dropout(x, 0.2, training=False), x)
    assert torch.equal(masked_dropout(x, 0.0, training=True), x)


def test_modules_are_switched_in_place():
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.25), nn.Sequential(nn.Dropout(0.5)))
    assert cheap_dropout(module) is module
    assert [type(m) for m in module.modules() if isinstance(m, nn.Dropout)] == [CheapDropout] * 2
    assert module[1].p == 0.25 and module[2][0].p == 0.5
    module.eval()
    x = torch.randn(3, 4)
    assert torch.equal(module[1](x), x)


def test_training_switches_the_encoders_and_the_heads_dropout(tiny_bert):
    nlp = spacy.blank("en")
    config = model_config(tiny_bert, heads={"dropout": 0.1})
    nlp.add_pipe(PIPE, config={"model": config})
    nlp.get_pipe(PIPE).add_label("protein")
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    model = nlp.get_pipe(PIPE).model
    heads = torch_module(model.get_ref("heads"))
    assert any(type(m) is CheapDropout for m in heads.modules())
    nlp.update(make_examples(nlp, TRAIN[:2]), drop=0.1)
    (transformer,) = hf_transformers(model)
    dropouts = [type(m) for m in transformer.modules() if isinstance(m, nn.Dropout)]
    assert dropouts and set(dropouts) == {CheapDropout}
