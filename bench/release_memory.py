"""What giving freed memory back costs ``spacy train``: short runs of a shipped CPU config as a
user runs them (``python -m spacy train`` under ``/usr/bin/time -v``, one thread), one fresh
process per variant, the variants alternated round after round (A B C ... A B C ...) so that a
busy machine slows every variant of a round alike. Each run's user and system time, minor page
faults, peak RSS and wall clock; the runs' logs are kept beside the table.

    python bench/release_memory.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl \\
        --steps 60 --train-limit 1500 --dev-limit 100 --rounds 2 --threads 1 \\
        --out bench/results/release_memory_cpu_minilm/release_memory_mrc_packed

Variants: ``shipped`` (the config's ``[training.before_update]``: ``malloc_trim(0)`` every
step), ``every64`` (every 64 steps), ``none`` (no callback: glibc's defaults), ``glibc_heap``
(no callback; glibc kept from mapping and trimming by its environment variables: every block
in the heap, nothing given back), ``jemalloc`` and ``tcmalloc`` (the shipped config with
Debian's libjemalloc2 or libtcmalloc-minimal4 preloaded; glibc's ``malloc_trim`` then finds
almost nothing to give back).
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

from benchlib.outputs import write_table
from benchlib.timev import parse_time_v

LIB = Path("/usr/lib/x86_64-linux-gnu")
# name -> (spacy train overrides, environment)
VARIANTS: Dict[str, Any] = {
    "shipped": ([], {}),
    "every64": (["--training.before_update.every", "64"], {}),
    "none": (["--training.before_update", "null"], {}),
    "glibc_heap": (["--training.before_update", "null"],
                   {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 33),
                    "MALLOC_TOP_PAD_": str(1 << 26), "MALLOC_ARENA_MAX": "2"}),
    "jemalloc": ([], {"LD_PRELOAD": str(LIB / "libjemalloc.so.2")}),
    "tcmalloc": ([], {"LD_PRELOAD": str(LIB / "libtcmalloc_minimal.so.4")}),
}
REPORTED = ("user_s", "system_s", "minor_faults", "peak_rss_mb", "wall_s")


def train(args: argparse.Namespace, variant: str, log: Path) -> Dict[str, float]:
    """One ``spacy train`` run of ``variant`` under ``/usr/bin/time -v``; its log in ``log``."""
    overrides, variables = VARIANTS[variant]
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "spacy", "train", args.config,
               "--paths.train", args.train, "--paths.dev", args.dev,
               "--paths.train_limit", str(args.train_limit),
               "--corpora.dev.limit", str(args.dev_limit),
               "--training.max_steps", str(args.steps), "--training.eval_frequency", "1000",
               *overrides]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads), **variables}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    log.write_text(" ".join(f"{k}={v}" for k, v in variables.items()) + " "
                   + " ".join(command) + "\n" + done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: {done.stderr[-2000:]}")
    return parse_time_v(done.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--steps", type=int, default=60, help="training steps a run")
    parser.add_argument("--train-limit", type=int, default=1500, help="training sentences")
    parser.add_argument("--dev-limit", type=int, default=100, help="dev sentences")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each variant, alternated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    logs = Path(args.out).parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runs: List[Dict[str, Any]] = []
    for round_ in range(args.rounds):
        for variant in args.variants:
            counts = train(args, variant, logs / f"{Path(args.out).name}_{variant}_{round_}.log")
            runs.append({"round": round_, "variant": variant, **counts})
            print(round_, variant, {k: counts.get(k) for k in REPORTED}, flush=True)
    base = args.variants[0]
    lines = [f"`spacy train {args.config}`: {args.steps} steps on the first {args.train_limit} "
             f"train sentences, dev evaluation on {args.dev_limit} (at step 0), "
             f"{args.threads} thread(s), one fresh process a run, variants alternated in "
             f"{args.rounds} rounds; `/usr/bin/time -v`. `x {base}` is the run's system time "
             f"over the `{base}` run of the same round.", "",
             "| round | variant | user s | system s | x " + base + " | minor faults (M) | "
             "peak RSS MiB | wall s |", "|---|---|---|---|---|---|---|---|"]
    first = {r["round"]: r for r in runs if r["variant"] == base}
    for r in runs:
        lines.append(f"| {r['round']} | {r['variant']} | {r['user_s']:.1f} | {r['system_s']:.1f}"
                     f" | {r['system_s'] / first[r['round']]['system_s']:.2f} | "
                     f"{r['minor_faults'] / 1e6:.2f} | {r['peak_rss_mb']:,.0f} | "
                     f"{r['wall_s']:.0f} |")
    lines += ["", "Medians over the rounds:", "",
              "| variant | user s | system s | minor faults (M) | peak RSS MiB | wall s |",
              "|---|---|---|---|---|---|"]
    for variant in args.variants:
        mine = [r for r in runs if r["variant"] == variant]
        med = {k: statistics.median(r[k] for r in mine) for k in REPORTED}
        lines.append(f"| {variant} | {med['user_s']:.1f} | {med['system_s']:.1f} | "
                     f"{med['minor_faults'] / 1e6:.2f} | {med['peak_rss_mb']:,.0f} | "
                     f"{med['wall_s']:.0f} |")
    lines += ["", "Variants: " + "; ".join(
        f"`{name}`: {' '.join(VARIANTS[name][0]) or 'the config as shipped'}"
        + (f" with {' '.join(f'{k}={v}' for k, v in VARIANTS[name][1].items())}"
           if VARIANTS[name][1] else "") for name in args.variants)]
    write_table(args.out, runs, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
