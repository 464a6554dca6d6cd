"""runtime = "onnxruntime": the encoders exported to ONNX and run by ONNX Runtime in
prediction, for an MRC pipe with its own encoder and for Locate-and-Label listening to a
shared transformer pipe."""
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import spacy
from helpers.annotate import TEXTS, save_trained_pipeline, write_gold
from helpers.locate_label import tok2vec_config
from helpers.pipes import LABELS, PIPE, TRAIN, make_examples
from spacy.util import fix_random_seed

from spacy_nested_mrc.annotate.loading import load_annotator
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.encoder.onnx import uses_onnxruntime
from spacy_nested_mrc.encoder.quantization import is_quantized

pytest.importorskip("onnxruntime", reason="the ONNX Runtime path is an extra: pip install .[onnx]")

RUNTIME = "components.nested_mrc_ner.runtime"
QUANTIZE = "components.nested_mrc_ner.quantize"


@pytest.fixture(scope="module")
def mrc_pipeline(tiny_bert, tmp_path_factory) -> Path:
    """An MRC pipeline trained a few steps (it writes spans of several scores), saved."""
    return save_trained_pipeline(tiny_bert, tmp_path_factory.mktemp("onnx") / "mrc")


@pytest.fixture(scope="module")
def locate_label_pipeline(tiny_bert, tmp_path_factory) -> Path:
    """A Locate-and-Label pipe listening to a shared transformer pipe, initialized, saved."""
    nlp = spacy.blank("en")
    config = tok2vec_config(tiny_bert)
    nlp.add_pipe("transformer", config={"model": {
        "@architectures": "spacy-nested-mrc.TransformerModel.v1", "name": tiny_bert,
        "get_spans": config["get_spans"], "tokenizer_config": {"use_fast": True}}})
    nlp.add_pipe(PIPE, config={"threshold": 0.0, "model": {
        "@architectures": "spacy-nested-mrc.LocateAndLabel.v2",
        "heads": {"@misc": "spacy-nested-mrc.LocateLabelHeads.v1", "hidden_width": 32},
        "decoder": {"@misc": "spacy-nested-mrc.SoftNMSDecoder.v1", "filter_threshold": 0.0,
                    "nms_score": 0.0},
        "seeds": {"@misc": "spacy-nested-mrc.SeedSpans.v1"},
        "loss": {"@misc": "spacy-nested-mrc.LocateLabelLoss.v1"},
        "tok2vec": {"@architectures": "spacy-transformers.TransformerListener.v1",
                    "grad_factor": 1.0, "upstream": "*",
                    "pooling": {"@layers": "reduce_mean.v1"}}}})
    for label in LABELS:
        nlp.get_pipe(PIPE).add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    path = tmp_path_factory.mktemp("onnx") / "locate_label"
    nlp.to_disk(path)
    return path


def spans_and_scores(nlp, texts):
    found = []
    for doc in nlp.pipe(texts):
        group = doc.spans["nested"]
        found.append(([(s.start, s.end, s.label_) for s in group],
                      np.asarray(group.attrs["scores"], dtype=np.float64)))
    return found


def assert_same(found, expected, atol):
    for (spans, scores), (ref_spans, ref_scores) in zip(found, expected):
        assert spans == ref_spans
        np.testing.assert_allclose(scores, ref_scores, atol=atol)


def test_mrc_in_onnxruntime_predicts_as_torch(mrc_pipeline):
    torch_nlp = spacy.load(mrc_pipeline)
    nlp = spacy.load(mrc_pipeline, config={RUNTIME: "onnxruntime"})
    assert uses_onnxruntime(nlp.get_pipe(PIPE).model)
    assert not uses_onnxruntime(torch_nlp.get_pipe(PIPE).model)
    expected = spans_and_scores(torch_nlp, TEXTS)
    assert any(spans for spans, _ in expected)
    assert_same(spans_and_scores(nlp, TEXTS), expected, atol=1e-4)


def test_locate_label_with_a_shared_transformer_in_onnxruntime(locate_label_pipeline):
    """The component's setting alone cannot reach the shared transformer pipe (NMW141);
    load_annotator runs every encoder of the pipeline in ONNX Runtime."""
    with pytest.warns(UserWarning, match="NMW141.*runtime"):
        spacy.load(locate_label_pipeline, config={RUNTIME: "onnxruntime"})
    torch_nlp = spacy.load(locate_label_pipeline)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        nlp = load_annotator(str(locate_label_pipeline), runtime="onnxruntime")
    assert uses_onnxruntime(nlp.get_pipe("transformer").model)
    expected = spans_and_scores(torch_nlp, TEXTS)
    assert any(spans for spans, _ in expected)
    assert_same(spans_and_scores(nlp, TEXTS), expected, atol=1e-4)


def test_onnxruntime_int8_saves_float_and_refuses_training(mrc_pipeline, tmp_path):
    float_nlp = spacy.load(mrc_pipeline)
    nlp = spacy.load(mrc_pipeline, config={RUNTIME: "onnxruntime", QUANTIZE: "int8"})
    pipe = nlp.get_pipe(PIPE)
    assert uses_onnxruntime(pipe.model) and not is_quantized(pipe.model)
    # int8 moves the scores a little, not which spans the tiny model is sure of
    for (spans, _), (ref_spans, ref_scores) in zip(spans_and_scores(nlp, TEXTS),
                                                  spans_and_scores(float_nlp, TEXTS)):
        sure = {span for span, p in zip(ref_spans, ref_scores) if p > 0.7}
        assert sure <= set(spans)
    for refusing in (nlp, load_annotator(str(mrc_pipeline), "int8", "onnxruntime")):
        with pytest.raises(ValueError, match="NME142"):
            refusing.update(make_examples(refusing, TRAIN[:1]))
    # the torch weights were never touched: the saved pipeline is the float one, and it
    # loads with its settings (ONNX Runtime, int8) applied again
    nlp.to_disk(tmp_path / "saved")
    again = spacy.load(tmp_path / "saved")
    assert again.get_pipe(PIPE).cfg["runtime"] == "onnxruntime"
    assert uses_onnxruntime(again.get_pipe(PIPE).model)
    plain = spacy.load(tmp_path / "saved", config={RUNTIME: "torch", QUANTIZE: None})
    assert_same(spans_and_scores(plain, TEXTS), spans_and_scores(float_nlp, TEXTS), atol=1e-6)


def test_runtime_is_checked_and_on_the_commands(mrc_pipeline, tmp_path):
    with pytest.raises(ValueError, match="NME006"):
        spacy.load(mrc_pipeline, config={RUNTIME: "tensorrt"})
    assert main(["predict", str(mrc_pipeline), TEXTS[0], "--runtime", "onnxruntime"]) == 0
    assert main(["evaluate", str(mrc_pipeline), str(write_gold(tmp_path)),
                 "--runtime", "onnxruntime", "--quantize", "int8"]) == 0


@pytest.mark.slow
def test_onnxruntime_pipeline_in_worker_processes(mrc_pipeline):
    """Loaded before ``nlp.pipe(..., n_process=2)`` forks its workers, each worker makes its
    own session; a fresh process with torch's default threads, as a user's program."""
    script = (
        "import json, sys, spacy\n"
        f"nlp = spacy.load({str(mrc_pipeline)!r}, config={{{RUNTIME!r}: 'onnxruntime'}})\n"
        f"texts = {TEXTS!r} * 4\n"
        "one = [[(s.start, s.end, s.label_) for s in d.spans['nested']] for d in nlp.pipe(texts)]\n"
        "two = [[(s.start, s.end, s.label_) for s in d.spans['nested']]\n"
        "       for d in nlp.pipe(texts, n_process=2, batch_size=4)]\n"
        "print(json.dumps(one == two))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "true"
