"""``annotate --n-process 2`` with a real pipeline, ended as a supervisor ends it: SIGTERM, then
(a second job) SIGKILL to the parent after its first commits. Records, with ``ps``, the
job's processes before the signal and a few seconds after the parent ended (a worker left
behind would hold its pipeline's memory, blocked on a pipe), the exit code and last line of
the parent, whether the lock is gone, and that the same command run again finishes with
every document exactly once.

    python bench/annotate_signals.py --pipeline PIPELINE \
        --sentences ../shared/data/genia/dev.jsonl \
        --out bench/results/annotate_cpu_minilm/annotate_signals
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAIT_AFTER = 5.0  # seconds after the parent ended before ``ps`` is read


def write_input(sentences: Path, path: Path, n: int) -> list:
    """``n`` documents as JSON Lines (GENIA dev sentences joined by spaces, repeated);
    RETURNS: their ids."""
    texts = [" ".join(json.loads(line)["tokens"]) for line in sentences.open(encoding="utf8")]
    ids = [f"d{i}" for i in range(n)]
    with path.open("w", encoding="utf8") as f:
        for i, doc_id in enumerate(ids):
            f.write(json.dumps({"id": doc_id, "text": texts[i % len(texts)]}) + "\n")
    return ids


def ps(pids: list) -> str:
    """``ps`` lines of ``pids`` that still exist (header included)."""
    if not pids:
        return "(no pids)"
    result = subprocess.run(["ps", "-o", "pid,ppid,stat,rss,etime,args", "-p",
                             ",".join(map(str, pids))], capture_output=True, text=True)
    return result.stdout.strip()


def children(parent: int) -> list:
    result = subprocess.run(["ps", "-o", "pid=", "--ppid", str(parent)], capture_output=True,
                            text=True)
    return [int(p) for p in result.stdout.split()]


def run_case(sig: int, args: list, out: Path, log: Path) -> dict:
    with log.open("w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    workers, deadline = [], time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        workers = children(proc.pid) or workers
        manifest = out / "manifest.json"
        if manifest.exists() and len(json.loads(manifest.read_text())["shards"]) >= 2:
            break
        time.sleep(0.2)
    before = ps([proc.pid, *workers])
    sent = time.time()
    os.kill(proc.pid, sig)
    proc.wait(timeout=120)
    ended = time.time() - sent
    time.sleep(WAIT_AFTER)
    after = ps(workers)
    left = [pid for pid in workers if subprocess.run(["ps", "-p", str(pid)],
                                                      capture_output=True).returncode == 0]
    lines = log.read_text().strip().splitlines()
    return {
        "signal": signal.Signals(sig).name, "workers": workers, "ps_before": before,
        "parent_exit_code": proc.returncode, "parent_ended_after_s": round(ended, 2),
        "ps_5s_after": after, "workers_left": left, "last_line": lines[-1] if lines else "",
        "lock_left": (out / "annotate.lock").exists(),
        "committed_before_resume": sum(s["docs"] for s in
                                       json.loads((out / "manifest.json").read_text())["shards"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--sentences", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    opts = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "docs.jsonl"
        ids = write_input(opts.sentences, source, opts.docs)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            out = Path(tmp) / f"out_{sig}"
            args = [sys.executable, "-m", "spacy_nested_mrc", "annotate", opts.pipeline,
                    str(source), str(out), "--n-process", "2", "--shard-size", "200",
                    "--batch-size", "32", "--no-progress"]
            case = run_case(sig, args, out, Path(tmp) / f"stderr_{sig}.txt")
            resumed = subprocess.run(args, capture_output=True, text=True)
            records = []
            manifest = json.loads((out / "manifest.json").read_text())
            for shard in manifest["shards"]:
                with (out / shard["name"]).open(encoding="utf8") as f:
                    records += [json.loads(line)["id"] for line in f]
            case.update(resume_exit_code=resumed.returncode,
                        every_document_once=records == ids, documents=len(records))
            results.append(case)
    report = {"command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "cases": results}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    md = ["# annotate --n-process 2 ended by a signal\n", f"`{report['command']}`\n",
          f"Machine: {report['machine']}\n"]
    for case in results:
        md += [f"## {case['signal']} to the parent\n",
               f"- parent exit code {case['parent_exit_code']}, ended "
               f"{case['parent_ended_after_s']} s after the signal; last line: "
               f"`{case['last_line']}`",
               f"- lock left: {case['lock_left']}; documents committed: "
               f"{case['committed_before_resume']}",
               f"- workers left {WAIT_AFTER:.0f} s after: {case['workers_left'] or 'none'}",
               f"- the same command again: exit {case['resume_exit_code']}, "
               f"{case['documents']} documents, every one exactly once: "
               f"{case['every_document_once']}\n",
               "ps before the signal:\n", "```", case["ps_before"], "```\n",
               f"ps {WAIT_AFTER:.0f} s after the parent ended (the workers' pids):\n", "```",
               case["ps_5s_after"], "```\n"]
    opts.out.with_suffix(".md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
