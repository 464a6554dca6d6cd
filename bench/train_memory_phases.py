"""Where the peak resident memory of ``spacy train`` comes from: a real ``spacy train`` run
(spaCy's own ``train`` function, the config's batches, dev evaluations and ``model-best``
saves), with the process's peak resident size (``VmHWM``) reset before and read after every
training step, every dev evaluation (its prediction and its scoring apart) and every save.

    python bench/train_memory_phases.py configs/locate_label_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl \\
        --train-limit 3000 --max-steps 120 --eval-frequency 40 --threads 1 \\
        --out bench/results/precision_cpu_minilm/train_memory_phases_locate_label

Linux only (``/proc/self/clear_refs``). Writes ``OUT.json`` (every phase) and ``OUT.md``.
"""
import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List

import spacy
import torch
from benchlib.machine import machine
from spacy.cli.train import train
from spacy.language import Language
from spacy.scorer import Scorer

from spacy_nested_mrc.encoder.hf import resolve_encoder
from spacy_nested_mrc.runtime.memory import release_free_memory

PHASES: List[Dict[str, Any]] = []
_depth = [0]


def _status_mb() -> Dict[str, float]:
    text = Path("/proc/self/status").read_text()
    return {key: int(re.search(rf"{key}:\s+(\d+)", text).group(1)) / 1024
            for key in ("VmRSS", "VmHWM")}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Record the resident size before and after ``name`` and its peak in between (outermost
    phases only: a nested one would reset its parent's peak)."""
    if _depth[0]:
        yield
        return
    _depth[0] += 1
    before = _status_mb()["VmRSS"]
    Path("/proc/self/clear_refs").write_text("5")
    start = time.perf_counter()
    try:
        yield
    finally:
        after = _status_mb()
        PHASES.append({"phase": name, "rss_before_mb": round(before, 1),
                       "peak_mb": round(after["VmHWM"], 1),
                       "rss_after_mb": round(after["VmRSS"], 1),
                       "seconds": round(time.perf_counter() - start, 2)})
        _depth[0] -= 1


def instrument() -> None:
    """Wrap the training step, the dev evaluation's prediction and scoring, and the save."""
    update, evaluate, to_disk, score = (Language.update, Language.evaluate, Language.to_disk,
                                        Scorer.score)

    def timed_update(self, *args, **kwargs):
        with phase("update"):
            return update(self, *args, **kwargs)

    def timed_evaluate(self, examples, *args, **kwargs):
        examples = list(examples)
        with phase("evaluate"):
            return evaluate(self, examples, *args, **kwargs)

    def timed_to_disk(self, *args, **kwargs):
        with phase("save"):
            return to_disk(self, *args, **kwargs)

    def timed_score(self, examples, *args, **kwargs):
        resident = _status_mb()
        release_free_memory()
        PHASES.append({"phase": "evaluate: predicted, scoring starts",
                       "rss_mb": round(resident["VmRSS"], 1),
                       "peak_so_far_mb": round(resident["VmHWM"], 1),
                       "rss_after_trim_mb": round(_status_mb()["VmRSS"], 1),
                       "docs": len(examples),
                       "trf_data_mb": round(trf_data_bytes(examples) / 2**20, 1)})
        return score(self, examples, *args, **kwargs)

    Language.update, Language.evaluate = timed_update, timed_evaluate
    Language.to_disk = timed_to_disk
    Scorer.score = timed_score


def trf_data_bytes(examples) -> int:
    """The bytes of the arrays that the predicted docs keep in ``doc._.trf_data`` (the shared
    transformer's output, spacy-transformers' ``TransformerData``), each buffer counted once."""
    seen, total = set(), 0

    def count(value) -> None:
        nonlocal total
        if isinstance(value, (list, tuple)):
            for part in value:
                count(part)
        elif hasattr(value, "nbytes"):
            base = value.base if getattr(value, "base", None) is not None else value
            if id(base) not in seen:
                seen.add(id(base))
                total += int(base.nbytes)

    for eg in examples:
        doc = eg.predicted
        data = doc._.trf_data if doc.has_extension("trf_data") else None
        if data is None:
            continue
        count(list(data.model_output.values()))
        count([data.wordpieces.input_ids, data.wordpieces.attention_mask])
        count([data.align.data, data.align.lengths])
    return total


def summarize(phases: List[Dict[str, Any]]) -> Dict[str, Dict[str, float]]:
    by: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for row in phases:
        if "peak_mb" in row:
            by[row["phase"]].append(row)
    return {name: {"count": len(rows), "max_peak_mb": max(r["peak_mb"] for r in rows),
                   "max_rise_mb": max(r["peak_mb"] - r["rss_before_mb"] for r in rows),
                   "max_rss_after_mb": max(r["rss_after_mb"] for r in rows)}
            for name, rows in by.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--train-limit", type=int, default=3000)
    parser.add_argument("--max-steps", type=int, default=120)
    parser.add_argument("--eval-frequency", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="more config overrides (values as JSON)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    overrides: Dict[str, Any] = {
        "paths.train": args.train, "paths.dev": args.dev, "paths.train_limit": args.train_limit,
        "paths.encoder": resolve_encoder(args.encoder), "training.max_steps": args.max_steps,
        "training.eval_frequency": args.eval_frequency}
    for item in args.set:
        key, value = item.split("=", 1)
        overrides[key] = json.loads(value)
    instrument()
    with tempfile.TemporaryDirectory() as output:
        train(args.config, Path(output), overrides=overrides)
    summary = summarize(PHASES)
    report = {"command": " ".join(sys.argv), "machine": machine(), "spacy": spacy.__version__,
              "overrides": overrides, "summary": summary, "phases": PHASES,
              "process_peak_mb": round(_status_mb()["VmHWM"], 1)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [f"`{report['command']}`", "",
             "Peak resident size by phase of `spacy train` (MB; the peak is reset before each "
             "phase, so each is the process's peak during that phase)", "",
             "| phase | count | max peak | max rise over its start | max resident after |",
             "|---|---|---|---|---|",
             *[f"| {name} | {s['count']} | {s['max_peak_mb']:.0f} | {s['max_rise_mb']:.0f} | "
               f"{s['max_rss_after_mb']:.0f} |" for name, s in summary.items()], ""]
    marks = [r for r in PHASES if "rss_mb" in r]
    if marks:
        lines.append("Resident when an evaluation's prediction ended and scoring began: "
                     + ", ".join(f"{r['rss_mb']:.0f}" for r in marks) + " MB")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
