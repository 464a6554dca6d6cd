"""Locate-and-Label (spacy-nested-mrc.LocateAndLabel.v2) on the tiny encoder: its model config
with a transformer of its own, pipelines from the shipped configs (the CPU config's encoder is
the pipe's own, the GPU config's a shared ``transformer`` component with a listener), and the
CPU config with a shared ``transformer`` component."""

from pathlib import Path

from spacy.lang.en import English
from spacy.util import dot_to_dict, fix_random_seed, load_config
from thinc.api import Model

from helpers.configs import locate_label_blocks
from helpers.pipes import PIPE, TRAIN, make_examples
from spacy_nested_mrc.encoder.span_getters import window_encoders

CONFIGS = Path(__file__).parents[2] / "configs"
# where configs/locate_label_cpu.cfg sets its encoder (spacy-nested-mrc.TransformerModel.v1)
ENCODER = "components.nested_mrc_ner.model.tok2vec.transformer"

TEXTS = [t for t, _ in TRAIN] + ["IL-2 gene in human T cells", "Jurkat cells", "IL-2"]


def tok2vec_config(encoder: str) -> dict:
    return {
        "@architectures": "spacy-transformers.Tok2VecTransformer.v3",
        "name": encoder,
        "tokenizer_config": {"use_fast": True},
        "get_spans": {
            "@span_getters": "spacy-transformers.strided_spans.v1",
            "window": 64,
            "stride": 48,
        },
        "pooling": {"@layers": "reduce_mean.v1"},
    }


def model_config(encoder: str, **blocks) -> dict:
    """Locate-and-Label with small heads and its own transformer on ``encoder``, its settings
    changed by ``blocks`` (in blocks: ``seeds={"window_sizes": [1, 2]}``)."""
    return locate_label_blocks({"tok2vec": tok2vec_config(encoder),
                                "heads": {"hidden_width": 32, "dropout": 0.0}}, **blocks)


def shipped_pipeline(name: str, encoder: str, tmp_path: Path, *overrides: dict) -> English:
    """A pipeline from a config of configs/ on the tiny encoder and a one-line corpus."""
    return English.from_config(load_config(CONFIGS / name,
                                           overrides=_settings(encoder, tmp_path, overrides)))


def shared_pipeline(encoder: str, tmp_path: Path, *overrides: dict) -> English:
    """configs/locate_label_cpu.cfg with its encoder in a shared ``transformer`` component
    (the same settings) and the pipe's token vectors from a listener, as
    configs/locate_label_gpu.cfg has it; ``overrides`` name the encoder's settings
    ``components.transformer.model.*``."""
    config = load_config(CONFIGS / "locate_label_cpu.cfg", interpolate=False)
    model = config["components"]["nested_mrc_ner"]["model"]
    tok2vec = model["tok2vec"]
    config["nlp"]["pipeline"] = ["transformer", "nested_mrc_ner"]
    config["components"]["transformer"] = {
        "factory": "transformer", "max_batch_items": 4096, "model": tok2vec["transformer"],
        "set_extra_annotations": {
            "@annotation_setters": "spacy-transformers.null_annotation_setter.v1"}}
    model["tok2vec"] = {"@architectures": "spacy-transformers.TransformerListener.v1",
                        "grad_factor": tok2vec["grad_factor"], "upstream": "*",
                        "pooling": tok2vec["pooling"]}
    model["heads"]["precision"] = "${components.transformer.model.precision}"
    config = config.merge(dot_to_dict(_settings(encoder, tmp_path, overrides)))
    return English.from_config(config.interpolate())


def encoder_of(nlp: English) -> Model:
    """The pipe's spacy-nested-mrc.TransformerModel.v1: that of the ``transformer``
    component it listens to, or its own."""
    ((_, encoder),) = window_encoders(nlp, PIPE)
    return encoder


def _settings(encoder: str, tmp_path: Path, overrides) -> dict:
    """The tiny encoder, a one-line corpus, then ``overrides`` (dotted keys)."""
    corpus = tmp_path / "train.jsonl"
    corpus.write_text('{"tokens": ["IL-2"], "entities": []}\n')
    settings = {"paths.encoder": encoder, "paths.train": str(corpus), "paths.dev": str(corpus)}
    for override in overrides:
        settings.update(override)
    return settings


def initialized_shipped(encoder: str, tmp_path: Path) -> English:
    """The shipped Locate-and-Label CPU config on the tiny encoder, initialized with GENIA's
    labels on three toy examples."""
    nlp = shipped_pipeline("locate_label_cpu.cfg", encoder, tmp_path)
    for label in ("DNA", "protein", "cell_type", "cell_line"):
        nlp.get_pipe(PIPE).add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:3]))
    return nlp
