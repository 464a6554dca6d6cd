"""The learning-curve table of #52: every row that bench/curves/train_row.sh trained into WORK
(``<arm>_<percent>``; its ``_tuned`` pipeline where ``tune`` made one), and the zero-shot row,
scored on GENIA dev through ``spacy evaluate``'s protocol by both span scorers
(``benchlib.scoring.score_pipeline``), with each training's wall time and peak RSS from its
``/usr/bin/time -v`` log.

    python bench/curves/table.py --work bench/work_curve --dev ../shared/data/genia/dev.jsonl \
        --logs bench/results/curves_cpu_minilm --out bench/results/curves_cpu_minilm/curves

With ``--keep``, an earlier table's rows that cannot be scored again (their pipelines and
tune reports gone) are carried over, marked. With ``--from-tuning``, a row that ``tune``
scored (``LOGS/tuning_<row>.json``) takes the tuned P/R/F1 of that report (the same dev
through the same protocol and our scorer, without spaCy's scorer beside it) instead of being
scored again, and rows whose pipelines are gone but whose report is kept are listed too; the
other rows (spancat) are scored as above.
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # bench/: benchlib and encoder_rows

from benchlib.machine import machine  # noqa: E402
from benchlib.scoring import score_pipeline  # noqa: E402
from encoder_rows import training_cost  # noqa: E402

ARMS = {
    "index": "packed MRC, index questions",
    "index_dicebce": "packed MRC, index questions, dice_bce loss",
    "index_apart": "packed MRC, index questions read apart from the text, shared by packed "
                   "sentences",
    "index_s1": "packed MRC, index questions, seed 1",
    "index_6ep": "packed MRC, index questions, twice the config's updates (5,632)",
    "index_9ep": "packed MRC, index questions, three times the config's updates (8,448)",
    "index_6ep_s1": "packed MRC, index questions, twice the config's updates (5,632), seed 1",
    "index_6ep_s2": "packed MRC, index questions, twice the config's updates (5,632), seed 2",
    "index_dicebce_6ep": "packed MRC, index questions, dice_bce loss, twice the config's "
                         "updates (5,632)",
    "index_fast_6ep": "packed MRC, index questions, twice the config's updates (5,632), "
                      "TorchAdam.v1 and frozen word embeddings",
    "index_fast_6ep_s1": "packed MRC, index questions, twice the config's updates (5,632), "
                         "TorchAdam.v1 and frozen word embeddings, seed 1",
    "selftrain": "packed MRC, index questions, with the corpora's sentences labelled by the "
                 "index row (self-training)",
    "selftraindicebce": "packed MRC, index questions, dice_bce loss, with the corpora's "
                        "sentences labelled by the index row (self-training)",
    "teacher": "packed MRC, index questions (the teacher of the self-training rows)",
    "continue": "packed MRC, index questions, the teacher trained on for the config's updates "
                "again (GENIA alone)",
    "continuelow": "packed MRC, index questions, the row above trained on for half the "
                   "config's updates at a quarter of its learning rate (GENIA alone)",
    "continuelow_s1": "packed MRC, index questions, the same continued training as the row "
                      "above, seed 1",
    "selftrain_continue": "packed MRC, index questions, the teacher trained on for the "
                          "config's updates again, GENIA and 30,000 corpora sentences it "
                          "labelled, half and half (self-training)",
    "natural": "packed MRC, natural questions",
    "natural_dicebce": "packed MRC, natural questions, dice_bce loss",
    "natural_apart": "packed MRC, natural questions read apart from the text, shared by "
                     "packed sentences",
    "biomed": "packed MRC, natural questions, from the intermediate corpora",
    "biomed2": "packed MRC, natural questions, from the intermediate corpora (2,000 updates)",
    "biomedselftrain": "packed MRC, natural questions, from the intermediate corpora, with "
                       "the corpora's sentences labelled by the index row (self-training)",
    "biomedselftrain_s1": "packed MRC, natural questions, from the intermediate corpora, "
                          "with the corpora's sentences labelled by the index row "
                          "(self-training), seed 1",
    "joint": "packed MRC, natural questions, GENIA and the corpora jointly, from the "
             "intermediate",
    "spancat": "spaCy spancat (ngrams 1-10)",
    "spancatbiomed": "spaCy spancat (ngrams 1-10), from the intermediate corpora (each "
                     "corpus's unannotated labels taught as no entity)",
    "spancatbiomed_lr5e5": "spaCy spancat (ngrams 1-10), from the intermediate corpora trained "
                           "at lr 5e-5",
    "spancatselftrain": "spaCy spancat (ngrams 1-10), with the corpora's sentences labelled by "
                        "the packed MRC's index row (the self-training rows' data)",
    "zeroshot": "intermediate corpora only, GENIA's questions (zero-shot)",
}


ROW_NAME = re.compile(rf"({'|'.join(ARMS)})_(\d+)")


def rows_in(work: Path, logs: Path, from_tuning: bool):
    """YIELDS (Tuple[str, str, Optional[Path], bool]): (arm, percent, pipeline, tuned) of each
    trained row (with ``from_tuning``, also each row with a tuning report and no pipeline:
    pipeline None)."""
    names = {f.name for f in work.iterdir() if f.is_dir()}
    if from_tuning:
        names |= {f.stem[len("tuning_"):] for f in logs.glob("tuning_*.json")}
    for name in sorted(names):
        match = ROW_NAME.fullmatch(name)
        if not match:
            continue
        folder, tuned = work / name, work / f"{name}_tuned"
        if (tuned / "config.cfg").exists():
            yield match.group(1), match.group(2), tuned, True
        elif (folder / "model-best" / "config.cfg").exists():
            yield match.group(1), match.group(2), folder / "model-best", False
        elif from_tuning and (logs / f"tuning_{name}.json").exists():
            yield match.group(1), match.group(2), None, True


def tuned_scores(report: Path) -> dict:
    """The tuned P/R/F1 (percent) of a ``tune`` report, as ``score_pipeline`` gives ours."""
    tuning = json.loads(report.read_text())
    ours = {key: round(100 * tuning["best"][key], 1) for key in ("p", "r", "f")}
    labels = {label: round(100 * scores["f"], 1)
              for label, scores in tuning.get("labels", {}).items()}
    return {"ours": ours, "spacy": {"f": None}, "scored_by": "tune", "labels": labels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--dev", type=Path, required=True,
                        help="GENIA dev: .jsonl (converted into WORK, a doc a sentence) or .spacy")
    parser.add_argument("--logs", type=Path, required=True, help="the train_<row>.log folder")
    parser.add_argument("--subsets", type=Path, help="sample.py's subsets.json")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--from-tuning", action="store_true",
                        help="take a tuned row's scores from its tune report (LOGS)")
    parser.add_argument("--keep", type=Path,
                        help="an earlier OUT.json: its rows that are not scored again here "
                             "(pipeline and tune report gone) are kept as they were scored")
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    args = parser.parse_args()
    sampled = json.loads(args.subsets.read_text()) if args.subsets else {}
    subsets = sampled.get("subsets", {})
    if sampled.get("train") and Path(sampled["train"]).exists():  # the 100% rows: all of it
        with open(sampled["train"], encoding="utf8") as train:
            subsets["train_100.jsonl"] = {"sentences": sum(1 for line in train if line.strip())}
    dev = str(args.dev)
    if args.dev.suffix == ".jsonl":
        from spacy_nested_mrc.corpora.jsonl import convert

        dev = str(args.work / "dev.spacy")
        convert(args.dev, dev, show_progress=False, group_by=None)
    rows = []
    for arm, percent, pipeline, tuned in rows_in(args.work, args.logs, args.from_tuning):
        log = args.logs / f"train_{arm}_{percent}.log"
        report = args.logs / f"tuning_{arm}_{percent}.json"
        if args.from_tuning and tuned and report.exists():
            scored = tuned_scores(report)
        else:
            scored = score_pipeline(str(pipeline), dev, "nested", args.batch_size)
        cost = training_cost(str(log)) if log.exists() else {"minutes": None,
                                                             "peak_rss_mib": None}
        sentences = subsets.get(f"train_{percent}.jsonl", {}).get("sentences")
        rows.append({"arm": arm, "percent": int(percent), "sentences": sentences,
                     "pipeline": str(pipeline) if pipeline else None, "tuned": tuned,
                     **scored, **cost})
        print(json.dumps(rows[-1]), flush=True)
    if args.keep:
        scored_now = {(row["arm"], row["percent"]) for row in rows}
        for row in json.loads(args.keep.read_text())["rows"]:
            if (row["arm"], row["percent"]) not in scored_now:
                rows.append({**row, "kept_from": str(args.keep)})
    rows.sort(key=lambda row: (row["percent"], list(ARMS).index(row["arm"])))
    report = {"command": " ".join(["python", *sys.argv]), "machine": machine(),
              "dev": dev, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        "# Learning curves on GENIA (#52): all-MiniLM-L6-v2, CPU, one thread a row", "",
        f"`{report['command']}`", "", f"Machine: {json.dumps(report['machine'])}", "",
        "Dev (1,669 sentences) through `spacy evaluate`'s protocol (the text through the "
        "pipeline's tokenizer), thresholds tuned on dev for our rows (spancat as trained); "
        "P/R/F1 by our span scorer, F1 by spaCy's beside. Training: `spacy train` under "
        "`/usr/bin/time -v` (bench/curves/train_row.sh), dev evaluations included; the "
        "biomed rows' intermediate training is counted apart (NOTES.md)."
        + (" Rows with a tune report take its tuned scores (`--from-tuning`: our scorer "
           "only, '-' under spaCy's)." if args.from_tuning else "")
        + (f" Rows marked * were scored into `{args.keep}` before (their pipelines are "
           "gone) and are kept as scored there." if args.keep else ""), "",
        "| % of train | sentences | row | P | R | F1 | F1 (spaCy's scorer) | training min | "
        "peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['percent']} | {row['sentences'] or '-'} | {ARMS[row['arm']]}"
            f"{' *' if row.get('kept_from') else ''} | "
            f"{row['ours']['p']:.1f} | {row['ours']['r']:.1f} | {row['ours']['f']:.1f} | "
            f"{_number(row['spacy']['f'])} | "
            f"{row['minutes'] if row['minutes'] is not None else '-'} "
            f"| {row['peak_rss_mib'] if row['peak_rss_mib'] is not None else '-'} |"
        )
    lines += ["", *matrix(rows), "", *per_label(rows)]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def matrix(rows) -> list:
    """RETURNS (list): the F1 of every row as a table of fractions (rows) by arms
    (columns), the curves read across."""
    arms = [arm for arm in ARMS if any(row["arm"] == arm for row in rows)]
    percents = sorted({row["percent"] for row in rows})
    f1 = {(row["arm"], row["percent"]): row["ours"]["f"] for row in rows}
    lines = ["F1 (our scorer) by fraction and row:", "",
             "| % of train | " + " | ".join(ARMS[arm] for arm in arms) + " |",
             "|---|" + "---|" * len(arms)]
    for percent in percents:
        lines.append(f"| {percent} | " + " | ".join(
            _number(f1.get((arm, percent))) for arm in arms) + " |")
    return lines


def per_label(rows) -> list:
    """RETURNS (list): each tuned row's F1 by label (from its tune report)."""
    labelled = [row for row in rows if row.get("labels")]
    labels = sorted({label for row in labelled for label in row["labels"]})
    lines = ["F1 by label (tuned rows, from their tune reports):", "",
             "| % of train | row | " + " | ".join(labels) + " |",
             "|---|---|" + "---|" * len(labels)]
    for row in labelled:
        lines.append(f"| {row['percent']} | {ARMS[row['arm']]} | " + " | ".join(
            _number(row["labels"].get(label)) for label in labels) + " |")
    return lines


def _number(value) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
