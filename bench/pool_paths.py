"""Locate-and-Label's two ways to max-pool span vectors in prediction, timed against each
other: gathering every span's token vectors (a width at a time, each span its own tokens;
the results of sessions before 2026-12-06 gathered [P, W, H], padded to the widest span)
and sliding maxima over the docs' token rows (W passes over [R, H]; before the token rows,
over the docs padded to the longest, [D, N, H]). ``_max_pooled`` takes the sliding path
from ``_SLIDING_FROM`` of the sliding cells; this study shows where the two are level.

The docs are random token vectors with the lengths of the first ``--docs`` GENIA dev
sentences (one prediction batch), the spans their seed spans of widths 1 to ``--widths`` in
random order, P of them for P = the token rows (R) times each ``--shares``; each path is
timed interleaved with the other, the minimum of ``--repeats``, in fp32 and bf16.

    python bench/pool_paths.py --dev ../shared/data/genia/dev.jsonl --threads 1 \\
        --out bench/results/precision_cpu_minilm/pool_paths
"""
import argparse
from typing import Any, Callable, Dict, List

import torch
from benchlib.data import read_records
from benchlib.outputs import write_table
from benchlib.speed import interleaved

from spacy_nested_mrc.models.locate_label import torch_module
from spacy_nested_mrc.spans import enumerate_spans

ALWAYS = {"gather": float("inf"), "sliding": 0.0}  # _SLIDING_FROM that forces each path


def path_runs(table: torch_module.TokenRows, doc: torch.Tensor, start: torch.Tensor,
              end: torch.Tensor) -> Dict[str, Callable[[], Any]]:
    """Each pooling path over the same spans (checked to give the same maxima)."""
    def run(share: float) -> Callable[[], Any]:
        def pool() -> torch.Tensor:
            saved = torch_module._SLIDING_FROM
            torch_module._SLIDING_FROM = share
            try:
                return torch_module._max_pooled(table, doc, start, end)
            finally:
                torch_module._SLIDING_FROM = saved
        return pool

    runs = {name: run(share) for name, share in ALWAYS.items()}
    assert torch.equal(runs["gather"](), runs["sliding"]())
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", required=True)
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--widths", type=int, default=10)
    parser.add_argument("--width", type=int, default=384, help="token vector size")
    parser.add_argument("--shares", type=float, nargs="+",
                        default=[0.0625, 0.125, 0.25, 0.5, 0.75, 1.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    lengths = [len(r["tokens"]) for r in read_records(args.dev)[: args.docs]]
    spans = [torch.as_tensor(a) for a in enumerate_spans(lengths, range(1, args.widths + 1))]
    order = torch.randperm(len(spans[0]))
    doc, start, end = (a[order] for a in spans)
    rows: List[Dict[str, Any]] = []
    lines = [f"# Max-pooling span vectors: gathered against sliding maxima, {args.docs} GENIA "
             f"dev sentence lengths, widths 1-{args.widths}, H = {args.width}, "
             f"{args.threads} thread(s), minimum of {args.repeats}", "",
             "| precision | spans / token rows | spans | gather ms | sliding ms | "
             "gather / sliding |", "|---|---|---|---|---|---|"]
    for dtype in (torch.float32, torch.bfloat16):
        tokens = [torch.randn(n, args.width).to(dtype) for n in lengths]
        table = torch_module._token_rows(tokens)
        cells = len(table.rows)
        for share in args.shares:
            p = min(len(start), max(1, int(cells * share)))
            seconds = interleaved(path_runs(table, doc[:p], start[:p], end[:p]), args.repeats)
            best = {name: min(times) * 1000 for name, times in seconds.items()}
            name = str(dtype).replace("torch.", "")
            rows.append({"precision": name, "share": share, "spans": p, "cells": cells,
                         "ms": best})
            lines.append(f"| {name} | {share:g} | {p} | {best['gather']:.1f} | "
                         f"{best['sliding']:.1f} | {best['gather'] / best['sliding']:.2f} |")
    lines += ["", f"Token rows: {cells}; `_max_pooled` slides from "
              f"{torch_module._SLIDING_FROM:g} of them."]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
