"""Training time per step of one config built several ways, in one process, interleaved: each
variant (a precision and config overrides: the optimizer, the encoder's attention, ...) is
built from the same seed and updated on the same GENIA train batches in turn, as ``spacy
train`` batches them, so a noisy machine slows every variant alike. Each variant's time is
reported over the first variant's (the baseline).

    python bench/step_variants.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --steps 20 --threads 1 \\
        --variant "before fp32 training.optimizer.@optimizers=Adam.v1 \\
                   components.nested_mrc_ner.model.encoder.attention=sdpa" \\
        --variant "now bf16" \\
        --out bench/results/speed_cpu_minilm/step_variants_mrc_packed

A variant is "NAME PRECISION [KEY=VALUE ...]" (values parsed as JSON where they parse);
the token ``dropout=torch`` runs that variant's dropout as torch's own (``nn.Dropout``'s
forward in place of ``runtime.dropout``'s cheaper masks), as the code before them did.
"""
import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch
from benchlib.machine import machine
from benchlib.training import (
    add_training_arguments,
    batches,
    build,
    override,
    step_cells,
    step_times,
)
from spacy.util import fix_random_seed
from torch import nn

from spacy_nested_mrc.encoder.hf import hf_transformers
from spacy_nested_mrc.runtime.dropout import CheapDropout
from spacy_nested_mrc.runtime.memory import peak_rss_mb


def parse_variant(text: str) -> Tuple[str, str, Dict[str, Any]]:
    """RETURNS: the variant's name, precision and overrides (``dropout``: "torch" or
    "cheap", not a config override)."""
    name, precision, *settings = text.split()
    overrides: Dict[str, Any] = {"dropout": "cheap", **dict(map(override, settings))}
    return name, precision, overrides


@contextlib.contextmanager
def dropout_as(kind: str):
    """Within the context, ``CheapDropout`` modules run torch's own dropout where ``kind``
    is "torch"."""
    if kind != "torch":
        yield
        return
    forward = CheapDropout.forward
    CheapDropout.forward = nn.Dropout.forward
    try:
        yield
    finally:
        CheapDropout.forward = forward


def attention_of(nlp) -> str:
    """RETURNS (str): the attention implementations of the pipeline's encoders."""
    found = [t.config._attn_implementation for name in nlp.pipe_names
             for t in hf_transformers(nlp.get_pipe(name).model)]
    return ",".join(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_training_arguments(parser)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--drop", type=float, default=0.1, help="spacy train's dropout")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    variants = [parse_variant(v) for v in args.variant]
    pipes = {}
    dropouts = {}
    for name, precision, overrides in variants:
        settings = dict(overrides)
        dropouts[name] = settings.pop("dropout")
        nlp = build(args.config, args.train, precision, args.encoder, settings)
        data = batches(nlp, args.train, args.words, args.steps)
        fix_random_seed(0)
        optimizer = nlp.initialize(lambda b=data: [eg for batch in b for eg in batch])
        pipes[name] = (nlp, optimizer, data)
    seconds: Dict[str, List[float]] = {name: [] for name in pipes}
    losses: Dict[str, List[float]] = {name: [] for name in pipes}
    for step in range(args.steps + 1):
        for name, (nlp, optimizer, data) in pipes.items():
            with dropout_as(dropouts[name]):
                start = time.perf_counter()
                result = nlp.update(data[step], sgd=optimizer, drop=args.drop)
                took = time.perf_counter() - start
            if step:  # the first batch warms up
                seconds[name].append(took)
                losses[name].append(float(sum(result.values())))
    base = variants[0][0]
    rows = []
    for name, precision, overrides in variants:
        rows.append({
            "variant": name, "precision": precision, "overrides": overrides,
            "attention": attention_of(pipes[name][0]), "steps": len(seconds[name]),
            **step_times(seconds[name], seconds[base]),
            "mean_loss": statistics.mean(losses[name]),
        })
    report = {"command": " ".join(sys.argv), "machine": machine(), "rows": rows,
              "peak_rss_mb": peak_rss_mb()}
    lines = [f"`{report['command']}`", "",
             f"{args.steps} steps of about {args.words} words each, the variants interleaved, "
             f"{args.threads} thread(s), after one warm-up step; dropout {args.drop}. `over "
             f"{base}`: total time over the baseline's; `median step ratio`: the median of the "
             "per-step ratios (quartiles beside it).", "",
             "| variant | precision | attention | overrides | s/step (median) | total s | "
             f"over {base} | median step ratio (quartiles) | mean loss |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        settings, times = step_cells(r)
        lines.append(f"| {r['variant']} | {r['precision']} | {r['attention']} | {settings} | "
                     f"{times} | {r['mean_loss']:.3f} |")
    lines += ["", f"Machine: {report['machine']}"]
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
        out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
