"""Locate-and-Label (spacy-nested-mrc.LocateAndLabel.v2) on the tiny encoder: its model config
with a transformer of its own, and pipelines from the shipped configs (a shared ``transformer``
component and a listener)."""

from pathlib import Path

from spacy.lang.en import English
from spacy.util import fix_random_seed, load_config

from helpers.configs import locate_label_blocks
from helpers.pipes import PIPE, TRAIN, make_examples

CONFIGS = Path(__file__).parents[2] / "configs"

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
    corpus = tmp_path / "train.jsonl"
    corpus.write_text('{"tokens": ["IL-2"], "entities": []}\n')
    settings = {"paths.encoder": encoder, "paths.train": str(corpus), "paths.dev": str(corpus)}
    for override in overrides:
        settings.update(override)
    return English.from_config(load_config(CONFIGS / name, overrides=settings))


def initialized_shipped(encoder: str, tmp_path: Path) -> English:
    """The shipped Locate-and-Label config (a ``transformer`` component and a listener) on the
    tiny encoder, initialized with GENIA's labels on three toy examples."""
    nlp = shipped_pipeline("locate_label_cpu.cfg", encoder, tmp_path)
    for label in ("DNA", "protein", "cell_type", "cell_line"):
        nlp.get_pipe(PIPE).add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:3]))
    return nlp
