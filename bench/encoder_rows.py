"""The full-data rows of the encoder study (#39): each trained pipeline's dev P/R/F1 through
``spacy evaluate``'s protocol (the dev DocBin read by ``spacy.Corpus.v1``, the text through the
pipeline's tokenizer), by both span scorers (``benchlib.scoring.score_pipeline``: ours, and
spaCy's spancat scorer), with the training's wall time and peak RSS read from its
``/usr/bin/time -v`` log, in one table.

    python bench/encoder_rows.py --dev bench/work_full/dev.spacy --out OUT \
        --row "packed MRC|all-MiniLM-L6-v2|bf16|PIPELINE|TRAIN_LOG" ...

A row: name | encoder | precision | pipeline folder | training log (``spacy train`` under
``/usr/bin/time -v``; "-" where none was kept).
"""
import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, Optional

from benchlib.machine import machine
from benchlib.scoring import score_pipeline


def training_cost(log: str) -> Dict[str, Optional[float]]:
    """Wall minutes and peak RSS (MiB) from a ``/usr/bin/time -v`` log, and the last dev
    evaluation's F1 that ``spacy train`` printed."""
    if log == "-":
        return {"minutes": None, "peak_rss_mib": None}
    text = Path(log).read_text(errors="replace")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    minutes = None
    if wall:
        parts = [float(p) for p in wall.group(1).split(":")]
        seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
        minutes = round(seconds / 60, 1)
    return {"minutes": minutes,
            "peak_rss_mib": round(int(rss.group(1)) / 1024) if rss else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", required=True, help="dev as a DocBin (one doc a sentence)")
    parser.add_argument("--row", action="append", required=True)
    parser.add_argument("--spans-key", default="nested")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    parser.add_argument("--title", default="Full-data rows: encoder x architecture on GENIA dev")
    parser.add_argument("--training", default="`spacy train` on all of GENIA train",
                        help="what the rows trained on, for the table's note")
    args = parser.parse_args()
    if args.gpu_id >= 0:
        import spacy

        spacy.require_gpu(args.gpu_id)
    rows = []
    for spec in args.row:
        name, encoder, precision, pipeline, log = spec.split("|")
        scored: Dict[str, Any] = score_pipeline(pipeline, args.dev, args.spans_key,
                                                args.batch_size)
        rows.append({"name": name, "encoder": encoder, "precision": precision,
                     "pipeline": pipeline, "training_log": log, **scored,
                     **training_cost(log)})
        print(json.dumps(rows[-1]), flush=True)
    report = {"command": " ".join(["python", *sys.argv]), "machine": machine(),
              "dev": args.dev, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        f"# {args.title}", "",
        f"`{report['command']}`", "", f"Machine: {json.dumps(report['machine'])}", "",
        "Dev through `spacy evaluate`'s protocol (the text through the pipeline's tokenizer); "
        "\"ours\" is our span scorer (a predicted span off the gold tokens is a false positive), "
        f"\"spaCy's\" is spancat's (such a span is dropped). Training: {args.training} under "
        "`/usr/bin/time -v`, dev evaluations included.", "",
        "| row | encoder | precision | P | R | F1 (ours) | F1 (spaCy's scorer) | "
        "training min | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['encoder']} | {row['precision']} | {row['ours']['p']:.1f} | "
            f"{row['ours']['r']:.1f} | **{row['ours']['f']:.1f}** | {row['spacy']['f']:.1f} | "
            f"{row['minutes'] if row['minutes'] is not None else '-'} | "
            f"{row['peak_rss_mib'] if row['peak_rss_mib'] is not None else '-'} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
