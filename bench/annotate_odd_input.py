"""``annotate`` over a corpus built to stop a job: a document of several MB (over spaCy's
1,000,000-character ``max_length``), a line with bytes that are not UTF-8, a duplicate id, an
id that is an object, a line that is not JSON, among ordinary documents. Runs the CLI as a
user does (``/usr/bin/time -v``), then checks the output: every valid document exactly once,
the long one's text whole and its spans at offsets that hold their text, and the summary
listing each odd line.

    python bench/annotate_odd_input.py --pipeline PIPELINE \
        --sentences ../shared/data/genia/dev.jsonl \
        --out bench/results/annotate_cpu_minilm/annotate_odd_input_tiny
    python bench/annotate_odd_input.py --fresh ...   # a freshly initialized default pipeline

(``annotate_odd_input_tiny`` was measured with an earlier ``--tiny``: a pipeline on the tests'
tiny random encoder, before tests and bench stopped importing each other.)
"""
import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib.pipelines import fresh_pipeline


def sentences(path: Path, n: int) -> list:
    """The first ``n`` sentences of a GENIA-style JSON Lines file, as text."""
    texts = []
    with path.open(encoding="utf8") as f:
        for line in f:
            texts.append(" ".join(json.loads(line)["tokens"]))
            if len(texts) == n:
                break
    return texts


def build_corpus(path: Path, texts: list, mb: float) -> dict:
    """Write the corpus; RETURNS: the id and text of each valid document, and what is odd."""
    big, size, i = [], 0, 0
    while size < mb * 1_000_000:
        big.append(texts[i % len(texts)] + (" \n" if i % 8 == 7 else " "))
        size += len(big[-1])
        i += 1
    big_text = "".join(big)
    lines = [json.dumps({"id": f"s{k}", "text": t}).encode() for k, t in enumerate(texts[:20])]
    lines.insert(5, json.dumps({"id": "big", "text": big_text}).encode())
    bad = texts[0].encode() + b" caf\xe9"
    lines.insert(8, b'{"id": "bad-bytes", "text": "' + bad + b'"}')
    lines.insert(11, json.dumps({"id": "s3", "text": texts[1]}).encode())  # duplicate id
    lines.insert(13, json.dumps({"id": {"pmid": 1}, "text": texts[2]}).encode())
    lines.insert(15, b'{"id": "broken", "text": ')
    path.write_bytes(b"\n".join(lines) + b"\n")
    valid = []
    for line in lines:
        try:
            record = json.loads(line.decode("utf8", "replace"))
        except json.JSONDecodeError:
            continue
        doc_id = record["id"]
        doc_id = doc_id if isinstance(doc_id, str) else json.dumps(doc_id, sort_keys=True)
        valid.append((doc_id, record["text"]))
    return {"valid": valid, "big_chars": len(big_text), "lines": len(lines)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", type=Path)
    parser.add_argument("--fresh", action="store_true",
                        help="a freshly initialized default pipeline (embedded MiniLM) instead")
    parser.add_argument("--sentences", type=Path, required=True)
    parser.add_argument("--mb", type=float, default=5.0, help="size of the long document")
    parser.add_argument("--out", type=Path, required=True, help="results path, no suffix")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="odd_input_"))
    pipeline = fresh_pipeline(work / "pipeline") if args.fresh else args.pipeline
    corpus = build_corpus(work / "corpus.jsonl", sentences(args.sentences, 200), args.mb)
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "spacy_nested_mrc", "annotate",
               str(pipeline), str(work / "corpus.jsonl"), str(work / "out"), "--no-progress"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    records = [json.loads(line) for shard in manifest["shards"]
               for line in (work / "out" / shard["name"]).open(encoding="utf8")]
    big = next(r for r in records if r["id"] == "big")
    checks = {
        "exit code 0": result.returncode == 0,
        "every valid document once, in order": [(r["id"], r["text"]) for r in records]
        == corpus["valid"],
        "the long document's text whole": len(big["text"]) == corpus["big_chars"],
        "every span's offsets hold its text": all(
            r["text"][s["start_char"]:s["end_char"]] == s["text"] for r in records
            for s in r["spans"]),
    }
    summary_text = result.stdout.strip()
    report = {
        "machine": f"{platform.node()} ({platform.processor() or platform.machine()})",
        "pipeline": "freshly initialized default pipeline" if args.fresh else str(pipeline),
        "command": " ".join(command[3:]),
        "corpus": {k: v for k, v in corpus.items() if k != "valid"},
        "seconds": round(seconds, 1),
        "peak_rss_mib": round(int(peak.group(1)) / 1024) if peak else None,
        "checks": checks,
        "summary": manifest["summary"],
        "stdout": summary_text,
        "warnings": [line for line in result.stderr.splitlines() if "[NM" in line],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    md = [f"# annotate over odd input\n\nMachine: {report['machine']}. Pipeline: "
          f"{report['pipeline']}.\n\n`{report['command']}` over {corpus['lines']} lines, one "
          f"document of {corpus['big_chars']:,} characters: {report['seconds']} s, peak RSS "
          f"{report['peak_rss_mib']} MiB.\n\n## Checks\n"]
    md += [f"- {name}: {'yes' if ok else '**NO**'}" for name, ok in checks.items()]
    md += ["\n## What the job printed\n", "```", summary_text, "```",
           "\n## Its warnings\n", "```", *report["warnings"], "```"]
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    if not all(checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
