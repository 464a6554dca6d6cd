"""Training time per step in fp32 and bf16, in one process, interleaved: a shipped CPU config
built twice from the same seed (``precision`` fp32 and bf16, for every model of ours in it),
each updated on the same GENIA train batches in turn, as ``spacy train`` batches them
(``batch_by_words``, the config's size), so a noisy machine slows both alike. The time per
epoch scales with the time per step (same batches, same number of steps).

    python bench/precision_train_speed.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --steps 30 --threads 1 \\
        --out bench/results/speed_cpu_minilm/precision_train_speed_mrc_packed
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

import torch
from benchlib.machine import machine
from benchlib.training import batches, build
from spacy.training import Example
from spacy.util import fix_random_seed

from spacy_nested_mrc.runtime.memory import peak_rss_mb

PRECISIONS = ("fp32", "bf16")


def profile(nlp, optimizer, data: List[List[Example]]) -> Dict[str, float]:
    """Self CPU seconds a step by operator over ``data``'s updates."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for batch in data:
            nlp.update(batch, sgd=optimizer, drop=0.1)
    totals: Dict[str, float] = {}
    for event in prof.key_averages():
        totals[event.key] = totals.get(event.key, 0.0) + event.self_cpu_time_total / 1e6
    return {name: seconds / len(data) for name, seconds in totals.items() if seconds > 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--train", required=True)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--words", type=int, default=400, help="words per batch (the config's)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--profile", type=int, default=0,
                        help="after the timed steps, profile this many more steps of each "
                             "precision (torch.profiler) and report the operators' self time")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pipelines, optimizers, data = {}, {}, {}
    for precision in PRECISIONS:
        nlp = build(args.config, args.train, precision, args.encoder)
        data[precision] = batches(nlp, args.train, args.words, args.steps + args.profile)
        fix_random_seed(0)
        optimizers[precision] = nlp.initialize(
            lambda b=data[precision]: [eg for batch in b for eg in batch])
        pipelines[precision] = nlp
    seconds: Dict[str, List[float]] = {p: [] for p in PRECISIONS}
    losses: Dict[str, List[float]] = {p: [] for p in PRECISIONS}
    for step in range(args.steps + 1):
        for precision in PRECISIONS:
            nlp = pipelines[precision]
            start = time.perf_counter()
            result = nlp.update(data[precision][step], sgd=optimizers[precision], drop=0.1)
            took = time.perf_counter() - start
            if step:  # the first batch warms up
                seconds[precision].append(took)
                losses[precision].append(float(sum(result.values())))
    rows = []
    for precision in PRECISIONS:
        rows.append({"precision": precision, "steps": len(seconds[precision]),
                     "median_s_per_step": statistics.median(seconds[precision]),
                     "total_s": sum(seconds[precision]),
                     "mean_loss": statistics.mean(losses[precision])})
    profiles = {p: profile(pipelines[p], optimizers[p], data[p][args.steps + 1:])
                for p in PRECISIONS} if args.profile else {}
    ratio = rows[1]["total_s"] / rows[0]["total_s"]
    median_ratio = rows[1]["median_s_per_step"] / rows[0]["median_s_per_step"]
    report = {"command": " ".join(sys.argv), "machine": machine(), "rows": rows,
              "bf16_over_fp32_total": ratio, "bf16_over_fp32_median": median_ratio,
              "peak_rss_mb": peak_rss_mb(), "profile_self_s_per_step": profiles}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [f"`{report['command']}`", "",
             f"{args.steps} steps of about {args.words} words each, interleaved, "
             f"{args.threads} thread(s), after one warm-up step", "",
             "| precision | s/step (median) | total s | mean loss |", "|---|---|---|---|",
             *[f"| {r['precision']} | {r['median_s_per_step']:.2f} | {r['total_s']:.1f} | "
               f"{r['mean_loss']:.2f} |" for r in rows], "",
             f"bf16 / fp32 time: {ratio:.3f} (total), {median_ratio:.3f} (median step)"]
    if profiles:
        names = sorted(set().union(*profiles.values()),
                       key=lambda n: -profiles["fp32"].get(n, 0) - profiles["bf16"].get(n, 0))[:20]
        lines += ["", f"Self time a step by operator (torch.profiler, {args.profile} more steps "
                  "each; the 20 largest):", "", "| operator | fp32 s | bf16 s |", "|---|---|---|",
                  *[f"| `{n}` | {profiles['fp32'].get(n, 0):.3f} | "
                    f"{profiles['bf16'].get(n, 0):.3f} |"
                    for n in names]]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
