"""``spacy train`` end to end on the sample data with the tiny BERT, on CPU (and on GPU where
one is present)."""

import json
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from spacy.cli.train import train
from thinc.api import Config

# tiny models: one thread avoids OpenMP spinning on busy CPUs

ROOT = Path(__file__).parents[2]
CPU_CONFIG = ROOT / "configs" / "mrc_cpu.cfg"
GPU_CONFIGS = sorted((ROOT / "configs").glob("*_gpu.cfg"))
CPU_CONFIGS = sorted((ROOT / "configs").glob("*_cpu.cfg"))
# the two steps of the recipe of docs/training.md (intermediate corpora, then GENIA from
# them), trained by their own test below
RECIPE = ("mrc_biomed_cpu", "mrc_packed_from_biomed_cpu")
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
    paths = config.get("paths", {})
    if "encoder" in paths:
        overrides = {"paths.encoder": encoder}
    else:
        overrides = {f"components.{PIPE}.model.encoder.name": encoder}
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


@pytest.mark.slow
def test_spacy_train_on_cpu(tiny_bert, tmp_path):
    config = small_training(Config().from_disk(CPU_CONFIG, interpolate=False), max_steps=10)
    config["components"][PIPE]["model"]["heads"]["match_hidden"] = 32
    config_path = tmp_path / "config.cfg"
    config.to_disk(config_path)
    output = tmp_path / "output"
    train(config_path, output, overrides=data_overrides(config, tiny_bert, limit=10))
    for name in ("model-last", "model-best"):
        assert (output / name / "config.cfg").exists()
    nlp = spacy.load(output / "model-last")
    assert nlp.pipe_names == [PIPE]
    assert nlp.config.interpolate()["components"][PIPE]["model"]["encoder"]["name"] == tiny_bert
    check_predictions(nlp)
    # the trained pipeline carries its encoder: the tiny BERT folder is not needed
    gone = {"components": {PIPE: {"model": {"encoder": {"name": str(tmp_path / "gone")}}}}}
    check_predictions(spacy.load(output / "model-last", config=gone))
    meta = spacy.load(output / "model-best").meta
    assert f"spans_{KEY}_f" in meta["performance"]
    assert 0.0 <= meta["performance"][f"spans_{KEY}_f"] <= 1.0


def test_trained_pipeline_predicts_the_same_after_reload(tiny_bert, tmp_path):
    """The pipeline written by ``spacy train`` loads and predicts identically twice."""
    config = small_training(Config().from_disk(CPU_CONFIG, interpolate=False), max_steps=3)
    config["components"][PIPE]["model"]["heads"]["match_hidden"] = 16
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


ON_GENIA = [p for p in CPU_CONFIGS if p.stem not in RECIPE]


@pytest.mark.parametrize("config_path", ON_GENIA, ids=[p.stem for p in ON_GENIA])
def test_every_shipped_config_trains_with_spacy_train(config_path, tiny_bert, tmp_path):
    """Each CPU config of configs/ trains a few steps with ``spacy train`` on the tiny encoder."""
    config = small_training(Config().from_disk(config_path, interpolate=False), max_steps=4)
    path = tmp_path / "config.cfg"
    config.to_disk(path)
    output = tmp_path / "output"
    train(path, output, overrides=data_overrides(config, tiny_bert, limit=6))
    check_predictions(spacy.load(output / "model-last"))


@pytest.mark.slow
def test_spacy_train_tuning_callback_saves_a_tuned_model_best(tiny_bert, tmp_path):
    """``[training.before_to_disk]`` with the tuning callback: model-best holds the tuned
    thresholds and calibration in its config, and predicts with them when loaded."""
    config = small_training(Config().from_disk(CPU_CONFIG, interpolate=False), max_steps=6)
    config["components"][PIPE]["model"]["heads"]["match_hidden"] = 16
    config["training"]["before_to_disk"] = {
        "@callbacks": "spacy-nested-mrc.tune_thresholds.v1",
        "dev_path": "${paths.dev}",
        "gate_grid": [0.5],
        "score_grid": [0.3, 0.6],
    }
    path = tmp_path / "config.cfg"
    config.to_disk(path)
    output = tmp_path / "output"
    train(path, output, overrides=data_overrides(config, tiny_bert, limit=6))
    best = spacy.load(output / "model-best")
    settings = best.meta["tuning"]["settings"]
    assert best.config["components"][PIPE]["threshold"] == settings[f"components.{PIPE}.threshold"]
    assert best.get_pipe(PIPE).cfg["calibration"] == settings[f"components.{PIPE}.calibration"]
    check_predictions(best)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("config_path", GPU_CONFIGS, ids=[p.stem for p in GPU_CONFIGS])
def test_spacy_train_on_gpu(config_path, tiny_bert, tmp_path):
    """``spacy train --gpu-id 0`` runs each GPU config of configs/ for a few steps (the
    recipe's second from a small intermediate pipeline)."""
    from helpers.biomed import intermediate_pipeline

    config = small_training(Config().from_disk(config_path, interpolate=False), max_steps=6)
    overrides = data_overrides(config, tiny_bert, limit=10)
    if "paths" in config and "intermediate" in config["paths"]:
        overrides["paths.intermediate"] = str(
            intermediate_pipeline(tiny_bert, tmp_path / "intermediate"))
        config["components"][PIPE]["model"]["heads"]["match_hidden"] = 16  # the pipeline's
    path = tmp_path / "config.cfg"
    config.to_disk(path)
    output = tmp_path / "output"
    train(path, output, use_gpu=0, overrides=overrides)
    check_predictions(spacy.load(output / "model-last"))


def test_there_is_a_gpu_config_for_every_cpu_config():
    """Every architecture with a CPU config has a GPU config (an encoder named in a CPU
    config's name, ``mrc_packed_mpnet_cpu``, is not another architecture)."""
    assert len(GPU_CONFIGS) >= 2
    assert {p.stem[: -len("_gpu")] for p in GPU_CONFIGS} == {
        p.stem[: -len("_cpu")].removesuffix("_mpnet") for p in CPU_CONFIGS
    }


def test_demo_trains_saves_into_a_new_folder_and_predict_reads_it(tiny_bert, tmp_path, capsys):
    """The README's main command (``python -m spacy_nested_mrc demo``), here on the tiny
    BERT: it trains on the shipped sample, saves into a folder whose parents do not exist
    yet, and ``predict`` loads that pipeline and prints the text and its spans."""
    from spacy_nested_mrc.cli import main

    output = tmp_path / "not" / "yet" / "demo"
    text = "IL-2 gene expression in T cells ."
    assert main(["demo", "--encoder", tiny_bert, "--epochs", "1", "--output", str(output),
                 "--text", text]) == 0
    printed = capsys.readouterr().out
    assert "epoch 1/1" in printed and "sample dev: P" in printed and text in printed
    nlp = spacy.load(output)
    assert nlp.pipe_names == [PIPE]
    assert nlp.config["components"][PIPE]["model"]["encoder"]["name"] == tiny_bert
    assert main(["predict", str(output), text]) == 0
    assert text in capsys.readouterr().out
    # no span longer than the longest entity of the sample plus the margin
    from spacy_nested_mrc.cli.demo import DEMO_TEXT
    from spacy_nested_mrc.corpora.jsonl import SAMPLE_DIR

    longest = max(e["end"] - e["start"] for line in (SAMPLE_DIR / "train.jsonl").open()
                  for e in json.loads(line)["entities"])
    limit = nlp.get_pipe(PIPE).model.attrs["span_limit"]
    assert longest + 2 <= limit <= longest + 2 + 3  # spaCy may split an entity's tokens
    doc = nlp(DEMO_TEXT)
    assert all(len(span) <= limit for span in doc.spans["nested"])
    assert "Spans are at most" in printed


@pytest.mark.slow
def test_recipe_trains_on_the_biomedical_corpora_then_on_genia_from_them(tmp_path):
    """configs/mrc_biomed_cpu.cfg on the eleven corpora (a stand-in of a few sentences
    each, every corpus on its own labels), then configs/mrc_packed_from_biomed_cpu.cfg from
    its pipeline: GENIA's labels, asked by GENIA's questions, the encoder and heads carried
    over."""
    from helpers.biomed import biomed_folder
    from helpers.encoders import make_tiny_bert

    # the tiny vocabulary spells a natural question in many wordpieces: room for them
    encoder = str(make_tiny_bert(tmp_path / "bert", max_positions=512))
    config = small_training(Config().from_disk(ROOT / "configs" / "mrc_biomed_cpu.cfg",
                                               interpolate=False), max_steps=4)
    config["corpora"]["train"]["size"] = 20
    config["corpora"]["dev"]["size"] = 6
    config["components"][PIPE]["model"]["heads"]["match_hidden"] = 16
    path = tmp_path / "biomed.cfg"
    config.to_disk(path)
    train(path, tmp_path / "biomed", overrides={
        "paths.biomed": str(biomed_folder(tmp_path / "corpora")), "paths.encoder": encoder})
    intermediate = spacy.load(tmp_path / "biomed" / "model-last").get_pipe(PIPE)
    assert {"GENE", "Disease", "Protein", "SO"} <= set(intermediate.labels)
    config = small_training(Config().from_disk(
        ROOT / "configs" / "mrc_packed_from_biomed_cpu.cfg", interpolate=False), max_steps=4)
    config["components"][PIPE]["model"]["heads"]["match_hidden"] = 16  # the intermediate's
    path = tmp_path / "from_biomed.cfg"
    config.to_disk(path)
    overrides = {"paths.intermediate": str(tmp_path / "biomed" / "model-last"),
                 "paths.encoder": encoder,
                 "paths.train": str(SAMPLE / "train.jsonl"),
                 "paths.dev": str(SAMPLE / "dev.jsonl"), "paths.train_limit": 6}
    train(path, tmp_path / "genia", overrides=overrides)
    nlp = spacy.load(tmp_path / "genia" / "model-last")
    pipe = nlp.get_pipe(PIPE)
    assert pipe.labels == ("DNA", "RNA", "cell_line", "cell_type", "protein")
    assert pipe.model.attrs["questions"]["RNA"].startswith("find every RNA")
    check_predictions(nlp)
