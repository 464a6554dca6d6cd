"""``spacy train`` end to end on the sample data with the tiny BERT, on CPU (and on GPU where
one is present)."""

from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from spacy.cli.train import train
from thinc.api import Config

# tiny models: one thread avoids OpenMP spinning on busy CPUs

ROOT = Path(__file__).parents[1]
CPU_CONFIG = ROOT / "configs" / "mrc_cpu.cfg"
GPU_CONFIG = ROOT / "configs" / "mrc_gpu.cfg"
SAMPLE = ROOT / "spacy_nested_mrc" / "sample"
PIPE = "nested_mrc_ner"
KEY = "nested"
TEXTS = [
    "Induction of IL-2 gene expression in human T cells .",
    "c-fos mRNA levels rose in Jurkat cells .",
    "",
]


def small_training(config: Config, *, max_steps: int) -> Config:
    """Shrink a shipped config: few steps, small batches, frequent evaluation."""
    config = config.copy()
    training = config["training"]
    training["max_epochs"] = 0
    training["max_steps"] = max_steps
    training["eval_frequency"] = 5
    size = training["batcher"]["size"]
    if isinstance(size, dict) and "start" in size:
        size["start"] = size["stop"] = 60  # words: a few sentences a batch
    if isinstance(training["optimizer"].get("learn_rate"), dict):
        schedule = training["optimizer"]["learn_rate"]
        if "warmup_steps" in schedule:
            schedule["warmup_steps"] = 2
            schedule["total_steps"] = max_steps
        if "initial_rate" in schedule:
            schedule["initial_rate"] = 1e-3
    return config


def data_overrides(config: Config, encoder: str, limit: int) -> dict:
    """Overrides of the data paths and the encoder that fit the config's sections."""
    overrides = {f"components.{PIPE}.model.encoder": encoder}
    paths = config.get("paths", {})
    for split in ("train", "dev"):
        if split in paths:
            overrides[f"paths.{split}"] = str(SAMPLE / f"{split}.jsonl")
        else:
            overrides[f"corpora.{split}.path"] = str(SAMPLE / f"{split}.jsonl")
    if "train_limit" in paths:
        overrides["paths.train_limit"] = limit
    else:
        overrides["corpora.train.limit"] = limit
    return overrides


def check_predictions(nlp):
    labels = set(nlp.get_pipe(PIPE).labels)
    assert {"DNA", "protein", "cell_type"} <= labels
    for doc in nlp.pipe(TEXTS):
        group = doc.spans[KEY]
        scores = group.attrs["scores"]
        assert len(scores) == len(group)
        assert ((scores >= 0) & (scores <= 1)).all()
        for span in group:
            assert 0 <= span.start < span.end <= len(doc)
            assert span.label_ in labels


def test_spacy_train_on_cpu(tiny_bert, tmp_path):
    config = small_training(Config().from_disk(CPU_CONFIG, interpolate=False), max_steps=10)
    config["components"][PIPE]["model"]["match_hidden"] = 32
    config_path = tmp_path / "config.cfg"
    config.to_disk(config_path)
    output = tmp_path / "output"
    train(config_path, output, overrides=data_overrides(config, tiny_bert, limit=10))
    for name in ("model-last", "model-best"):
        assert (output / name / "config.cfg").exists()
    nlp = spacy.load(output / "model-last")
    assert nlp.pipe_names == [PIPE]
    assert nlp.config["components"][PIPE]["model"]["encoder"] == tiny_bert
    check_predictions(nlp)
    # the trained pipeline carries its encoder: the tiny BERT folder is not needed
    gone = {"components": {PIPE: {"model": {"encoder": str(tmp_path / "gone")}}}}
    check_predictions(spacy.load(output / "model-last", config=gone))
    meta = spacy.load(output / "model-best").meta
    assert f"spans_{KEY}_f" in meta["performance"]
    assert 0.0 <= meta["performance"][f"spans_{KEY}_f"] <= 1.0


def test_trained_pipeline_predicts_the_same_after_reload(tiny_bert, tmp_path):
    """The pipeline written by ``spacy train`` loads and predicts identically twice."""
    config = small_training(Config().from_disk(CPU_CONFIG, interpolate=False), max_steps=3)
    config["components"][PIPE]["model"]["match_hidden"] = 16
    config_path = tmp_path / "config.cfg"
    config.to_disk(config_path)
    train(config_path, tmp_path / "out", overrides=data_overrides(config, tiny_bert, limit=4))
    first = spacy.load(tmp_path / "out" / "model-last")
    second = spacy.load(tmp_path / "out" / "model-last")
    for a, b in zip(first.pipe(TEXTS), second.pipe(TEXTS)):
        assert [(s.start, s.end, s.label_) for s in a.spans[KEY]] == [
            (s.start, s.end, s.label_) for s in b.spans[KEY]
        ]
        np.testing.assert_allclose(a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_spacy_train_on_gpu(tiny_bert, tmp_path):
    if not GPU_CONFIG.exists():
        pytest.skip(f"{GPU_CONFIG.relative_to(ROOT)} does not exist")
    config = small_training(Config().from_disk(GPU_CONFIG, interpolate=False), max_steps=6)
    config_path = tmp_path / "config.cfg"
    config.to_disk(config_path)
    output = tmp_path / "output"
    train(config_path, output, use_gpu=0, overrides=data_overrides(config, tiny_bert, limit=10))
    nlp = spacy.load(output / "model-last")
    check_predictions(nlp)
