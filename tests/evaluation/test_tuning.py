"""Tests of threshold tuning on dev (``tune``), score calibration, the ``spacy train``
callback, and settings given at load taking effect over what a pipeline saved."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
import spacy
from helpers.pipes import PIPE, TRAIN, blank_nlp, make_examples
from spacy.util import dot_to_dict, fix_random_seed

from spacy_nested_mrc.evaluation.tuning import create_tuning_callback, tune_pipeline
from spacy_nested_mrc.scoring.calibration import (
    calibrate,
    expected_calibration_error,
    fit_platt,
)

DEV = TRAIN[:3]
STEPS = 60  # short of a perfect fit: the curve has something to choose


@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory):
    """A pipeline trained a little, saved, and the JSONL file of its dev sentences."""
    fix_random_seed(0)
    nlp = blank_nlp(tiny_bert, model={"heads": {"match_candidates": "all",
                                                   "boundary_prior": 0.0}})
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(STEPS):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    folder = tmp_path_factory.mktemp("tuning")
    nlp.to_disk(folder / "pipeline")
    dev = folder / "dev.jsonl"
    with dev.open("w", encoding="utf8") as file_:
        for text, spans in DEV:
            tokens = text.split()
            entities = [{"start": s, "end": e, "type": label} for s, e, label in spans]
            file_.write(json.dumps({"tokens": tokens, "entities": entities}) + "\n")
    return folder / "pipeline", dev


def score_through_reader(pipeline, dev, **load_config) -> float:
    """F1 of a saved pipeline on dev as ``spacy evaluate`` gets it (the reader's examples)."""
    from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader

    nlp = spacy.load(pipeline, config=dot_to_dict(load_config))
    return nlp.evaluate(list(create_jsonl_reader(dev)(nlp)))["spans_nested_f"]


def test_tuning_reports_the_pipelines_own_score_and_saves_its_choice(saved, tmp_path):
    pipeline, dev = saved
    result = tune_pipeline(pipeline, dev, gate_grid=[0.3, 0.6], score_grid=[0.2, 0.5, 0.8])
    assert result.component == PIPE
    assert set(result.gates) == {"decoder.start_threshold", "decoder.end_threshold"}
    assert result.n_gold == sum(len(spans) for _, spans in DEV)
    # the point "as loaded" is the pipeline's own score, computed as spacy evaluate does
    assert result.before.f == pytest.approx(score_through_reader(pipeline, dev))
    assert result.best.f >= result.before.f
    assert result.best.f == max(p.f for p in result.curve if p.threshold in (0.2, 0.5, 0.8))
    from spacy_nested_mrc.evaluation.tuning import save_tuned

    tuned = save_tuned(pipeline, result, tmp_path / "tuned")
    config = tuned.config["components"][PIPE]
    assert (config["model"]["decoder"]["start_threshold"]
            == result.gates["decoder.start_threshold"])
    assert config["calibration"] == result.calibration
    assert tuned.meta["tuning"]["dev_after"]["f"] == result.best.f
    # a fresh load of what was saved predicts at the tuned point
    assert score_through_reader(tmp_path / "tuned", dev) == pytest.approx(result.best.f)
    assert "best" in result.table() and "calibrated" in result.summary()


def test_tuning_reports_each_label_and_warns_of_one_never_found(saved, tmp_path):
    """Per-label P/R/F at the chosen point; a label with gold on dev that no pass finds at
    any score (here one the pipe does not know, as a collapsed label looks) is warned
    (NMW160) and listed."""
    pipeline, dev = saved
    result = tune_pipeline(pipeline, dev, gate_grid=[0.5], score_grid=[0.5])
    assert "RNA" not in result.never_found
    assert all(result.labels[label]["r"] == 0.0 for label in result.never_found)
    assert sum(row["gold"] for row in result.labels.values()) == result.n_gold
    predicted = sum(row["predicted"] for row in result.labels.values())
    assert predicted == result.best.n_predicted
    lines = dev.read_text(encoding="utf8").splitlines()
    record = json.loads(lines[0])
    record["entities"].append({"start": 0, "end": 1, "type": "RNA"})
    changed = tmp_path / "dev.jsonl"
    changed.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", encoding="utf8")
    with pytest.warns(UserWarning, match="NMW160.*RNA"):
        result = tune_pipeline(pipeline, changed, gate_grid=[0.5], score_grid=[0.5])
    assert result.never_found["RNA"] == 1
    assert result.labels["RNA"]["r"] == 0.0 and "never found" in result.summary()


def test_per_label_thresholds_are_what_the_saved_pipeline_scores(saved, tmp_path):
    """``per_label``: each label's threshold is searched for the F1 of all labels, no lower
    than one threshold's on dev, written as ``label_thresholds`` (calibrated, as the
    component compares them), and a fresh load of the saved pipeline scores that F1."""
    from spacy_nested_mrc.evaluation.tuning import save_tuned

    pipeline, dev = saved
    grid = [0.1, 0.3, 0.5, 0.7, 0.9]
    result = tune_pipeline(pipeline, dev, gate_grid=[0.5], score_grid=grid, per_label=True)
    assert result.label_thresholds and set(result.label_thresholds.values()) <= set(grid)
    assert result.written.f >= result.best.f
    assert set(result.held_out) == {"one_threshold", "per_label"}
    assert all(0.0 <= f <= 1.0 for f in result.held_out.values())
    tuned = save_tuned(pipeline, result, tmp_path / "tuned")
    config = tuned.config["components"][PIPE]
    assert set(config["label_thresholds"]) == set(result.label_thresholds)
    assert tuned.meta["tuning"]["dev_after"]["f"] == result.written.f
    assert score_through_reader(tmp_path / "tuned", dev) == pytest.approx(result.written.f)
    assert "held-out halves" in result.summary()


def test_per_label_thresholds_that_lose_on_held_out_halves_warn(saved, monkeypatch):
    """NMW162 where the held-out halves score the per-label thresholds below one threshold,
    only when they were asked for."""
    from spacy_nested_mrc.evaluation import tuning

    pipeline, dev = saved
    monkeypatch.setattr(tuning, "held_out_f1",
                        lambda run, grid: {"one_threshold": 0.8, "per_label": 0.7})
    with pytest.warns(UserWarning, match="NMW162.*70.0.*80.0"):
        tune_pipeline(pipeline, dev, gate_grid=[0.5], score_grid=[0.3, 0.6], per_label=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*NMW160")
        tune_pipeline(pipeline, dev, gate_grid=[0.5], score_grid=[0.3, 0.6])


def _pass(scores, correct, labels, doc_index, gold_doc):
    from spacy_nested_mrc.evaluation.tuning import _Pass

    return _Pass(np.asarray(scores, float), np.asarray(correct, bool),
                 np.asarray(doc_index), len(gold_doc), np.asarray(labels, dtype=object),
                 gold_doc=np.asarray(gold_doc))


def test_label_threshold_search_finds_each_labels_own_cut():
    """Label A's spans are right only above 0.8, B's all right down to 0.2: one threshold
    must trade them off, a threshold per label takes both; the held-out halves, each alike,
    show the same gain."""
    from spacy_nested_mrc.evaluation.tuning import held_out_f1, search_label_thresholds

    one_doc = dict(
        scores=[0.9, 0.85, 0.6, 0.5, 0.3, 0.25, 0.2],
        correct=[1, 1, 0, 0, 1, 1, 1],
        labels=["A", "A", "A", "A", "B", "B", "B"],
    )
    run = _pass(**one_doc, doc_index=[0] * 7, gold_doc=[0] * 5)
    grid = [0.1, 0.2, 0.4, 0.8]
    cuts = search_label_thresholds(run, 0.4, grid)
    assert cuts == {"A": 0.8, "B": 0.2}
    two = _pass(**{k: v * 2 for k, v in one_doc.items()}, doc_index=[0] * 7 + [1] * 7,
                gold_doc=[0] * 5 + [1] * 5)
    held = held_out_f1(two, grid)
    assert held["per_label"] == pytest.approx(1.0)
    assert held["one_threshold"] < 0.9


def test_threshold_and_model_settings_given_at_load_take_effect(saved):
    pipeline, _ = saved
    nlp = spacy.load(pipeline, config=dot_to_dict({
        f"components.{PIPE}.threshold": 0.9,
        f"components.{PIPE}.calibration": [2.0, -1.0],
        f"components.{PIPE}.model.decoder.start_threshold": 0.7,
    }))
    pipe = nlp.get_pipe(PIPE)
    assert pipe.cfg["threshold"] == 0.9  # not the 0.5 the saved cfg holds
    assert pipe.cfg["calibration"] == [2.0, -1.0]
    assert pipe.model.get_ref("heads").attrs["torch_module"].decoder.start_threshold == 0.7
    assert pipe.labels == spacy.load(pipeline).get_pipe(PIPE).labels


def test_calibration_is_written_into_scores(saved):
    pipeline, _ = saved
    text = DEV[0][0]
    raw = spacy.load(pipeline, config=dot_to_dict({f"components.{PIPE}.threshold": 0.0}))
    mapped = spacy.load(pipeline, config=dot_to_dict({
        f"components.{PIPE}.threshold": 0.0, f"components.{PIPE}.calibration": [0.5, 1.0]}))
    doc_a, doc_b = raw(text), mapped(text)
    a, b = doc_a.spans["nested"], doc_b.spans["nested"]
    assert [s.text for s in a] == [s.text for s in b]
    expected = calibrate(np.asarray(a.attrs["scores"]), [0.5, 1.0])
    np.testing.assert_allclose(b.attrs["scores"], expected, rtol=1e-5)


@pytest.mark.parametrize("bad", [[0.0, 1.0], [-1.0, 0.0], [1.0], [1.0, 2.0, 3.0]])
def test_bad_calibration_fails_at_construction(tiny_bert, bad):
    with pytest.raises(ValueError, match="NME003"):
        blank_nlp(tiny_bert, calibration=bad)


def test_platt_fit_recovers_a_known_calibration():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.01, 0.99, 20000)
    truth = calibrate(scores, [2.0, -1.0])  # the true probability of each span
    correct = rng.uniform(size=len(scores)) < truth
    a, b = fit_platt(scores, correct)
    assert a == pytest.approx(2.0, abs=0.1) and b == pytest.approx(-1.0, abs=0.1)
    before = expected_calibration_error(scores, correct)
    after = expected_calibration_error(calibrate(scores, [a, b]), correct)
    assert after < 0.02 < before


def test_uncalibrate_inverts_calibrate():
    from spacy_nested_mrc.scoring.calibration import uncalibrate

    scores = np.asarray([0.0, 0.1, 0.5, 0.9, 1.0])
    back = uncalibrate(calibrate(scores, [0.7, -0.8]), [0.7, -0.8])
    np.testing.assert_allclose(back, scores, atol=1e-5)


def test_platt_fit_stays_finite_on_separable_scores():
    scores = np.linspace(0.5, 1.0, 2000)
    a, b = fit_platt(scores, scores > 0.9)  # every span above 0.9 right, every other wrong
    assert 0 < a < 100 and abs(b) < 100


def test_ece_of_perfect_and_useless_scores():
    correct = np.array([True, False] * 50)
    assert expected_calibration_error(np.full(100, 0.5), correct) == pytest.approx(0.0)
    assert expected_calibration_error(np.where(correct, 0.0, 1.0), correct) == 1.0
    assert expected_calibration_error(np.zeros(0), np.zeros(0, bool)) == 0.0
    assert fit_platt(np.full(4, 0.3), np.ones(4, bool)) == (1.0, 0.0)  # nothing to fit


def test_training_callback_tunes_only_best_checkpoints(saved):
    pipeline, dev = saved
    callback = create_tuning_callback(dev, gate_grid=[0.5], score_grid=[0.3, 0.5])
    nlp = spacy.load(pipeline)
    nlp.meta["performance"] = {"spans_nested_f": 0.5}
    tuned = callback(nlp)
    assert tuned is not nlp
    assert tuned.meta["tuning"]["settings"][f"components.{PIPE}.threshold"] is not None
    # the calibration is kept only where it lowers the held-out ECE, else null
    assert tuned.config["components"][PIPE]["calibration"] == tuned.meta["tuning"]["settings"][
        f"components.{PIPE}.calibration"]
    nlp.meta["performance"] = {"spans_nested_f": 0.4}  # worse: saved as it is
    assert callback(nlp) is nlp
    with pytest.raises(ValueError, match="NME041"):
        create_tuning_callback(None)(nlp)


@pytest.mark.slow
def test_tune_command(saved, tmp_path):
    pipeline, dev = saved
    out = tmp_path / "tuned" / "model-last"  # a folder whose parent does not exist yet
    report = tmp_path / "tuning.json"
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "tune", str(pipeline), str(dev),
         "--output", str(out), "--gate-grid", "0.5", "--score-grid", "0.3,0.6",
         "--report", str(report)],
        capture_output=True, text=True, check=True,
    )
    assert "| start_threshold | end_threshold | threshold |" in result.stdout
    assert "Saved the tuned pipeline" in result.stdout
    assert json.loads(report.read_text())["overrides"]
    assert spacy.load(out).meta["tuning"]["settings"]


@pytest.mark.slow
def test_tune_command_without_a_nested_pipe(tmp_path, saved):
    _, dev = saved
    spacy.blank("en").to_disk(tmp_path / "blank")
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "tune", str(tmp_path / "blank"), str(dev)],
        capture_output=True, text=True,
    )
    assert result.returncode == 1 and "NME040" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("content", ["", "\n  \n", '{"tokens": ["IL-2"], "entities": []}\n'])
def test_tune_refuses_dev_data_without_gold_and_saves_nothing(saved, tmp_path, content):
    pipeline, _ = saved
    dev = tmp_path / "dev.jsonl"
    dev.write_text(content, encoding="utf8")
    out = tmp_path / "tuned"
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "tune", str(pipeline), str(dev),
         "--output", str(out), "--gate-grid", "0.5"],
        capture_output=True, text=True,
    )
    assert result.returncode == 1 and "NME160" in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_window_settings_given_at_load_take_effect(saved):
    pipeline, _ = saved
    nlp = spacy.load(pipeline, config=dot_to_dict({
        f"components.{PIPE}.model.windows.window_wordpieces": 64,
        f"components.{PIPE}.model.windows.overlap_tokens": 8,
        f"components.{PIPE}.model.encoder.max_rows_per_pass": 8,
    }))
    attrs = nlp.get_pipe(PIPE).model.attrs
    settings = attrs["settings"]
    assert (settings.windows.window_wordpieces, settings.windows.overlap_tokens,
            settings.encoder.max_rows_per_pass) == (64, 8, 8)
    assert attrs["docs_per_pass"] == 8 // len(attrs["labels"])  # one sequence per label
    saved_settings = spacy.load(pipeline).get_pipe(PIPE).model.attrs["settings"]
    assert saved_settings.windows.window_wordpieces == 256
    long_text = " ".join(["IL-2 gene expression in human T cells ."] * 30)
    doc = nlp(long_text)  # windows of 64 wordpieces, 8 tokens shared
    assert all(0 <= s.start < s.end <= len(doc) for s in doc.spans["nested"])


@pytest.mark.slow
def test_predict_reads_the_pipes_own_spans_key_and_names_a_missing_pipeline(
    tiny_bert, tmp_path
):
    from spacy_nested_mrc.cli import main

    fix_random_seed(0)
    # untrained heads that propose every pair, written under "sc"
    every_pair = {"heads": {"boundary_prior": 0.0},
                  "decoder": {"start_threshold": 0.0, "end_threshold": 0.0}}
    nlp = blank_nlp(tiny_bert, model=every_pair, spans_key="sc", threshold=0.0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN, key="sc"))
    nlp.to_disk(tmp_path / "sc_pipeline")
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "predict", str(tmp_path / "sc_pipeline"),
         "IL-2 gene expression"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "IL-2 gene expression" and len(lines) > 1  # the spans of "sc"
    assert main(["predict", str(tmp_path / "missing"), "IL-2"]) == 1
    missing = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "predict", str(tmp_path / "missing"), "x"],
        capture_output=True, text=True)
    assert missing.returncode == 1 and "NME042" in missing.stderr
    assert "Traceback" not in missing.stderr
    # a folder that is there but holds no pipeline (spacy train's output itself, say)
    (tmp_path / "not_a_pipeline").mkdir()
    folder = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "predict", str(tmp_path / "not_a_pipeline"),
         "x"], capture_output=True, text=True)
    assert folder.returncode == 1 and "NME043" in folder.stderr, folder.stderr[-2000:]
