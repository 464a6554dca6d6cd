"""``annotate`` over GENIA abstracts before and after batching by length, same pipeline, one
process, alternating: "before" is ``--sort-buffer 0`` with the encoder's ``max_pass_tokens = 0``
(documents in input order, one encoder call a pass), "after" the defaults. Documents/s of each
run, and the two outputs compared (the same records and spans; the largest score difference).

    python bench/annotate_by_length.py --pipeline PATH --abstracts 2000 \\
        --genia ../shared/data/genia/train.jsonl ../shared/data/genia/dev.jsonl \\
        --out bench/results/annotate_cpu_minilm/annotate_by_length_cpu_minilm
"""

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import spacy
import srsly
import torch
from benchlib.configs import budget_key
from benchlib.outputs import write_table

from spacy_nested_mrc.annotate import AnnotateSettings, InputSpec, annotate_corpus


def write_abstracts(paths: List[str], limit: int, target: Path) -> int:
    """GENIA's sentences joined by their ``doc`` field, as ``{"id", "text"}`` lines."""
    abstracts: Dict[str, List[str]] = {}
    for path in paths:
        for record in srsly.read_jsonl(path):
            abstracts.setdefault(record.get("doc", ""), []).append(" ".join(record["tokens"]))
    items = list(abstracts.items())[:limit]
    srsly.write_jsonl(target, [{"id": doc, "text": " ".join(s)} for doc, s in items])
    return len(items)


def read_records(folder: Path) -> List[Dict[str, Any]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    records = []
    for shard in manifest["shards"]:
        records += list(srsly.read_jsonl(folder / shard["name"]))
    return records


def compare(a: List[Dict[str, Any]], b: List[Dict[str, Any]]) -> Dict[str, Any]:
    def key(record):
        return record["id"], [(s["start_char"], s["end_char"], s["label"]) for s in record["spans"]]

    same = [key(x) for x in a] == [key(y) for y in b]
    worst = max((abs(p["score"] - q["score"]) for x, y in zip(a, b) if key(x) == key(y)
                 for p, q in zip(x["spans"], y["spans"])), default=0.0)
    return {"same_records_and_spans": same, "max_score_difference": worst}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--genia", nargs="+", required=True)
    parser.add_argument("--abstracts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="annotate_by_length_"))
    source = work / "abstracts.jsonl"
    n_docs = write_abstracts(args.genia, args.abstracts, source)
    before_pipeline = work / "before"
    spacy.load(args.pipeline, config={budget_key(args.pipeline): 0}).to_disk(before_pipeline)
    variants = {
        "before (input order, one encoder call a pass)": (str(before_pipeline), 0),
        "after (sorted by length)": (args.pipeline, AnnotateSettings().sort_buffer),
    }
    seconds: Dict[str, List[float]] = {name: [] for name in variants}
    outputs: Dict[str, List[Dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for name, (pipeline, sort_buffer) in variants.items():
            out = work / f"out_{round_}_{len(seconds[name])}_{sort_buffer}"
            settings = AnnotateSettings(sort_buffer=sort_buffer)
            start = time.perf_counter()
            annotate_corpus(pipeline, InputSpec(str(source)), out, settings, progress=False)
            seconds[name].append(time.perf_counter() - start)
            outputs[name] = read_records(out)
    before, after = (outputs[name] for name in variants)
    check = compare(before, after)
    rows = [{"variant": name, "documents_per_s": n_docs / min(times), "seconds": times}
            for name, times in seconds.items()]
    speedup = rows[1]["documents_per_s"] / rows[0]["documents_per_s"]
    lines = [
        f"# annotate over {n_docs} GENIA abstracts, {args.threads} torch threads, best of "
        f"{args.rounds} (each run loads the pipeline)",
        "",
        "| variant | documents/s |",
        "|---|---|",
        *[f"| {r['variant']} | {r['documents_per_s']:.2f} |" for r in rows],
        "",
        f"After / before: {speedup:.2f}x. Same records and spans: "
        f"{check['same_records_and_spans']}; largest score difference "
        f"{check['max_score_difference']:.1e}.",
        f"Pipeline: {args.pipeline}",
    ]
    write_table(args.out, [*rows, {"check": check, "speedup": speedup}], lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
