"""How an encoder computes its self-attention (the ``attention`` setting of the MRC family's
``QueryEncoder.v1`` and of ``TransformerModel.v1``): the implementation it is loaded with, at
initialization and when a saved pipeline is loaded (Hugging Face does not save it), and the
same predictions and gradients either way."""

import numpy as np
import pytest
import spacy
import torch
from helpers.encoders import make_tiny_bert
from helpers.locate_label import shared_pipeline
from helpers.pipes import PIPE, TRAIN, initialized_nlp, make_examples, model_config
from transformers import BertTokenizerFast, MPNetConfig, MPNetModel

from spacy_nested_mrc.encoder.hf import attention_implementation, hf_transformers

TEXTS = [text for text, _ in TRAIN]


def mrc_model(encoder: str, attention: str) -> dict:
    return model_config(encoder, encoder={"attention": attention})


def implementation(nlp, name: str = PIPE) -> str:
    (transformer,) = hf_transformers(nlp.get_pipe(name).model)
    return transformer.config._attn_implementation


@pytest.mark.parametrize("attention,expected", [("eager", "eager"), ("sdpa", "sdpa"),
                                                ("auto", "eager")])
def test_query_encoder_loads_the_attention_it_is_given(tiny_bert, attention, expected):
    assert implementation(initialized_nlp(tiny_bert)) == "eager"  # the default: auto
    config = mrc_model(tiny_bert, attention)
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": config})
    for label in ("DNA", "protein"):
        nlp.get_pipe(PIPE).add_label(label)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    assert implementation(nlp) == expected


def test_a_saved_pipeline_loads_the_attention_of_its_config(tiny_bert, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": mrc_model(tiny_bert, "sdpa")})
    nlp.get_pipe(PIPE).add_label("protein")
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    nlp.to_disk(tmp_path / "sdpa")
    assert implementation(spacy.load(tmp_path / "sdpa")) == "sdpa"
    override = {"components": {PIPE: {"model": {"encoder": {"attention": "eager"}}}}}
    eager = spacy.load(tmp_path / "sdpa", config=override)
    assert implementation(eager) == "eager"
    sdpa = spacy.load(tmp_path / "sdpa")
    # the same weights, the same predictions
    for a, b in zip(eager.pipe(TEXTS), sdpa.pipe(TEXTS)):
        assert [(s.start, s.end, s.label_) for s in a.spans["nested"]] == \
            [(s.start, s.end, s.label_) for s in b.spans["nested"]]
        np.testing.assert_allclose(a.spans["nested"].attrs["scores"],
                                   b.spans["nested"].attrs["scores"], atol=1e-5)


def test_eager_and_sdpa_train_alike(tiny_bert):
    losses = {}
    grads = {}
    for attention in ("eager", "sdpa"):
        nlp = spacy.blank("en")
        config = mrc_model(tiny_bert, attention)
        config["encoder"]["precision"] = "fp32"
        nlp.add_pipe(PIPE, config={"model": config})
        for label in ("DNA", "cell_line", "cell_type", "protein"):
            nlp.get_pipe(PIPE).add_label(label)
        spacy.util.fix_random_seed(0)
        nlp.initialize(lambda nlp=nlp: make_examples(nlp, TRAIN[:1]))
        assert implementation(nlp) == attention
        examples = make_examples(nlp, TRAIN[:3])
        losses[attention] = nlp.update(examples, drop=0.0)[PIPE]
        (transformer,) = hf_transformers(nlp.get_pipe(PIPE).model)
        grads[attention] = [p.grad.clone() for p in transformer.parameters()
                            if p.grad is not None]
    assert losses["eager"] == pytest.approx(losses["sdpa"], rel=1e-5)
    assert len(grads["eager"]) == len(grads["sdpa"]) > 0
    for a, b in zip(grads["eager"], grads["sdpa"]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_an_unknown_attention_is_refused(tiny_bert):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="NME006.*attention"):
        nlp.add_pipe(PIPE, config={"model": mrc_model(tiny_bert, "flash")})


def test_sdpa_on_an_encoder_without_it_is_a_coded_error(tmp_path):
    bert = make_tiny_bert(tmp_path / "bert")
    folder = tmp_path / "mpnet"
    config = MPNetConfig(vocab_size=BertTokenizerFast.from_pretrained(str(bert)).vocab_size,
                         hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=130)
    assert not MPNetModel._supports_sdpa
    MPNetModel(config).save_pretrained(str(folder))
    BertTokenizerFast.from_pretrained(str(bert)).save_pretrained(str(folder))
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": mrc_model(str(folder), "sdpa")})
    nlp.get_pipe(PIPE).add_label("protein")
    with pytest.raises(ValueError, match="NME231.*sdpa"):
        nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))


@pytest.mark.parametrize("attention,expected", [("sdpa", "sdpa"), ("auto", "eager")])
def test_transformer_component_loads_the_attention_it_is_given(tiny_bert, tmp_path,
                                                                attention, expected):
    key = "components.transformer.model.attention"
    nlp = shared_pipeline(tiny_bert, tmp_path, {key: attention})
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    assert implementation(nlp, "transformer") == expected
    nlp.to_disk(tmp_path / "saved")
    assert implementation(spacy.load(tmp_path / "saved"), "transformer") == expected


def test_auto_is_eager_on_a_cpu_and_the_models_default_elsewhere():
    assert attention_implementation("auto", "cpu") == "eager"
    assert attention_implementation("auto", "cuda") is None
    assert attention_implementation("sdpa", "cpu") == "sdpa"
