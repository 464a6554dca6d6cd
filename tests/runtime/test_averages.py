"""``[training.optimizer] use_averages = true``: ``spacy train`` evaluates and saves a pipe
inside ``nlp.use_params(optimizer.averages)``. The torch layers' parameters (the encoder's and
the heads') must then be the optimizer's moving averages, and be restored after. thinc's own
torch shim reads keys its optimizers never write, so without the package's shims the averages
of torch layers are silently unused."""

from typing import List

import numpy as np
import pytest
import spacy
from helpers.locate_label import initialized_shipped
from helpers.pipes import TRAIN, initialized_nlp, make_examples, torch_weights
from spacy.util import fix_random_seed
from thinc.api import Adam, Optimizer

from spacy_nested_mrc.training.optimizer import create_torch_adam


def snapshot(weights) -> List[np.ndarray]:
    return [p.detach().numpy().copy() for p in weights.values()]


def train(nlp, optimizer: Optimizer, steps: int = 4) -> None:
    fix_random_seed(0)
    examples = make_examples(nlp, TRAIN)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, drop=0.0)


def span_scores(nlp) -> List[float]:
    return [float(s) for doc in nlp.pipe([t for t, _ in TRAIN[:3]])
            for s in doc.spans["nested"].attrs["scores"]]


def frozen_word_embeddings(nlp) -> bool:
    """Whether a pipe's config freezes its encoder's word embeddings (the MRC family's
    encoder block, Locate-and-Label's own transformer or a shared ``transformer``
    component)."""
    components = nlp.config["components"]
    model = components["nested_mrc_ner"]["model"]
    encoders = [components.get("transformer", {}).get("model", {}), model.get("encoder", {}),
                model.get("tok2vec", {}).get("transformer", {})]
    return any(encoder.get("freeze_word_embeddings") for encoder in encoders)


def mrc_pipeline(encoder: str, tmp_path):
    return initialized_nlp(encoder)


def locate_label_pipeline(encoder: str, tmp_path):
    return initialized_shipped(encoder, tmp_path)


@pytest.mark.parametrize("build", [mrc_pipeline, locate_label_pipeline])
@pytest.mark.parametrize("make_optimizer", [
    lambda: Adam(0.01, use_averages=True),
    lambda: create_torch_adam(0.01, use_averages=True),
])
def test_use_params_sets_torch_layers_to_their_averages(tiny_bert, tmp_path, build,
                                                        make_optimizer):
    nlp = build(tiny_bert, tmp_path)
    optimizer = make_optimizer()
    train(nlp, optimizer)
    weights = torch_weights(nlp)
    averaged = {key: p for key, p in weights.items() if key in optimizer.averages}
    # the encoder and the heads learn, and each parameter they use has an average (BERT's
    # pooler reads no token vector: no gradient, no update; a frozen word-embedding matrix,
    # as the shipped Locate-and-Label config has, is never stepped either)
    unused = sorted(name for key, name in weights if (key, name) not in averaged)
    expected = ["pooler.dense.bias", "pooler.dense.weight"]
    if frozen_word_embeddings(nlp):
        expected = sorted([*expected, "embeddings.word_embeddings.weight"])
    assert len(averaged) > 10 and unused == expected
    raw, raw_scores = snapshot(weights), span_scores(nlp)
    with nlp.use_params(optimizer.averages):
        for key, param in averaged.items():
            np.testing.assert_array_equal(param.detach().numpy(), optimizer.averages[key])
        moved = sum(not np.array_equal(a, p.detach().numpy())
                    for a, p in zip(raw, weights.values()))
        assert moved > len(weights) // 2
        averaged_scores = span_scores(nlp)
        saved = nlp.to_bytes()
    # restored on exit, to the very tensors
    for before, param in zip(raw, weights.values()):
        np.testing.assert_array_equal(param.detach().numpy(), before)
    assert span_scores(nlp) == raw_scores
    assert averaged_scores != raw_scores
    # what `spacy train` saves inside the context is the averaged pipeline
    loaded = spacy.blank("en").from_config(nlp.config)
    loaded.from_bytes(saved)
    reloaded = torch_weights(loaded)
    assert len(reloaded) == len(weights)
    for (_, param), key in zip(reloaded.items(), weights):
        if key in averaged:
            np.testing.assert_array_equal(param.detach().numpy(), optimizer.averages[key])


def test_frozen_parameters_keep_their_weights(tiny_bert, tmp_path):
    """A parameter the optimizer never stepped (the frozen word embeddings) has no average and
    computes with its own weights inside the context."""
    nlp = initialized_nlp(tiny_bert, model={"encoder": {"freeze_word_embeddings": True}})
    optimizer = Adam(0.01, use_averages=True)
    train(nlp, optimizer, steps=2)
    weights = torch_weights(nlp)
    frozen = {k: p for k, p in weights.items() if k not in optimizer.averages}
    assert sorted(name for _, name in frozen) == [
        "embeddings.word_embeddings.weight", "pooler.dense.bias", "pooler.dense.weight"]
    before = snapshot(frozen)
    with nlp.use_params(optimizer.averages):
        for value, param in zip(before, frozen.values()):
            np.testing.assert_array_equal(param.detach().numpy(), value)
