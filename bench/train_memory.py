"""Peak resident memory of ``spacy train`` by training-set size, with and without giving freed
heap memory back (``spacy-nested-mrc.release_memory.v1``): each run is ``genia_bench.py
--phase train`` in its own process (one epoch), its resident size sampled every second.

    python bench/train_memory.py --train ../shared/data/genia/train.jsonl \
        --dev ../shared/data/genia/dev.jsonl --configs mrc_packed --sizes 1500 5000 \
        --remedies none trim mmap --out bench/results/memory_cpu_minilm/train_memory_cpu_minilm

Remedies: ``none`` (glibc's defaults; the shipped configs' callback switched off), ``trim``
(``malloc_trim(0)`` every 50 steps), ``trim10`` (every 10 steps), ``trim1`` (every step),
``mmap`` (allocations of 1 MB and more in memory maps of their own, and the trim).
Writes ``OUT.json`` (with every run's RSS series) and ``OUT.md``.
"""
import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

from benchlib.machine import machine
from benchlib.memory import rss_mb

ROOT = Path(__file__).resolve().parents[1]
CALLBACK = "spacy-nested-mrc.release_memory.v1"
REMEDIES: Dict[str, Dict[str, Any]] = {
    "none": {},
    "trim": {"@callbacks": CALLBACK, "every": 50},
    "mmap": {"@callbacks": CALLBACK, "every": 50, "mmap_threshold": 1 << 20},
    "trim1": {"@callbacks": CALLBACK, "every": 1},
    "trim10": {"@callbacks": CALLBACK, "every": 10},
}


def run(args: argparse.Namespace, config: str, size: int, remedy: str) -> Dict[str, Any]:
    row = f"mem_{config}_{size}_{remedy}" + (f"_{args.epochs}ep" if args.epochs != 1 else "")
    row += f"_{args.tag}" if args.tag else ""
    command = [
        sys.executable, str(ROOT / "bench" / "genia_bench.py"), "--phase", "train",
        "--model", f"{row}={config}", "--train", args.train, "--dev", args.dev,
        "--train-limit", str(size), "--epochs", str(args.epochs), "--threads", str(args.threads),
        "--work", args.work,
    ]  # fmt: skip
    # "none" switches off the callback the shipped configs have
    callback = json.dumps(REMEDIES[remedy] or None)
    command += ["--set", f"{row}:training.before_update={callback}"]
    for setting in args.set:
        command += ["--set", f"{row}:{setting}"]
    series: List[List[float]] = []
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def sample() -> None:
        while process.poll() is None:
            resident = rss_mb(process.pid)
            if resident:  # 0 once the process has gone
                series.append([round(time.perf_counter() - start, 1), round(resident)])
            time.sleep(1.0)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{row} failed ({process.returncode}): {' '.join(command)}")
    stats = json.loads(out.decode().strip().splitlines()[-1])
    return {
        "config": config,
        "sentences": size,
        "epochs": args.epochs,
        "remedy": remedy,
        "settings": args.set,
        "peak_rss_mb": stats["train_peak_rss_mb"],
        "train_seconds": stats["train_seconds"],
        "final_rss_mb": series[-1][1] if series else None,
        "rss_series": series,
    }


def markdown(report: Dict[str, Any]) -> str:
    lines = [
        "Peak RSS of `spacy train` (batches of 400 words, MiniLM, CPU) by training "
        "sentences; `none`: glibc's defaults, `trim`: `malloc_trim(0)` every 50 steps, "
        "`trim10`: every 10 steps, `trim1`: every step, "
        "`mmap`: allocations of 1 MB and more mapped on their own, and the trim.",
        "",
        "| config | sentences | epochs | remedy | peak RSS MB | RSS at the end MB | train s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['config']} | {r['sentences']} | {r.get('epochs', 1)} | {r['remedy']} "
            f"| {r['peak_rss_mb']} "
            f"| {r['final_rss_mb']} | {r['train_seconds']} |"
        )
    settings = report["settings"].get("set")
    if settings:
        lines += ["", f"Settings of every run beyond the shipped config: {settings}."]
    lines += ["", f"Machine: {report['machine']}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--configs", nargs="+", default=["mrc_packed"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1500, 5000])
    parser.add_argument("--remedies", nargs="+", choices=sorted(REMEDIES), default=["none"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs of each run (several epochs of few sentences tell the "
                             "memory of more steps from that of more data)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config setting of every run (genia_bench's --set)")
    parser.add_argument("--tag", default="", help="suffix of the runs' pipeline names")
    parser.add_argument("--work", default=str(ROOT / "bench" / "work_memory"))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    runs = []
    for config in args.configs:
        for size in args.sizes:
            for remedy in args.remedies:
                runs.append(run(args, config, size, remedy))
                print(json.dumps({k: v for k, v in runs[-1].items() if k != "rss_series"}))
                report = {"settings": vars(args), "machine": machine(), "runs": runs}
                Path(f"{args.out}.json").write_text(json.dumps(report, indent=1))
                Path(f"{args.out}.md").write_text(markdown(report) + "\n")
    print(markdown(report))


if __name__ == "__main__":
    main()
