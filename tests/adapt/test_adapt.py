"""Adapting an encoder (``python -m spacy_nested_mrc adapt``) on the tiny BERT built here."""

import gzip
import json
import os
import re
import warnings
from dataclasses import replace
from pathlib import Path

import numpy
import pytest
import spacy
import torch
from safetensors.torch import load_file
from spacy.cli.train import train
from transformers import AutoModel, AutoTokenizer

from spacy_nested_mrc.adapt import AdaptSettings, adapt_encoder, load_settings
from spacy_nested_mrc.adapt.masking import IGNORE, mask_sequence
from spacy_nested_mrc.adapt.text import TextReport, iter_sequences
from spacy_nested_mrc.cli import main

ROOT = Path(__file__).parents[2]
CONFIG = ROOT / "configs" / "adapt" / "adapt_cpu.cfg"
SAMPLE = ROOT / "spacy_nested_mrc" / "sample"
SENTENCES = [
    "Induction of IL-2 gene expression in human T cells .",
    "c-fos mRNA levels rose in Jurkat cells .",
    "NF-kappa B binding site in the promoter of the gene .",
    "The receptor kinase activation in T cell line .",
]


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text("\n".join(SENTENCES * 10) + "\n", encoding="utf8")
    return path


def settings_for(encoder: str, text: Path, **changes) -> AdaptSettings:
    values = dict(encoder=encoder, text=str(text), max_length=24, batch_size=4, max_steps=6,
                  warmup_steps=1, learn_rate=1e-3, precision="fp32", checkpoint_every=2,
                  eval_every=3, held_out_sequences=4, shuffle_buffer=8)
    values.update(changes)
    return AdaptSettings(**values)


def encoder_weights(folder: Path) -> dict:
    return load_file(str(folder / "model.safetensors"))


def test_sequences_pack_whole_words(tiny_bert, text_file):
    settings = settings_for(tiny_bert, text_file, max_length=16)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    sequences = list(iter_sequences(settings, tokenizer, str(text_file)))
    assert all(len(seq.input_ids) <= 16 for seq in sequences)
    assert all(seq.input_ids[0] == tokenizer.cls_token_id for seq in sequences)
    assert all(seq.input_ids[-1] == tokenizer.sep_token_id for seq in sequences)
    # the words of the text, in order, and none cut between two sequences
    words = [word for seq in sequences for word in _words(tokenizer, seq)]
    expected = [w.lower() for w in " ".join(SENTENCES * 10).split()]
    assert words == expected


def _words(tokenizer, seq):
    pieces = tokenizer.convert_ids_to_tokens(seq.input_ids.tolist())
    words = {}
    for piece, word in zip(pieces, seq.word_ids.tolist()):
        if word >= 0:
            words[word] = words.get(word, "") + piece.replace("##", "")
    return [words[i] for i in sorted(words)]


def test_whole_word_masking(tiny_bert, text_file):
    settings = settings_for(tiny_bert, text_file, max_length=64, mask_probability=0.3)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    sequences = list(iter_sequences(settings, tokenizer, str(text_file)))
    rng = numpy.random.default_rng(0)
    chosen_share = []
    for seq in sequences:
        inputs, labels = mask_sequence(seq, settings, rng, tokenizer.mask_token_id,
                                       len(tokenizer))
        word_ids = seq.word_ids.tolist()
        predicted = {w for w, label in zip(word_ids, labels) if label != IGNORE}
        assert -1 not in predicted  # special tokens are never predicted
        for index, word in enumerate(word_ids):  # every piece of a chosen word, or none
            assert (labels[index] != IGNORE) == (word in predicted)
            if labels[index] != IGNORE:
                assert labels[index] == seq.input_ids[index]
            else:
                assert inputs[index] == seq.input_ids[index]
        chosen_share.append(sum(label != IGNORE for label in labels) / (len(labels) - 2))
    assert 0.2 < float(numpy.mean(chosen_share)) < 0.45


@pytest.mark.slow
def test_adapt_output_loads_and_trains_a_pipeline(tiny_bert, text_file, tmp_path):
    output = tmp_path / "adapted"
    with pytest.warns(UserWarning, match="NMW181"):  # the tiny BERT has no LM head
        result = adapt_encoder(settings_for(tiny_bert, text_file), output)
    assert result.steps == 6 and result.words > 0 and result.new_head
    summary = json.loads((output / "adapt.json").read_text())
    assert [row["step"] for row in summary["held_out"]] == [0, 3, 6]
    assert summary["seconds_per_million_words"] > 0
    encoder = AutoModel.from_pretrained(str(output / "encoder"))
    original = AutoModel.from_pretrained(tiny_bert)
    changed = [not torch.equal(a, b) for a, b in
               zip(encoder.state_dict().values(), original.state_dict().values())]
    assert any(changed)
    # as paths.encoder of a shipped config: trains and predicts
    config = spacy.util.load_config(ROOT / "configs" / "mrc_packed_cpu.cfg")
    overrides = {"paths.encoder": str(output / "encoder"),
                 "paths.train": str(SAMPLE / "train.jsonl"),
                 "paths.dev": str(SAMPLE / "dev.jsonl"), "paths.train_limit": 8,
                 "training.max_epochs": 0, "training.max_steps": 3,
                 "training.eval_frequency": 3, "nlp.batch_size": 8}
    assert "encoder" in config["paths"]
    train(ROOT / "configs" / "mrc_packed_cpu.cfg", tmp_path / "trained", overrides=overrides)
    nlp = spacy.load(tmp_path / "trained" / "model-last")
    doc = nlp("Induction of IL-2 gene expression in human T cells.")
    assert "nested" in doc.spans and len(doc.spans["nested"].attrs["scores"]) == len(
        doc.spans["nested"])


@pytest.mark.slow
def test_held_out_loss_falls_on_repeated_text(tiny_bert, text_file, tmp_path):
    settings = settings_for(tiny_bert, text_file, max_steps=60, eval_every=20,
                            checkpoint_every=60, mask_probability=0.2, learn_rate=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reports = []
        result = adapt_encoder(settings, tmp_path / "out", on_step=reports.append)
    losses = [row["loss"] for row in result.held_out]
    assert [row["step"] for row in result.held_out] == [0, 20, 40, 60]
    assert [(info.step, info.held_out) for info in reports if info.held_out is not None] == [
        (row["step"], row["loss"]) for row in result.held_out]
    assert reports[0].loss is None and [info.step for info in reports[1:]] == list(range(1, 61))
    assert losses[-1] < losses[1] < losses[0]  # the encoder as it came is step 0
    assert losses[-1] < 0.7 * losses[0]


def test_resume_after_a_kill_gives_the_same_weights(tiny_bert, text_file, tmp_path):
    settings = settings_for(tiny_bert, text_file, max_steps=7, checkpoint_every=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = adapt_encoder(settings, tmp_path / "whole")

        class Killed(Exception):
            pass

        def kill_at_5(info):
            if info.step == 5:  # after the checkpoint of step 4: step 5 is lost
                raise Killed()

        with pytest.raises(Killed):
            adapt_encoder(settings, tmp_path / "killed", on_step=kill_at_5)
        with pytest.raises(ValueError, match="NME178"):  # a checkpoint is there: say so
            adapt_encoder(settings, tmp_path / "killed")
        with pytest.raises(ValueError, match="NME180"):  # other settings: refused
            adapt_encoder(replace(settings, learn_rate=5e-4), tmp_path / "killed", resume=True)
        resumed = adapt_encoder(settings, tmp_path / "killed", resume=True)
    assert resumed.resumed_from == 4 and resumed.steps == 7
    first = encoder_weights(tmp_path / "whole" / "encoder")
    second = encoder_weights(tmp_path / "killed" / "encoder")
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
    assert resumed.held_out[-1]["loss"] == whole.held_out[-1]["loss"]
    assert resumed.words == whole.words


def test_bf16_adaptation(tiny_bert, text_file, tmp_path, monkeypatch):
    """bf16 adaptation keeps float32 master weights, and bounds oneDNN's primitive cache
    before its first product (``onednn_cache``), which a resumed run need not share."""
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    settings = settings_for(tiny_bert, text_file, precision="bf16", max_steps=3, onednn_cache=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = adapt_encoder(settings, tmp_path / "out")
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "8"
    assert "onednn_cache" not in settings.identity()
    with pytest.raises(ValueError, match="NME003"):
        settings_for(tiny_bert, text_file, onednn_cache=-1)
    weights = encoder_weights(tmp_path / "out" / "encoder")
    assert all(t.dtype == torch.float32 for t in weights.values())  # master weights
    assert numpy.isfinite(result.held_out[-1]["loss"])


def test_bad_lines_are_counted_and_skipped(tiny_bert, tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    lines = [s.encode() for s in SENTENCES * 3]
    lines[1] = b"caf\xe9 \xff cells ."  # not UTF-8
    lines[2] = b""
    lines[3] = b"   "
    giant = ("gene " * 300).strip().encode()
    (folder / "a.txt").write_bytes(b"\n".join(lines + [giant]) + b"\n")
    with gzip.open(folder / "b.jsonl.gz", "wb") as f:
        f.write(b'{"text": "T cells ."}\n{"text": 3}\nnot json\n{"text": "IL-2 gene ."}\n')
    settings = settings_for(tiny_bert, folder, max_line_chars=1000, max_steps=12,
                            held_out_sequences=1)  # a pass and more
    with pytest.warns(UserWarning, match="NMW180") as caught:
        result = adapt_encoder(settings, tmp_path / "out")
    message = " ".join(str(w.message) for w in caught if "NMW180" in str(w.message))
    assert "undecodable" in message and "malformed" in message and "too long" in message
    # adapt's own words: its setting, no pipeline (annotate's wording)
    assert "over max_line_chars = 1,000: read in 2 pieces" in message
    assert "pipeline" not in message and "annotated" not in message
    report = result.text
    assert report["notes"] == {"undecodable": 1, "too_long": 1, "malformed": 2}
    assert report["blank"] == 2
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    words = sum(seq.words for seq in iter_sequences(settings, tokenizer, str(folder),
                                                    TextReport()))
    assert words > 300  # the giant line is read, in pieces


def test_config_and_cli(tiny_bert, text_file, tmp_path, capsys):
    settings = load_settings(CONFIG, {"paths.encoder": tiny_bert,
                                      "paths.text": str(text_file)})
    assert settings.precision == "bf16" and settings.text == str(text_file)
    with pytest.raises(ValueError, match="NME172"):
        load_settings(CONFIG, {"paths.encoder": tiny_bert})  # no text
    bad = tmp_path / "bad.cfg"
    bad.write_text(CONFIG.read_text().replace("[adapt]\n", "[adapt]\nmax_stepz = 3\n"))
    with pytest.raises(ValueError, match="NME172.*max_stepz"):
        load_settings(bad, {"paths.encoder": tiny_bert, "paths.text": str(text_file)})
    with pytest.raises(ValueError, match="NME003"):
        load_settings(CONFIG, {"paths.encoder": tiny_bert, "paths.text": str(text_file),
                               "adapt.batch_size": 0})
    args = ["adapt", str(CONFIG), str(tmp_path / "cli"), "--paths.encoder", tiny_bert,
            "--paths.text", str(text_file), "--adapt.max_steps", "2", "--adapt.max_length",
            "24", "--adapt.batch_size", "2", "--adapt.eval_every", "2",
            "--adapt.held_out_sequences", "2", "--adapt.precision", "fp32"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
        assert main(args) == 1  # the checkpoint is there: refused with a coded message
    err = capsys.readouterr()
    assert "NME178" in err.err
    assert "held-out loss" in err.out and "Saved the adapted encoder" in err.out
    # the encoder as it came is measured and printed before the first step
    assert re.search(r"^step +0 .*loss +- +held-out loss +\d", err.out, re.M)
    assert (tmp_path / "cli" / "encoder" / "config.json").exists()
