"""What bounding oneDNN's primitive cache changes in bf16 prediction (#38): a trained
pipeline loaded in a fresh process per variant (the cache's capacity is read once a
process), ``nlp.pipe`` over GENIA dev sentences in file order (every batch another shape),
variants alternated and repeated. Each process reports its peak resident size, its
sentences per second and the spans it wrote.

    python bench/onednn_cache_predict.py PIPELINE --dev ../shared/data/genia/dev.jsonl \\
        --sentences 800 --repeats 2 --threads 2 --variants fp32 bf16 bf16:16 \\
        --out bench/results/precision_cpu_minilm/onednn_cache_predict_mrc_packed

A variant is PRECISION or PRECISION:CAPACITY; the capacity is set with
``runtime.memory.limit_onednn_cache`` before the pipeline is loaded (both caches of
built bf16 kernels: oneDNN's and that of torch's mkldnn operators), and without one the
variables are removed from the environment (their defaults, 1,024 primitives each).
"""
import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List

from benchlib.outputs import write_table
from benchlib.processes import CHILD, run_fresh


def run_child(args: argparse.Namespace, variant: str) -> Dict[str, Any]:
    """One variant in a fresh process; RETURNS its report."""
    return run_fresh(__file__, [args.pipeline, "--dev", args.dev, "--sentences",
                                str(args.sentences), "--threads", str(args.threads),
                                "--batch-size", str(args.batch_size), "--variants", variant],
                     args.threads)


def child(args: argparse.Namespace) -> None:
    """Predict the dev sentences with one variant and print its report as JSON."""
    import warnings

    import spacy
    import torch
    from benchlib.data import read_texts
    from benchlib.memory import rss_mb

    from spacy_nested_mrc.annotate.loading import pipeline_config, precision_overrides
    from spacy_nested_mrc.runtime.memory import limit_onednn_cache, peak_rss_mb, release_free_memory

    torch.set_num_threads(args.threads)
    (variant,) = args.variants
    precision, _, capacity = variant.partition(":")
    if capacity:
        limit_onednn_cache(int(capacity))
    texts = read_texts(args.dev, args.sentences)
    overrides = precision_overrides(pipeline_config(args.pipeline), precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nlp = spacy.load(args.pipeline, config=overrides)
    loaded = peak_rss_mb()
    start = time.perf_counter()
    spans = sum(len(doc.spans["nested"]) for doc in nlp.pipe(texts, batch_size=args.batch_size))
    seconds = time.perf_counter() - start
    release_free_memory()
    print(json.dumps({"variant": variant, "peak_mib": peak_rss_mb(), "loaded_mib": loaded,
                      "end_mib": rss_mb(os.getpid()), "sentences_per_s": len(texts) / seconds,
                      "spans": spans}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--sentences", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=["fp32", "bf16", "bf16:16"])
    parser.add_argument("--out", default=None)
    parser.add_argument(CHILD, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    reports: Dict[str, List[Dict[str, Any]]] = {v: [] for v in args.variants}
    for _ in range(args.repeats):
        for variant in args.variants:
            report = run_child(args, variant)
            reports[variant].append(report)
            print(json.dumps(report), file=sys.stderr)
    rows = [{"variant": variant, "peak_mib": [r["peak_mib"] for r in runs],
             "loaded_mib": [r["loaded_mib"] for r in runs],
             "end_mib": [r["end_mib"] for r in runs],
             "sentences_per_s": [r["sentences_per_s"] for r in runs],
             "spans": [r["spans"] for r in runs]}
            for variant, runs in reports.items()]
    lines = ["| variant | peak MiB, each round | peak after loading | resident at the end "
             "(free heap given back) | sentences/s (median) | spans written |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['variant']} | {' / '.join(f'{m:,.0f}' for m in row['peak_mib'])} | "
            f"{' / '.join(f'{m:,.0f}' for m in row['loaded_mib'])} | "
            f"{' / '.join(f'{m:,.0f}' for m in row['end_mib'])} | "
            f"{statistics.median(row['sentences_per_s']):.1f} | {row['spans'][0]} |")
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
