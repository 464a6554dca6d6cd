"""What adapting an encoder costs (#39): ``adapt_encoder`` as the ``adapt`` command runs it,
for a few steps, with the resident memory after each step and around the held-out
measurement, so the time per million words and the peak RSS of a long run can be read (and
where the memory goes). Configs and overrides as the command takes them.

    python bench/adapt_cost.py configs/adapt/adapt_cpu.cfg --paths.text TEXT \
        --paths.encoder ~/.cache/nested-ner-encoders/all-mpnet-base-v2 --adapt.max_steps 10 \
        --threads 1 --out bench/results/adapt_cpu_minilm/adapt_cost_mpnet
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    """The current resident set size (VmRSS), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    from spacy.cli._util import parse_config_overrides

    from spacy_nested_mrc.adapt.loop import adapt_encoder
    from spacy_nested_mrc.adapt.settings import load_settings
    from spacy_nested_mrc.runtime.memory import peak_rss_mb

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    args, rest = parser.parse_known_args()
    torch.set_num_threads(args.threads)
    settings = load_settings(args.config, parse_config_overrides(rest))
    steps = []
    report_before = {}
    started = time.perf_counter()
    loaded_rss = rss_mib()

    def on_step(info) -> None:
        if info.loss is None:  # before the first step: the encoder's held-out loss as it came
            report_before.update(held_out=info.held_out,
                                 seconds=round(time.perf_counter() - started, 2))
            return
        steps.append({"step": info.step, "seconds": round(time.perf_counter() - started, 2),
                      "words": info.words, "rss_mib": round(rss_mib()),
                      "peak_rss_mib": round(peak_rss_mb()), "loss": round(info.loss, 3),
                      "held_out": info.held_out})

    with tempfile.TemporaryDirectory() as tmp:
        result = adapt_encoder(settings, Path(tmp) / "out", on_step=on_step)
    # a step's cost is the time since the step before; the first step carries the start-up
    # (loading, the held-out sequences and their loss) and a step that measured the held-out
    # loss (the last one always does) carries that measurement: both are left out
    timed = [(after["seconds"] - before["seconds"], after["words"] - before["words"])
             for before, after in zip(steps, steps[1:]) if after["held_out"] is None]
    seconds = sum(spent for spent, _ in timed)
    words = sum(read for _, read in timed)
    report = {
        "command": " ".join(["python", *sys.argv]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"torch {torch.__version__}, {args.threads} thread(s)",
        "settings": result.settings,
        "before_first_step": report_before,
        "steps": steps,
        "timed_steps": len(timed),
        "seconds_per_step": round(seconds / len(timed), 2) if timed else None,
        "minutes_per_million_words": round(seconds / 60 / words * 1e6, 1) if words else None,
        "peak_rss_mib": round(peak_rss_mb()),
        "rss_before_run_mib": round(loaded_rss),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [f"# Adaptation cost: {Path(settings.encoder).name}", "", f"`{report['command']}`", "",
             f"Machine: {report['machine']}", "",
             f"- {report['seconds_per_step']} s a step of {settings.batch_size} x "
             f"{settings.max_length} wordpieces ({settings.precision}), "
             f"**{report['minutes_per_million_words']} minutes per million words** "
             f"({len(timed)} step{'s' if len(timed) != 1 else ''}: neither the first nor one "
             "that measured the held-out loss)",
             f"- peak RSS **{report['peak_rss_mib']} MiB** (before the run: "
             f"{report['rss_before_run_mib']} MiB)", "",
             "| step | s since start | words | RSS MiB | peak MiB | loss | held-out loss |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {s['step']} | {s['seconds']} | {s['words']} | {s['rss_mib']} | "
              f"{s['peak_rss_mib']} | {s['loss']} | {s['held_out'] if s['held_out'] else ''} |"
              for s in steps]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
