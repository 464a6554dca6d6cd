"""Inference speed against the number of labels: one question per pass (MRC, Multi-NER) or
all questions packed into one sequence (packed), with natural questions or with short index
queries (``*_index``: the label's position, one wordpiece; ``*_joined``: with no separator
between the questions), beside the bare encoder.

    python bench/label_speed.py --dev ../shared/data/genia/dev.jsonl --labels 1 5 18 \
        --out bench/results/speed_cpu_minilm/label_speed_cpu_minilm

For each label count, each mode gets a pipeline whose labels are GENIA's five and copies of
them (``benchlib.pipelines.copied_queries``: every label costs what a real one does), initialized
without training, with the architectures' defaults: the start/end heads start at their
``boundary_prior`` (0.02), so like a trained model they propose few spans; the table gives
the spans each writes per sentence, so the decoding load is in view. All pipelines and the bare
encoder are timed in one process, interleaved (``benchlib.speed.throughput``). Writes OUT.json,
OUT.md (a table) and OUT.png (sentences/second against labels, log-log).
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List

from benchlib.machine import machine
from benchlib.outputs import write_outputs
from benchlib.pipelines import copied_queries, untrained_pipeline
from benchlib.speed import add_speed_arguments, throughput

from spacy_nested_mrc.runtime.memory import peak_rss_mb

# the MRC rows name every setting the factory's default model (packed, index) sets otherwise
PER_LABEL = {"packed": False, "query_style": "natural", "per_label_loss": 0.0, "max_rows": 64}
MODES = {
    "mrc": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", **PER_LABEL},
    "mrc_packed": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", **PER_LABEL,
                   "packed": True},
    "multi_ner": {"@architectures": "spacy-nested-mrc.MultiNER.v1"},
    "multi_ner_packed": {"@architectures": "spacy-nested-mrc.MultiNER.v1", "packed": True},
    # short queries (paper Table 4): the label's position as its question, one wordpiece
    "mrc_packed_index": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", **PER_LABEL,
                         "packed": True,
                         "query_style": "index"},
    "multi_ner_packed_index": {"@architectures": "spacy-nested-mrc.MultiNER.v1",
                               "packed": True, "query_style": "index"},
    # index queries without a separator between them: K - 1 fewer wordpieces a sequence
    "mrc_packed_index_joined": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", **PER_LABEL,
                                "packed": True, "query_style": "index",
                                "separate_questions": False},
}


def build(mode: str, n_labels: int, encoder: str, max_rows: int):
    """An initialized, untrained pipeline of ``mode`` with ``n_labels`` labels."""
    queries = copied_queries(n_labels)
    model = {**MODES[mode], "encoder": encoder, "queries": queries, "max_rows": max_rows}
    nlp, caught = untrained_pipeline(model, list(queries))
    return nlp, [message for message in caught if "NMW012" in message]  # label groups


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import spacy
    import torch
    from spacy.util import fix_random_seed

    from spacy_nested_mrc.corpora.jsonl import read_jsonl

    torch.set_num_threads(args.threads)
    fix_random_seed(0)
    sample = list(read_jsonl(args.dev, spacy.blank("en").vocab, "nested", limit=args.sentences))
    rows: List[Dict[str, Any]] = []
    for n in args.labels:
        pipelines, notes = {}, {}
        for mode in args.modes:
            pipelines[mode], notes[mode] = build(mode, n, args.encoder, args.max_rows)
        spans: Dict[str, float] = {}
        speed = throughput(pipelines, sample, args.encoder, args.batch_size, args.rounds, spans)
        row = {"labels": n, "sentences_per_second": {k: round(v, 1) for k, v in speed.items()},
               "spans_per_sentence": spans,
               "ratio_to_bare_encoder": {k: round(v / speed["bare_encoder"], 3)
                                         for k, v in speed.items()},
               "label_groups_warning": {k: v for k, v in notes.items() if v}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"settings": vars(args), "machine": machine(), "rows": rows,
            "peak_rss_mb": round(peak_rss_mb())}


def markdown(report: Dict[str, Any]) -> str:
    s = report["settings"]
    systems = [*s["modes"], "bare_encoder"]
    lines = [f"Inference on the first {s['sentences']} GENIA dev sentences, batch size "
             f"{s['batch_size']}, {s['encoder']}, torch threads {s['threads']}, best of "
             f"{s['rounds']} interleaved rounds. Sentences/second (x bare encoder).", "",
             "| labels | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for r in report["rows"]:
        cells = [f"{r['sentences_per_second'][k]} ({r['ratio_to_bare_encoder'][k]}x)"
                 for k in systems]
        lines.append(f"| {r['labels']} | " + " | ".join(cells) + " |")
    lines += ["", "Spans written per sentence:", "", "| labels | " + " | ".join(s["modes"])
              + " |", "|---|" + "---|" * len(s["modes"])]
    for r in report["rows"]:
        lines.append(f"| {r['labels']} | "
                     + " | ".join(str(r["spans_per_sentence"][k]) for k in s["modes"]) + " |")
    for r in report["rows"]:
        for mode, messages in r["label_groups_warning"].items():
            lines += ["", f"{r['labels']} labels, {mode}: {messages[0]}"]
    lines += ["", f"Machine: {report['machine']}"]
    return "\n".join(lines)


def plot(report: Dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["labels"] for r in report["rows"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    for system in [*report["settings"]["modes"], "bare_encoder"]:
        values = [r["sentences_per_second"][system] for r in report["rows"]]
        ax.plot(labels, values, marker="o", label=system,
                linestyle="--" if system == "bare_encoder" else "-")
    first = report["rows"][0]
    ideal = [first["sentences_per_second"]["mrc"] * labels[0] / n for n in labels]
    ax.plot(labels, ideal, color="grey", linestyle=":", label="1/|labels| from mrc at 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(labels, [str(n) for n in labels])
    ax.set_xlabel("labels")
    ax.set_ylabel("sentences / second")
    ax.set_title("Inference speed against the number of labels")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dev", required=True)
    parser.add_argument("--labels", type=int, nargs="+", default=[1, 5, 18])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--max-rows", type=int, default=160)
    add_speed_arguments(parser)
    args = parser.parse_args()
    report = run(args)
    write_outputs(args.out, report, markdown(report))
    if args.out:
        plot(report, Path(f"{args.out}.png"))


if __name__ == "__main__":
    main()
