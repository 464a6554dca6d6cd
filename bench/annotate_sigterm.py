"""How long ``annotate --n-process N`` takes to end after SIGTERM, over many jobs: the race of
#55 (the parent rolled back and released its lock, its workers gone, and then never exited,
blocked at interpreter exit joining a queue's feeder thread). Each job annotates the same
input into a fresh folder, gets SIGTERM once its first shard is committed, and is timed to
its exit (killed after ``--give-up`` seconds, and counted as hung). Writes OUT.json and
OUT.md with every job's exit code and seconds.

    python bench/annotate_sigterm.py --sentences ../shared/data/genia/dev.jsonl \
        --jobs 20 --out bench/results/annotate_cpu_minilm/annotate_sigterm

Without ``--pipeline``, a freshly initialized packed MRC pipeline (the factory's default:
the embedded all-MiniLM-L6-v2, GENIA's labels) is saved in a temporary folder.
"""
import argparse
import json
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from benchlib.annotate import annotate_command, write_input
from benchlib.machine import commit, machine
from benchlib.pipelines import fresh_pipeline


def one_job(args: list, out: Path, log: Path, give_up: float) -> dict:
    """One job, SIGTERM once a shard is committed. RETURNS: exit code, seconds to exit."""
    with log.open("w") as err:  # a file: a worker left behind would hold a pipe open
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    manifest, deadline = out / "manifest.json", time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if manifest.exists() and json.loads(manifest.read_text())["shards"]:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        return {"exit_code": proc.returncode, "seconds": None, "hung": False,
                "note": "ended before the signal"}
    sent = time.time()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=give_up)
        hung = False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        hung = True
    lines = log.read_text().strip().splitlines()
    return {"exit_code": proc.returncode, "seconds": round(time.time() - sent, 2),
            "hung": hung, "last_line": lines[-1][:200] if lines else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=Path, required=True, help="GENIA-style JSONL")
    parser.add_argument("--pipeline", default=None)
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--sentences-per-doc", type=int, default=1,
                        help="documents of this many consecutive sentences")
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--n-process", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=25)
    parser.add_argument("--give-up", type=float, default=60.0)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    opts = parser.parse_args()
    sentences = [" ".join(json.loads(line)["tokens"]) for line in opts.sentences.open()]
    k = opts.sentences_per_doc
    texts = [" ".join(sentences[i:i + k]) for i in range(0, len(sentences), k)]
    jobs = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pipeline = opts.pipeline or fresh_pipeline(tmp / "pipeline")
        source = write_input(tmp / "docs.jsonl", texts, opts.docs)
        for k in range(opts.jobs):
            out = tmp / f"out{k}"
            args = annotate_command(pipeline, source, out, "--n-process", str(opts.n_process),
                                    "--shard-size", str(opts.shard_size))
            jobs.append(one_job(args, out, tmp / f"stderr{k}.txt", opts.give_up))
            print(k, jobs[-1], flush=True)
    timed = [j["seconds"] for j in jobs if j["seconds"] is not None]
    report = {"command": " ".join(["python bench/annotate_sigterm.py",
                                   *(a for a in __import__("sys").argv[1:])]),
              "machine": machine(), "commit": commit(), "jobs": jobs,
              "hung": sum(j["hung"] for j in jobs),
              "max_seconds": max(timed) if timed else None}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    md = [f"# annotate --n-process {opts.n_process}: SIGTERM after the first shard, "
          f"{opts.jobs} jobs\n", f"`{report['command']}` (commit {report['commit']})\n",
          f"Machine: {report['machine']}\n",
          f"Hung (no exit within {opts.give_up:.0f} s, then killed): {report['hung']}; "
          f"longest exit: {report['max_seconds']} s\n",
          "| job | exit code | seconds to exit | hung |", "|---|---|---|---|"]
    md += [f"| {k} | {j['exit_code']} | {j['seconds']} | {j['hung']} |"
           for k, j in enumerate(jobs)]
    opts.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
