"""The ``precision`` setting: bf16 training and prediction on the CPU for the MRC family and
Locate-and-Label (its heads and the transformer it listens to), fp32 weights and scores, the
fallback where the CPU has no bf16 arithmetic, the older ``mixed_precision`` setting, and a
load-time override that takes effect."""

import os
import warnings

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import mrc_blocks, multi_ner_blocks
from helpers.locate_label import ENCODER, shipped_pipeline
from helpers.pipes import KEY, PIPE, TRAIN, make_examples
from spacy.util import fix_random_seed

from spacy_nested_mrc.annotate.loading import load_annotator, pipeline_config, precision_overrides
from spacy_nested_mrc.encoder.hf import hf_transformers
from spacy_nested_mrc.runtime import precision as precision_module
from spacy_nested_mrc.runtime.precision import (
    as_float32,
    compute_dtype,
    cpu_has_bf16,
    resolve_precision,
)

needs_bf16 = pytest.mark.skipif(not cpu_has_bf16(), reason="this CPU has no bf16 arithmetic")
MODEL = f"components.{PIPE}.model"


# the default model (the packed MRC), small, its gates open
SMALL_GATES_OPEN = {"heads": {"match_hidden": 16, "dropout": 0.0},
                    "decoder": {"start_threshold": 0.0, "end_threshold": 0.0}}
# the same model in the flat config of the release before the blocks (MRCQuery.v1), for the
# tests of the older settings such a config holds
FLAT = {"@architectures": "spacy-nested-mrc.MRCQuery.v1", "query_style": "index",
        "packed": True, "per_label_loss": 0.5, "max_rows": 160, "match_hidden": 16,
        "start_threshold": 0.0, "end_threshold": 0.0, "dropout": 0.0}


def mrc_nlp(encoder: str, precision: str = "fp32", flat: bool = False) -> spacy.Language:
    """The default (packed MRC) pipe on the tiny encoder at ``precision``, gates open;
    ``flat``: in the flat config of the release before the blocks."""
    nlp = spacy.blank("en")
    config = ({**FLAT, "encoder": encoder, "precision": precision} if flat
              else mrc_blocks(SMALL_GATES_OPEN, encoder={"name": encoder, "precision": precision}))
    nlp.add_pipe(PIPE, config={"threshold": 0.0, "model": config})
    return nlp


def locate_label_nlp(encoder: str, tmp_path, precision: str) -> spacy.Language:
    return shipped_pipeline("locate_label_cpu.cfg", encoder, tmp_path, {
        f"{MODEL}.heads.hidden_width": 32, f"{MODEL}.decoder.filter_threshold": 0.0,
        f"{MODEL}.decoder.nms_score": 0.0, f"components.{PIPE}.threshold": 0.0,
        f"{MODEL}.heads.precision": precision,
        f"{ENCODER}.precision": precision})


def train(nlp, steps: int = 3) -> list:
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: make_examples(nlp, TRAIN))
    return [nlp.update(make_examples(nlp, TRAIN), sgd=optimizer)[PIPE] for _ in range(steps)]


class HiddenDtypes:
    """Records the dtype the encoders' linear layers compute in (their layer norms run in
    float32 under autocast, so the hidden states are float32 either way)."""

    def __init__(self, nlp) -> None:
        self.seen = set()
        for _, pipe in nlp.pipeline:
            for transformer in hf_transformers(pipe.model):
                linear = next(m for m in transformer.modules() if isinstance(m, torch.nn.Linear))
                linear.register_forward_hook(self._record)

    def _record(self, module, inputs, output) -> None:
        self.seen.add(output.dtype)


def parameters(nlp):
    return [p for _, pipe in nlp.pipeline for node in pipe.model.walk() for shim in node.shims
            for p in shim._model.parameters()]


def test_resolve_precision_reads_the_older_setting():
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("fp32", mixed_precision=True) == "fp16"
    assert resolve_precision("bf16", mixed_precision=True) == "bf16"
    with pytest.raises(ValueError, match="NME006.*precision"):
        resolve_precision("fp8")
    assert compute_dtype("fp16", "cpu") is None and compute_dtype("fp32", "cuda") is None


def test_as_float32_keeps_the_graph():
    x = torch.ones(2, requires_grad=True)
    y = as_float32((x * 2).bfloat16())
    assert y.dtype == torch.float32
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@needs_bf16
@pytest.mark.parametrize("kind", ["mrc_packed", "locate_label"])
def test_bf16_trains_and_predicts_with_fp32_weights_and_scores(tiny_bert, tmp_path, kind):
    if kind == "locate_label":
        nlp = locate_label_nlp(tiny_bert, tmp_path, "bf16")
    else:
        nlp = mrc_nlp(tiny_bert, precision="bf16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning on this CPU
        losses = train(nlp)
    dtypes = HiddenDtypes(nlp)
    losses.append(nlp.update(make_examples(nlp, TRAIN), sgd=nlp.create_optimizer())[PIPE])
    assert all(np.isfinite(losses)) and losses[0] > 0
    assert dtypes.seen == {torch.bfloat16}  # the encoder computed in bf16, in training
    assert {p.dtype for p in parameters(nlp)} == {torch.float32}  # master weights
    dtypes.seen.clear()
    doc = nlp("IL-2 gene expression in human T cells")
    assert dtypes.seen == {torch.bfloat16}  # and in prediction
    scores = doc.spans[KEY].attrs["scores"]
    assert len(scores) and scores.dtype == np.float32
    assert ((scores >= 0) & (scores <= 1)).all()


@needs_bf16
def test_bf16_at_load_follows_the_config_and_stays_close_to_fp32(tiny_bert, tmp_path):
    nlp = mrc_nlp(tiny_bert)
    train(nlp)
    nlp.to_disk(tmp_path / "fp32")
    texts = ["IL-2 gene expression in human T cells", "Jurkat cells express IL-2 ."]
    fp32 = spacy.load(tmp_path / "fp32")
    bf16 = spacy.load(tmp_path / "fp32", config={f"{MODEL}.encoder.precision": "bf16"})
    dtypes = HiddenDtypes(bf16)
    docs = [fp32.make_doc(text) for text in texts]
    # the model's scored spans before the pipe's choice among near-equal labels
    a, b = fp32.get_pipe(PIPE).predict(docs), bf16.get_pipe(PIPE).predict(docs)
    for spans_a, scores_a, spans_b, scores_b in zip(a.spans, a.scores, b.spans, b.scores):
        expected = dict(zip(map(tuple, spans_a.tolist()), scores_a.tolist()))
        got = dict(zip(map(tuple, spans_b.tolist()), scores_b.tolist()))
        shared = set(got) & set(expected)
        assert expected and len(shared) >= 0.9 * max(len(expected), len(got))
        assert max(abs(got[k] - expected[k]) for k in shared) < 0.05
        assert scores_b.dtype == np.float32
    assert dtypes.seen == {torch.bfloat16}


def test_without_bf16_arithmetic_bf16_warns_and_runs_fp32(tiny_bert, monkeypatch):
    monkeypatch.setattr(precision_module, "cpu_has_bf16", lambda: False)
    with pytest.warns(UserWarning, match="NMW170"):  # when the model is built
        nlp = mrc_nlp(tiny_bert, precision="bf16")
    train(nlp, steps=1)
    dtypes = HiddenDtypes(nlp)
    nlp("IL-2 gene expression")
    assert dtypes.seen == {torch.float32}


def test_a_pipeline_with_mixed_precision_true_loads_and_predicts(tiny_bert, tmp_path):
    """Configs and pipelines from before ``precision``: ``mixed_precision = true`` means fp16,
    which the CPU cannot run (NMW170): the pipeline loads and predicts in fp32, as one saved
    without it."""
    nlp = mrc_nlp(tiny_bert, flat=True)
    train(nlp)
    nlp.to_disk(tmp_path / "pipeline")
    doc = spacy.load(tmp_path / "pipeline")("IL-2 gene expression")
    reference = [(s.start, s.end, s.label_) for s in doc.spans[KEY]]
    with pytest.warns(UserWarning, match="NMW170.*fp16"):
        old = spacy.load(tmp_path / "pipeline", config={f"{MODEL}.mixed_precision": True})
    doc = old("IL-2 gene expression")
    got = [(s.start, s.end, s.label_) for s in doc.spans[KEY]]
    assert got == reference and got


@needs_bf16
def test_annotate_precision_sets_every_model_of_the_pipeline(tiny_bert, tmp_path):
    """``annotate --precision`` (``load_annotator``): the pipes' models and the transformer
    they listen to, whatever their names."""
    nlp = locate_label_nlp(tiny_bert, tmp_path, "fp32")
    train(nlp, steps=1)
    nlp.to_disk(tmp_path / "pipeline")
    assert precision_overrides(pipeline_config(str(tmp_path / "pipeline")), "bf16") == {
        f"{ENCODER}.precision": "bf16", f"{MODEL}.heads.precision": "bf16"}
    annotator = load_annotator(str(tmp_path / "pipeline"), precision="bf16")
    dtypes = HiddenDtypes(annotator)
    annotator("IL-2 gene expression in human T cells")
    assert dtypes.seen == {torch.bfloat16}


@needs_bf16
def test_int8_encoder_of_a_bf16_pipeline_keeps_its_own_arithmetic(tiny_bert, tmp_path):
    """quantize = "int8" on a pipeline configured in bf16: the int8 encoder takes float32
    inputs (no autocast there), the heads run in bf16, and the spans are written."""
    nlp = mrc_nlp(tiny_bert, precision="bf16")
    train(nlp)
    nlp.to_disk(tmp_path / "pipeline")
    int8 = spacy.load(tmp_path / "pipeline", config={f"components.{PIPE}.quantize": "int8"})
    doc = int8("IL-2 gene expression in human T cells")
    assert len(doc.spans[KEY]) and doc.spans[KEY].attrs["scores"].dtype == np.float32


def test_annotate_bounds_the_onednn_cache_of_its_process(tiny_bert, tmp_path, monkeypatch):
    """``annotate``'s ``onednn_cache`` (default 256) is set before its pipeline is loaded, in
    each process that loads it; ``--onednn-cache -1`` leaves oneDNN's own default."""
    from spacy_nested_mrc.annotate import AnnotateSettings
    from spacy_nested_mrc.runtime.memory import MKLDNN_CACHE_VARIABLE, ONEDNN_CACHE_VARIABLE

    nlp = mrc_nlp(tiny_bert)
    train(nlp, steps=1)
    nlp.to_disk(tmp_path / "pipeline")
    for variable in (ONEDNN_CACHE_VARIABLE, MKLDNN_CACHE_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    load_annotator(str(tmp_path / "pipeline"), onednn_cache=None)
    assert ONEDNN_CACHE_VARIABLE not in os.environ
    load_annotator(str(tmp_path / "pipeline"),
                   onednn_cache=AnnotateSettings().onednn_cache)
    assert os.environ[ONEDNN_CACHE_VARIABLE] == os.environ[MKLDNN_CACHE_VARIABLE] == "256"


@pytest.mark.parametrize("value", ["fp8", "BF16", "FP32", "bfloat16", ""])
def test_compute_dtype_refuses_a_precision_it_does_not_know(value):
    """No silent fallback to another arithmetic on any device: a typo is an error."""
    for device in ("cpu", "cuda"):
        with pytest.raises(ValueError, match="NME006.*precision"):
            compute_dtype(value, device)


@pytest.mark.parametrize("value", ["fp8", "BF16"])
@pytest.mark.parametrize("kind", ["mrc_packed", "mrc_flat", "multi_ner", "locate_label",
                                  "transformer"])
def test_every_architecture_refuses_a_mistyped_precision(tiny_bert, tmp_path, kind, value):
    """Where the precision is read, for every architecture and block: NME006 naming the
    choices, when the pipe is built and when a saved pipeline is loaded with an override."""
    with pytest.raises(ValueError, match=r"NME006.*precision.*fp32.*bf16.*fp16"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "mrc_packed":
                mrc_nlp(tiny_bert, precision=value)
            elif kind == "mrc_flat":
                mrc_nlp(tiny_bert, flat=True, precision=value)
            elif kind == "multi_ner":
                spacy.blank("en").add_pipe(PIPE, config={"model": multi_ner_blocks(
                    encoder={"name": tiny_bert, "precision": value})})
            elif kind == "locate_label":
                shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path,
                                 {f"{MODEL}.heads.precision": value})
            else:
                shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path,
                                 {f"{ENCODER}.precision": value})


def test_a_load_time_override_with_a_mistyped_precision_is_refused(tiny_bert, tmp_path):
    mrc_nlp(tiny_bert).to_disk(tmp_path / "saved")
    with pytest.raises(ValueError, match="NME006.*precision"):
        spacy.load(tmp_path / "saved", config={f"{MODEL}.encoder.precision": "fp8"})



def test_auto_is_bf16_where_the_device_has_it_and_fp32_without_a_warning(monkeypatch):
    expected = torch.bfloat16 if cpu_has_bf16() else None
    assert compute_dtype("auto", "cpu") is expected
    monkeypatch.setattr(precision_module, "cpu_has_bf16", lambda: False)
    assert compute_dtype("auto", "cpu") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        precision_module.check_precision("auto", "cpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert compute_dtype("auto", "cuda") is None  # never fp16 unasked
    assert compute_dtype("bf16", "cuda") is torch.float16


@needs_bf16
def test_the_factory_default_computes_in_bf16_and_saves_auto(tiny_bert, tmp_path):
    """``nlp.add_pipe("nested_mrc_ner")`` trains and predicts in bf16 on this CPU; its saved
    config says "auto", so it runs fp32 on a machine without bf16 arithmetic."""
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": {"encoder": {"name": tiny_bert}}})
    assert nlp.config["components"][PIPE]["model"]["encoder"]["precision"] == "auto"
    train(nlp, steps=1)
    dtypes = HiddenDtypes(nlp)  # the encoder is built at initialize
    nlp.update(make_examples(nlp, TRAIN), sgd=nlp.create_optimizer())
    assert dtypes.seen == {torch.bfloat16}
    dtypes.seen.clear()
    nlp("IL-2 gene expression")
    assert dtypes.seen == {torch.bfloat16}
    nlp.to_disk(tmp_path / "saved")
    assert '"auto"' in (tmp_path / "saved" / "config.cfg").read_text()
