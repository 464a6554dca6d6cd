"""``nlp.initialize`` is reproducible for every architecture: the heads' initial weights come
from the config's seed, not from whatever drew from torch's RNG before, so one config gives
the same weights and predictions in ``spacy train`` (spaCy's ``init_nlp``) and from a plain
``nlp.initialize()``, and the torch RNG state a caller sees is left as it was."""

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.locate_label import TEXTS
from helpers.locate_label import model_config as locate_label_config
from helpers.multi_ner import model_config as multi_ner_config
from helpers.pipes import PIPE
from helpers.pipes import model_config as mrc_config
from spacy.training.initialize import init_nlp
from spacy.util import load_model_from_config, registry
from thinc.api import Config

SAMPLE = Path(__file__).parents[1] / "spacy_nested_mrc" / "sample"
CONFIG = """
[paths]
train = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["nested_mrc_ner"]

[components]

[components.nested_mrc_ner]
factory = "nested_mrc_ner"

[corpora]

[corpora.train]
@readers = "spacy-nested-mrc.JsonlCorpus.v1"
path = ${paths.train}
limit = 8

[corpora.dev]
@readers = "spacy-nested-mrc.JsonlCorpus.v1"
path = ${paths.train}
limit = 8

[training]
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
"""


def pipeline_config(kind: str, encoder: str, seed: int) -> Config:
    """A pipeline of one architecture on the tiny BERT whose untrained heads predict spans."""
    if kind == "mrc":
        model = mrc_config(encoder, heads={"boundary_prior": 0.0})
    elif kind == "multi_ner":
        model = multi_ner_config(encoder, "multi_ner")
    else:  # every seed span proposed and decoded
        model = locate_label_config(encoder, decoder={"filter_threshold": 0.0, "nms_score": 0.0})
    config = Config().from_str(CONFIG, interpolate=False)
    config["paths"]["train"] = str(SAMPLE / "train.jsonl")
    config["system"]["seed"] = seed
    config["components"][PIPE]["model"] = model
    return config


def initialized(config: Config):
    """The pipeline initialized by ``nlp.initialize()`` outside ``spacy train``, checking
    that the torch RNG state is left as it was."""
    nlp = load_model_from_config(config, auto_fill=True)
    corpus = registry.resolve(config.interpolate()["corpora"])["train"]
    before = torch.get_rng_state()
    nlp.initialize(lambda: corpus(nlp))
    assert torch.equal(torch.get_rng_state(), before)
    return nlp


def heads_state(nlp) -> dict:
    return nlp.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"].state_dict()


def predictions(nlp):
    output = nlp.get_pipe(PIPE).predict([nlp.make_doc(text) for text in TEXTS])
    return output.spans, output.scores


@pytest.mark.parametrize("kind", ["mrc", "multi_ner", "locate_label"])
def test_initialize_is_reproducible(kind, tiny_bert):
    config = pipeline_config(kind, tiny_bert, seed=0)
    in_training = init_nlp(config)  # as `spacy train`: fix_random_seed, then initialize
    torch.manual_seed(1234)  # whatever drew from the global RNG before
    torch.rand(7)
    first, second = initialized(config), initialized(config)
    expected = heads_state(in_training)
    assert expected
    for nlp in (first, second):
        state = heads_state(nlp)
        assert state.keys() == expected.keys()
        for name, value in expected.items():
            assert torch.equal(state[name], value), name
    spans, scores = predictions(in_training)
    assert sum(len(s) for s in spans) > 0  # the comparison below has something to compare
    for nlp in (first, second):
        other_spans, other_scores = predictions(nlp)
        for a, b in zip(spans, other_spans):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(scores, other_scores):
            np.testing.assert_array_equal(a, b)
    reseeded = heads_state(initialized(pipeline_config(kind, tiny_bert, seed=1)))
    # the parameters drawn at random (not those filled with constants) differ
    assert any(
        not torch.equal(reseeded[name], value) for name, value in expected.items()
    )
