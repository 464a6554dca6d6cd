"""``freeze_word_embeddings`` (``QueryEncoder.v1`` and ``TransformerModel.v1``): in training the
encoder's word-embedding matrix takes no gradient and no update, whatever the optimizer, while
the rest of the encoder and the heads learn; a saved pipeline follows the setting its config
is loaded with."""

import pytest
import spacy
import torch
from helpers.locate_label import shared_pipeline
from helpers.pipes import LABELS, PIPE, TRAIN, initialized_nlp, make_examples, model_config
from spacy.util import registry
from thinc.api import Adam

from spacy_nested_mrc.encoder.hf import hf_transformers


def weights(nlp, name: str = PIPE):
    (transformer,) = hf_transformers(nlp.get_pipe(name).model)
    embeddings = transformer.embeddings
    return {"word": embeddings.word_embeddings.weight.detach().clone(),
            "position": embeddings.position_embeddings.weight.detach().clone(),
            "layer": transformer.encoder.layer[0].attention.self.query.weight.detach().clone()}


def train(nlp, optimizer, steps: int = 2) -> None:
    examples = make_examples(nlp, TRAIN)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, drop=0.0)


def optimizers():
    return [Adam(0.01), registry.optimizers.get("spacy-nested-mrc.TorchAdam.v1")(
        learn_rate=0.01)]


@pytest.mark.parametrize("optimizer", [0, 1], ids=["Adam.v1", "TorchAdam.v1"])
@pytest.mark.parametrize("frozen", [True, False])
def test_frozen_word_embeddings_are_not_trained(tiny_bert, frozen, optimizer):
    config = model_config(tiny_bert, encoder={"freeze_word_embeddings": frozen})
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": config})
    for label in LABELS:
        nlp.get_pipe(PIPE).add_label(label)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    before = weights(nlp)
    train(nlp, optimizers()[optimizer])
    after = weights(nlp)
    assert torch.equal(before["word"], after["word"]) is frozen
    assert not torch.equal(before["position"], after["position"])
    assert not torch.equal(before["layer"], after["layer"])


def test_a_loaded_pipeline_follows_the_setting_it_is_loaded_with(tiny_bert, tmp_path):
    nlp = initialized_nlp(tiny_bert)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline", config={
        f"components.{PIPE}.model.encoder.freeze_word_embeddings": True})
    before = weights(loaded)
    train(loaded, Adam(0.01))
    assert torch.equal(before["word"], weights(loaded)["word"])
    thawed = spacy.load(tmp_path / "pipeline")
    before = weights(thawed)
    train(thawed, Adam(0.01))
    assert not torch.equal(before["word"], weights(thawed)["word"])


def test_the_shared_transformer_freezes_its_word_embeddings(tiny_bert, tmp_path):
    nlp = shared_pipeline(tiny_bert, tmp_path, {
        "components.transformer.model.freeze_word_embeddings": True,
        "components.transformer.model.precision": "fp32"})
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    before = weights(nlp, "transformer")
    train(nlp, Adam(0.01))
    after = weights(nlp, "transformer")
    assert torch.equal(before["word"], after["word"])
    assert not torch.equal(before["layer"], after["layer"])
