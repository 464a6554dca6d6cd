"""Why a bf16 training holds more memory than fp32, and what bounding oneDNN's primitive cache
changes (#38): a shipped CPU config trained for a few steps on the same GENIA batches, one
process per variant (the cache's capacity is read once a process), variants alternated and
repeated, one thread each. Each process reports its resident size after every update (the
C heap's free memory given back first, as the shipped configs do every step), its peak and
its seconds a step.

    python bench/onednn_cache.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --steps 60 --repeats 2 \\
        --variants fp32 bf16 bf16:16 bf16:256 \\
        --out bench/results/precision_cpu_minilm/onednn_cache_mrc_packed

A variant is PRECISION or PRECISION:CAPACITY; the capacity is set by the pipeline's own
``[initialize.before_init]`` callback (``spacy-nested-mrc.limit_onednn_cache.v1``), as a
user's ``spacy train`` sets it (both caches of built bf16 kernels: oneDNN's and that of
torch's mkldnn operators), and without one the variables are removed from the environment
(their defaults, 1,024 primitives each).
"""
import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List

from benchlib.memory import rss_mb
from benchlib.outputs import write_table
from benchlib.processes import CHILD, run_fresh

from spacy_nested_mrc.runtime.memory import MKLDNN_CACHE_VARIABLE, ONEDNN_CACHE_VARIABLE


def run_child(args: argparse.Namespace, variant: str) -> Dict[str, Any]:
    """One variant in a fresh process; RETURNS its report."""
    return run_fresh(__file__, [args.config, "--train", args.train, "--steps", str(args.steps),
                                "--threads", str(args.threads), "--variants", variant],
                     args.threads)


def child(args: argparse.Namespace) -> None:
    """Train ``args.steps`` updates of one variant and print its report as JSON."""
    import spacy
    import torch
    from spacy.util import fix_random_seed, load_config

    from spacy_nested_mrc.annotate.loading import precision_overrides
    from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
    from spacy_nested_mrc.runtime.memory import peak_rss_mb, release_free_memory

    torch.set_num_threads(args.threads)
    (variant,) = args.variants
    precision, _, capacity = variant.partition(":")
    overrides: Dict[str, Any] = {
        "paths.train": args.train, "paths.dev": args.train, "initialize.before_init": None,
        # every precision setting of the config (the encoder's, Locate-and-Label's heads'
        # and its transformer's), as annotate --precision sets them
        **precision_overrides(load_config(args.config, interpolate=False), precision),
    }
    if capacity:
        overrides["initialize.before_init"] = {
            "@callbacks": "spacy-nested-mrc.limit_onednn_cache.v1", "capacity": int(capacity)}
    config = load_config(args.config, overrides=overrides, interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    before_init = config.interpolate()["initialize"]["before_init"]
    if before_init is not None:  # as spacy train's init_nlp calls it
        spacy.util.registry.resolve({"cb": before_init})["cb"](nlp)
    reader = create_jsonl_reader(args.train, spans_key="nested")
    examples = [eg for _, eg in zip(range(4000), reader(nlp))]
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples[:200])
    batcher = spacy.util.registry.batchers.get("spacy.batch_by_words.v1")(
        size=400, tolerance=0.2, discard_oversize=False)

    rss, seconds = [], []
    for _, batch in zip(range(args.steps), batcher(examples)):
        release_free_memory()
        start = time.perf_counter()
        nlp.update(list(batch), sgd=optimizer, drop=0.1)
        seconds.append(time.perf_counter() - start)
        rss.append(round(rss_mb(os.getpid())))
    print(json.dumps({
        "variant": variant,
        "capacity_variables": {v: os.environ.get(v)
                               for v in (ONEDNN_CACHE_VARIABLE, MKLDNN_CACHE_VARIABLE)},
        "rss_mib": rss, "peak_mib": round(peak_rss_mb()),
        "s_per_step": statistics.mean(seconds[5:]) if len(seconds) > 5 else None,
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--train", required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", nargs="+", default=["fp32", "bf16", "bf16:16"])
    parser.add_argument("--out", default=None)
    parser.add_argument(CHILD, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    runs: List[Dict[str, Any]] = []
    for repeat in range(args.repeats):
        for variant in args.variants:
            report = run_child(args, variant)
            report["repeat"] = repeat
            runs.append(report)
            print(f"{variant} repeat {repeat}: peak {report['peak_mib']} MiB, "
                  f"{report['s_per_step']:.2f} s/step", file=sys.stderr, flush=True)
    lines = [f"# oneDNN's primitive cache and the resident size of bf16 training: "
             f"{args.config}, {args.steps} updates of about 400 words, {args.threads} thread(s)",
             "", "| variant | peak MiB (each run) | RSS MiB after the last update | "
             "s a step (after the first 5) |", "|---|---|---|---|"]
    for variant in args.variants:
        mine = [r for r in runs if r["variant"] == variant]
        peaks = ", ".join(str(r["peak_mib"]) for r in mine)
        last = ", ".join(str(r["rss_mib"][-1]) for r in mine)
        times = ", ".join(f"{r['s_per_step']:.2f}" for r in mine)
        lines.append(f"| {variant} | {peaks} | {last} | {times} |")
    lines += ["", "RSS after every 10th update, first run of each variant:", "",
              "| variant | " + " | ".join(str(s) for s in range(10, args.steps + 1, 10)) + " |",
              "|---|" + "---|" * len(range(10, args.steps + 1, 10))]
    for variant in args.variants:
        first = next(r for r in runs if r["variant"] == variant)
        lines.append(f"| {variant} | " + " | ".join(
            str(first["rss_mib"][s - 1]) for s in range(10, args.steps + 1, 10)) + " |")
    write_table(args.out, runs, lines)


if __name__ == "__main__":
    main()
