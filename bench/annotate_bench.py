"""Annotating at scale on CPU: int8 against float, and the memory of a streaming job.

    python bench/annotate_bench.py \
        --pipeline mrc_packed=bench/work_full/mrc_packed_index_tuned/model-last \
        --pipeline locate_label=bench/work_full/locate_label_tuned/model-last \
        --baseline spancat=bench/work_full/spancat/model-last \
        --dev ../shared/data/genia/dev.jsonl --out bench/results/annotate_cpu_minilm

1. Speed: every pipeline in float and with ``quantize = "int8"`` (ours), spaCy's spancat,
   and the bare encoder in float and int8, timed in one process in interleaved rounds
   (``genia_bench.throughput``); sentences/second and the ratio to the bare float encoder.
2. Accuracy: strict P/R/F on dev through spaCy's tokenizer (``nlp(text)``), float vs int8.
3. Streaming: ``python -m spacy_nested_mrc annotate`` on N documents (dev sentences,
   repeated) in a fresh process each, under ``/usr/bin/time -v``: peak RSS and documents/s
   for each N. A streaming job's peak should not grow with N.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from genia_bench import machine, throughput, write_outputs


def named(values: List[str]) -> Dict[str, str]:
    return dict(value.split("=", 1) for value in values)


def accuracy(nlp: Any, dev: str, limit: int, batch_size: int) -> Dict[str, float]:
    from spacy_nested_mrc.data import predict_examples
    from spacy_nested_mrc.evaluate import evaluate_examples

    examples = predict_examples(nlp, dev, "nested", limit=limit, batch_size=batch_size)
    scores = evaluate_examples(examples, "nested").scores
    return {k: round(scores[f"spans_nested_{k}"], 4) for k in ("p", "r", "f")}


def speed_and_accuracy(args: argparse.Namespace) -> Dict[str, Any]:
    import spacy
    import torch

    from spacy_nested_mrc.data import read_jsonl
    from spacy_nested_mrc.loading import load_annotator

    torch.set_num_threads(args.threads)
    pipelines: Dict[str, Any] = {}
    for name, path in named(args.pipeline).items():
        pipelines[name] = load_annotator(path)
        pipelines[f"{name}_int8"] = load_annotator(path, "int8")
    for name, path in named(args.baseline).items():
        pipelines[name] = spacy.load(path)
    vocab = next(iter(pipelines.values())).vocab
    sample = list(read_jsonl(args.dev, vocab, "nested", limit=args.speed_sentences))
    speed = throughput(pipelines, sample, args.encoder, args.batch_size, args.rounds,
                       bare_int8=True)
    result: Dict[str, Any] = {
        "speed_sentences": len(sample),
        "sentences_per_second": {k: round(v, 1) for k, v in speed.items()},
        "ratio_to_bare_encoder": {k: round(v / speed["bare_encoder"], 3)
                                  for k, v in speed.items()},
        "accuracy": {},
    }
    for name, nlp in pipelines.items():
        result["accuracy"][name] = accuracy(nlp, args.dev, args.dev_limit, args.batch_size)
        print(name, result["accuracy"][name], flush=True)
    return result


def streaming(args: argparse.Namespace) -> Dict[str, Any]:
    """Peak RSS and documents/s of ``annotate`` for each number of documents."""
    texts = []
    with open(args.dev, encoding="utf8") as f:
        for line in f:
            texts.append(" ".join(json.loads(line)["tokens"]))
    name, path = next(iter(named(args.pipeline).items()))
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.stream_docs:
            source = Path(tmp) / f"docs_{n}.txt"
            source.write_text("".join(texts[i % len(texts)] + "\n" for i in range(n)))
            command = ["/usr/bin/time", "-v", sys.executable, "-m", "spacy_nested_mrc",
                       "annotate", path, str(source), str(Path(tmp) / f"out_{n}"),
                       "--no-progress", "--shard-size", str(args.shard_size),
                       "--batch-size", str(args.batch_size)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
            rate = re.search(r"([\d.]+) documents/s", done.stdout)
            runs.append({
                "documents": n,
                "peak_rss_mb": round(int(rss.group(1)) / 1024) if rss else None,
                "documents_per_second": float(rate.group(1)) if rate else None,
                "summary": done.stdout.strip().splitlines()[0],
            })
            print(json.dumps(runs[-1]), flush=True)
    return {"pipeline": name, "runs": runs}


def markdown(report: Dict[str, Any]) -> str:
    lines = ["# Annotating on CPU: int8 vs float, streaming memory", "",
             f"Machine: {report['machine']['cpu']}, {report['machine'].get('threads')} threads;"
             f" {report['speed']['speed_sentences']} GENIA dev sentences for speed.", "",
             "| system | sentences/s | x bare float encoder | dev P | dev R | dev F1 |",
             "|---|---|---|---|---|---|"]
    speed = report["speed"]
    for name, rate in speed["sentences_per_second"].items():
        acc = speed["accuracy"].get(name, {})
        cells = [f"{100 * acc[k]:.1f}" if k in acc else "-" for k in ("p", "r", "f")]
        lines.append(f"| {name} | {rate} | {speed['ratio_to_bare_encoder'][name]} | "
                     + " | ".join(cells) + " |")
    if report.get("streaming"):
        lines += ["", f"Streaming `annotate` ({report['streaming']['pipeline']}):", "",
                  "| documents | peak RSS (MB) | documents/s |", "|---|---|---|"]
        for run in report["streaming"]["runs"]:
            lines.append(f"| {run['documents']} | {run['peak_rss_mb']} | "
                         f"{run['documents_per_second']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--baseline", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--dev-limit", type=int, default=0)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--speed-sentences", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--stream-docs", type=int, nargs="*", default=[500, 4000])
    parser.add_argument("--shard-size", type=int, default=500)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    report = {"machine": {**machine(), "threads": args.threads},
              "command": " ".join(sys.argv), "speed": speed_and_accuracy(args)}
    if args.stream_docs:
        report["streaming"] = streaming(args)
    write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
