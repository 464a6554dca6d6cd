"""Training steps as the studies time them: a shipped config built in a precision on the
GENIA train file, and the batches ``spacy train`` would make of it."""
import argparse
import json
import statistics
from typing import Any, Dict, List, Optional, Tuple

import spacy
from spacy.training import Example
from spacy.util import fix_random_seed, load_config

from spacy_nested_mrc.annotate.loading import precision_overrides
from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.encoder.hf import resolve_encoder


def build(config_path: str, train: str, precision: str, encoder: str,
          overrides: Optional[Dict[str, Any]] = None):
    """The config's pipeline in ``precision`` on ``encoder``, reading ``train``, with
    ``overrides`` (``SECTION.KEY``: value) set."""
    config = load_config(config_path, interpolate=False)
    settings: Dict[str, Any] = {"paths.train": train, "paths.dev": train,
                                "paths.encoder": resolve_encoder(encoder), **(overrides or {})}
    settings.update(precision_overrides(config, precision))
    config = load_config(config_path, overrides=settings, interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    return nlp


def batches(nlp, train: str, words: int, steps: int) -> List[List[Example]]:
    """The first ``steps`` batches of about ``words`` words, in file order."""
    examples = create_jsonl_reader(train, spans_key="nested")(nlp)
    batcher = spacy.util.registry.batchers.get("spacy.batch_by_words.v1")(
        size=words, tolerance=0.2, discard_oversize=False)
    result = []
    for batch in batcher(examples):
        result.append(list(batch))
        if len(result) == steps + 1:  # one to warm up
            break
    return result


# thinc's optimizer as the shipped configs name it, and ours with the same arithmetic
OPTIMIZERS = {"thinc": "Adam.v1", "torch": "spacy-nested-mrc.TorchAdam.v1"}


def pipes_by_optimizer(config_path: str, train: str, precision: str, encoder: str,
                       words: int, steps: int, overrides: Optional[Dict[str, Any]] = None
                       ) -> Dict[str, Tuple[Any, Any, List[List[Example]]]]:
    """Per optimizer of ``OPTIMIZERS``: the config's pipeline (with ``overrides`` set) with
    that optimizer as its ``[training.optimizer]``, initialized from the same seed, the
    optimizer ``nlp.initialize`` made and the first ``steps`` + 1 batches."""
    pipes = {}
    for name, registered in OPTIMIZERS.items():
        nlp = build(config_path, train, precision, encoder,
                    {**(overrides or {}), "training.optimizer.@optimizers": registered})
        data = batches(nlp, train, words, steps)
        fix_random_seed(0)
        optimizer = nlp.initialize(lambda b=data: [eg for batch in b for eg in batch])
        pipes[name] = (nlp, optimizer, data)
    return pipes


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a study of training steps: the config, the train file, the batches'
    words, the precision, the threads, the encoder, config overrides and ``--out``."""
    parser.add_argument("config")
    parser.add_argument("--train", required=True)
    parser.add_argument("--words", type=int, default=400, help="words per batch (the config's)")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--out", default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[], type=override,
                        metavar="SECTION.KEY=JSON",
                        help="a config override, as spacy train's --SECTION.KEY JSON (repeat)")


def override(text: str) -> Tuple[str, Any]:
    """``SECTION.KEY=JSON`` -> (``SECTION.KEY``, the value); a value that is not JSON is
    taken as a string, as spaCy's command line takes it."""
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def step_times(seconds: List[float], base: List[float]) -> Dict[str, Any]:
    """A variant's step times against the baseline's, step by step (the same batches): its
    median step, total, the ratio of the totals and the median and quartiles of the
    per-step ratios (the columns ``step_cells`` writes)."""
    ratios = [t / b for t, b in zip(seconds, base)]
    return {
        "median_s_per_step": statistics.median(seconds), "total_s": sum(seconds),
        "over_base_total": sum(seconds) / sum(base),
        "over_base_median_step": statistics.median(ratios),
        "over_base_step_quartiles": statistics.quantiles(ratios, n=4)[::2]
        if len(ratios) > 1 else ratios * 2,
    }


def step_cells(row: Dict[str, Any]) -> Tuple[str, str]:
    """A row of a step study as Markdown cells: its overrides, and its step time, total,
    ratio to the baseline's total and median per-step ratio with quartiles."""
    settings = ", ".join(f"`{k.split('.')[-1]}={v}`" for k, v in row["overrides"].items())
    q1, q3 = row["over_base_step_quartiles"]
    times = (f"{row['median_s_per_step']:.3f} | {row['total_s']:.1f} | "
             f"{row['over_base_total']:.3f} | {row['over_base_median_step']:.3f} "
             f"({q1:.3f}-{q3:.3f})")
    return settings or "-", times

