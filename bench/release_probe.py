"""Where a long annotation job's memory goes, and what the memory release costs.

    python bench/release_probe.py --pipeline bench/work_full/ll_hn_lr2e4_tuned/model-last \
        --dev ../shared/data/genia/dev.jsonl \
        --out bench/results/annotate_cpu_minilm/release_probe_cpu_minilm

1. Heap: the pipeline (``--quantize``, ``--runtime``) annotates ``--documents`` abstracts
   (GENIA dev sentences joined by their ``doc`` field, repeated) in this process, without the
   release pipe. Every ``--every`` documents it records the resident size, then collects
   garbage and calls ``malloc_trim(0)`` and records it again, with the number of live Python
   objects and of strings in the vocab. Flat objects and strings with a falling resident size
   mean free heap memory that glibc kept, not objects kept alive.
2. Cost: ``annotate`` on ``--cost-documents`` abstracts with ``--release-every 0`` and 256,
   alternated, ``--cost-rounds`` times each, each in a fresh process; documents/s of each.
"""
import argparse
import gc
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from benchlib.annotate import annotate_command, write_input
from benchlib.data import abstracts
from benchlib.machine import machine
from benchlib.outputs import write_outputs


def resident_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 // 2**20


def heap(args: argparse.Namespace, texts: List[str]) -> List[Dict[str, Any]]:
    from spacy_nested_mrc.annotate.loading import load_annotator
    from spacy_nested_mrc.runtime.memory import release_free_memory

    nlp = load_annotator(args.pipeline, args.quantize, args.runtime)
    docs = (texts[i % len(texts)] for i in range(args.documents))
    rows, start = [], time.perf_counter()
    for i, _ in enumerate(nlp.pipe(docs, batch_size=args.batch_size), start=1):
        if i % args.every == 0:
            before = resident_mb()
            gc.collect()
            release_free_memory()
            rows.append({"documents": i, "rss_before_mb": before, "rss_after_mb": resident_mb(),
                         "python_objects": len(gc.get_objects()),
                         "vocab_strings": len(nlp.vocab.strings),
                         "seconds": round(time.perf_counter() - start, 1)})
            print(rows[-1], flush=True)
    return rows


def cost(args: argparse.Namespace, texts: List[str], tmp: Path) -> List[Dict[str, Any]]:
    source = write_input(tmp / "cost.jsonl", texts, args.cost_documents)
    runs = []
    for round_ in range(args.cost_rounds):
        for every in (0, 256):
            out = tmp / f"out_{round_}_{every}"
            done = subprocess.run(
                annotate_command(args.pipeline, source, out, "--batch-size",
                                 str(args.batch_size), "--release-every", str(every)),
                capture_output=True, text=True, check=True,
            )
            rate = re.search(r"([\d.]+) documents/s", done.stdout)
            runs.append({"round": round_, "release_every": every,
                         "documents_per_second": float(rate.group(1))})
            print(runs[-1], flush=True)
    return runs


def markdown(report: Dict[str, Any]) -> str:
    lines = ["# The memory of a long annotation job, and the cost of releasing it", "",
             f"Command: `{report['command']}`", "",
             f"## In one process, no release pipe ({report['settings']['quantize'] or 'float'}, "
             f"{report['settings']['runtime'] or 'as saved'}): before and after gc + "
             "malloc_trim(0)", "",
             "| documents | RSS before MB | RSS after MB | Python objects | vocab strings | s |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['documents']} | {r['rss_before_mb']} | {r['rss_after_mb']} | "
              f"{r['python_objects']} | {r['vocab_strings']} | {r['seconds']} |"
              for r in report["heap"]]
    lines += ["", "## annotate, 1 process, fresh process per run (float, as saved)", "",
              "| round | --release-every | documents/s |", "|---|---|---|"]
    lines += [f"| {r['round']} | {r['release_every']} | {r['documents_per_second']} |"
              for r in report["cost"]]
    lines += ["", f"Machine: {report['machine']}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--quantize", default="int8")
    parser.add_argument("--runtime", default="torch")
    parser.add_argument("--documents", type=int, default=2500)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--cost-documents", type=int, default=1000)
    parser.add_argument("--cost-rounds", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    texts = abstracts(args.dev)
    report: Dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv),
                              "settings": vars(args).copy(), "heap": heap(args, texts)}
    with tempfile.TemporaryDirectory() as tmp:
        report["cost"] = cost(args, texts, Path(tmp))
    write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
