"""GENIA benchmark: the architectures of nested_mrc_ner (MRC, packed MRC, Multi-NER,
Locate-and-Label) against spaCy's spancat and span_finder + spancat, same encoder, data and
epochs, with the bare encoder's throughput as the floor.

    python bench/genia_bench.py --train ../shared/data/genia/train.jsonl \
        --dev ../shared/data/genia/dev.jsonl --train-limit 1000 --epochs 2 \
        --out bench/results/accuracy_genia_cpu_minilm/genia_cpu_minilm \
        --models mrc locate_label spancat span_finder

Models are configs (``CONFIGS``); ``--set MODEL:KEY=VALUE`` overrides one model's config, and
a model given as ``ROW=CONFIG`` trains CONFIG under the name ROW (an ablation row). Each
training runs in its own process so its peak RSS is its own. Prints and writes ``OUT.json``
and ``OUT.md``: P/R/F overall and per type, recall of nested vs non-nested gold entities, F1
by entity length, inference sentences/second (every pipeline and the bare encoder, measured
in one process, interleaved), span proposals per sentence (Locate-and-Label), peak RSS of
training and inference, and the machine.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from benchlib.configs import CONFIGS, config_setting
from benchlib.machine import machine
from benchlib.outputs import write_outputs
from benchlib.pipelines import predict
from benchlib.speed import throughput

from spacy_nested_mrc.runtime.memory import peak_rss_mb

ROOT = Path(__file__).resolve().parents[1]

# written by the train phase beside the pipeline, read back when rescoring
TRAIN_STATS = "train_stats.json"


def train(args: argparse.Namespace) -> Dict[str, Any]:
    """Train one model with spaCy's own training loop; RETURNS its time and peak RSS."""
    import torch
    from spacy.cli.train import train as spacy_train

    from spacy_nested_mrc.encoder.hf import resolve_encoder

    torch.set_num_threads(args.threads)
    n_steps = max(1, args.train_limit * args.epochs // args.batch_sentences)
    overrides = {
        "paths.train": args.train,
        "paths.dev": args.dev,
        "paths.train_limit": args.train_limit,
        "paths.encoder": resolve_encoder(args.encoder),
        "corpora.dev.limit": 1,  # dev is scored by the evaluate phase, not during training
        "training.max_epochs": args.epochs,
        "training.eval_frequency": 10**9,
        "training.batcher.size.start": args.batch_words,
        "training.batcher.size.stop": args.batch_words,
        "training.optimizer.learn_rate.warmup_steps": max(1, n_steps // 10),
        "training.optimizer.learn_rate.total_steps": n_steps,
        "training.optimizer.learn_rate.initial_rate": args.learn_rate,
    }
    row, config = row_and_config(args.model)
    overrides.update(config_settings(args.set, row))
    output = Path(args.work) / row
    start = time.perf_counter()
    spacy_train(CONFIGS[config], output, overrides=overrides, use_gpu=-1)
    stats = {
        "model": row,
        "config": config,
        "settings": config_settings(args.set, row),
        "train_seconds": round(time.perf_counter() - start, 1),
        "train_peak_rss_mb": round(peak_rss_mb()),
    }
    (output / TRAIN_STATS).write_text(json.dumps(stats, indent=2))
    return stats


def row_and_config(model: str) -> Tuple[str, str]:
    """``ROW=CONFIG`` or ``CONFIG`` -> (row name, config name)."""
    row, _, config = model.partition("=")
    config = config or row
    if config not in CONFIGS:
        raise SystemExit(f"unknown model config {config!r}; known: {sorted(CONFIGS)}")
    return row, config


def config_settings(settings: List[str], model: str) -> Dict[str, Any]:
    """``MODEL:SECTION.KEY=VALUE`` strings -> the config overrides of ``model`` (values as
    JSON where they parse, else strings)."""
    overrides: Dict[str, Any] = {}
    for setting in settings:
        name, _, assignment = setting.partition(":")
        if name == model:
            overrides.update(config_setting(assignment))
    return overrides


def evaluate(args: argparse.Namespace) -> Dict[str, Any]:
    """Score both pipelines on dev and time them beside the bare encoder."""
    import spacy
    import torch
    from spacy.training import Example
    from spacy.util import dot_to_dict

    from spacy_nested_mrc.corpora.jsonl import read_jsonl
    from spacy_nested_mrc.evaluation.examples import predict_examples
    from spacy_nested_mrc.evaluation.report import evaluate_examples

    torch.set_num_threads(args.threads)
    rows = [row_and_config(m)[0] for m in args.models]
    pipelines = {
        m: spacy.load(Path(args.work) / m / "model-last",
                      config=dot_to_dict(config_settings(args.load_set, m)))
        for m in rows
    }
    vocab = next(iter(pipelines.values())).vocab
    gold = list(read_jsonl(args.dev, vocab, "nested", limit=args.dev_limit))
    result: Dict[str, Any] = {"dev_sentences": len(gold), "models": {}}
    for name, nlp in pipelines.items():
        preds, proposals = predict(nlp, gold, args.batch_size)
        report = evaluate_examples([Example(p, g) for p, g in zip(preds, gold)], "nested")
        # the text as users give it: nlp.make_doc(text), scored against the gold spans
        users = predict_examples(nlp, args.dev, "nested", limit=args.dev_limit,
                                 batch_size=args.batch_size)
        spacy_report = evaluate_examples(users, "nested")
        result["models"][name] = {
            **scored(report, proposals),
            "spacy_tokenizer": scored(spacy_report, None),
            "spacy_evaluate": spacy_evaluate(Path(args.work) / name / "model-last",
                                             args.dev, args.work, args.dev_limit,
                                             config_settings(args.load_set, name)),
        }
    sample = gold[: args.speed_sentences]
    speed = throughput(pipelines, sample, args.encoder, args.batch_size, args.speed_rounds)
    result["sentences_per_second"] = {k: round(v, 1) for k, v in speed.items()}
    result["ratio_to_bare_encoder"] = {
        k: round(v / speed["bare_encoder"], 3) for k, v in speed.items()
    }
    result["eval_peak_rss_mb"] = round(peak_rss_mb())
    return result


def scored(report, proposals: Optional[float]) -> Dict[str, Any]:
    """The numbers of an ``evaluate_examples`` report that the table and JSON keep."""
    scores = report.scores
    return {
        "p": scores["spans_nested_p"],
        "r": scores["spans_nested_r"],
        "f": scores["spans_nested_f"],
        "per_type": scores["spans_nested_per_type"],
        "nested_r": scores["spans_nested_nested_r"],
        "non_nested_r": scores["spans_nested_non_nested_r"],
        "by_length": report.by_length,
        "errors": report.errors,
        "proposals_per_sentence": proposals,
    }


def spacy_evaluate(pipeline: Path, dev: str, work: str, limit: int,
                   load_set: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """P/R/F of ``python -m spacy evaluate`` on dev as a DocBin (spaCy's own CLI: the text
    through the pipeline's tokenizer), in a subprocess; None where the CLI cannot apply the
    load-time settings or the dev set is cut."""
    if load_set or limit:
        return None
    from spacy_nested_mrc.corpora.jsonl import convert

    docbin = Path(work) / "dev.spacy"
    if not docbin.exists():
        convert(dev, docbin, show_progress=False, group_by=None)  # sentence by sentence
    out = Path(work) / f"{pipeline.parent.name}_spacy_evaluate.json"
    subprocess.run([sys.executable, "-m", "spacy", "evaluate", str(pipeline), str(docbin),
                    "--output", str(out)], check=True, stdout=subprocess.DEVNULL)
    scores = json.loads(out.read_text())
    return {k: scores.get(f"spans_nested_{k}") for k in ("p", "r", "f")}


def orchestrate(args: argparse.Namespace) -> Dict[str, Any]:
    """Run every phase in its own process and gather the results."""
    base = [sys.executable, __file__, "--train", args.train, "--dev", args.dev,
            "--train-limit", str(args.train_limit), "--epochs", str(args.epochs),
            "--dev-limit", str(args.dev_limit),
            "--work", args.work, "--threads", str(args.threads), "--encoder", args.encoder,
            "--batch-words", str(args.batch_words), "--learn-rate", str(args.learn_rate),
            "--speed-sentences", str(args.speed_sentences),
            "--speed-rounds", str(args.speed_rounds)]

    def settings_of(rows: List[str]) -> List[str]:
        """The --set arguments for some rows (a phase's child rejects those of other rows)."""
        return [arg for s in args.set if s.partition(":")[0] in rows for arg in ("--set", s)]

    report: Dict[str, Any] = {"settings": vars(args).copy(), "machine": machine(), "train": {}}
    trained = []
    for model in args.models:
        row = row_and_config(model)[0]
        try:
            report["train"][row] = _run_phase(
                base + settings_of([row]) + ["--phase", "train", "--model", model]
            )
            trained.append(model)
        except subprocess.CalledProcessError as err:  # reported, and the others go on
            report["train"][row] = {"model": row, "failed": f"exit status {err.returncode}"}
        print(json.dumps(report["train"][row]), flush=True)
    rows = [row_and_config(m)[0] for m in trained]
    report["evaluate"] = _run_phase(
        base + settings_of(rows) + ["--phase", "evaluate", "--models", *trained]
    )
    return report


def saved_train_stats(args: argparse.Namespace) -> Dict[str, Any]:
    """The train phase's record of each pipeline being rescored, where it wrote one."""
    stats = {}
    for row in (row_and_config(model)[0] for model in args.models):
        path = Path(args.work) / row / TRAIN_STATS
        if path.exists():
            stats[row] = json.loads(path.read_text())
    return stats


def saved_schedules(args: argparse.Namespace) -> Dict[str, Dict[str, Any]]:
    """Each rescored pipeline's training schedule, read from its saved config (rows of one
    table may have been trained with different ones)."""
    from spacy.util import load_config

    schedules = {}
    for row in (row_and_config(model)[0] for model in args.models):
        path = Path(args.work) / row / "model-last" / "config.cfg"
        if path.exists():
            config = load_config(path, interpolate=False)
            rate = config["training"]["optimizer"]["learn_rate"]
            schedules[row] = {
                "sentences": config["paths"].get("train_limit"),
                "epochs": config["training"]["max_epochs"],
                "learn_rate": rate.get("initial_rate") if isinstance(rate, dict) else rate,
                "steps": rate.get("total_steps") if isinstance(rate, dict) else None,
            }
    return schedules


def _run_phase(command: List[str]) -> Dict[str, Any]:
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def markdown(report: Dict[str, Any]) -> str:
    ev = report["evaluate"]
    s = report["settings"]
    lines = [
        f"GENIA dev ({ev['dev_sentences']} sentences); trained on the first {s['train_limit']} "
        f"sentences of train.jsonl for {s['epochs']} epochs (learning rate {s['learn_rate']}, "
        f"batches of {s['batch_words']} words), encoder {s['encoder']}, "
        f"{report['machine']['cores']} cores, torch threads {s['threads']}.",
        "",
        "P/R/F1 twice: on the gold tokens, and on the text through the pipeline's tokenizer "
        "(as nlp(text) sees it); `spacy evaluate` F1: spaCy's own CLI on dev as a DocBin.",
        "",
        "| model | P | R | F1 | P spaCy tok | R spaCy tok | F1 spaCy tok | spacy evaluate F1 "
        "| nested R | non-nested R | sent/s | x bare encoder | train s | train peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tr in report["train"].items():
        if "failed" in tr:
            lines.append(f"| {name} | training failed ({tr['failed']}) |" + " |" * 12)
    for name, m in ev["models"].items():
        tr = report["train"].get(name, {"train_seconds": "-", "train_peak_rss_mb": "-"})
        users, cli = m.get("spacy_tokenizer", {}), m.get("spacy_evaluate") or {}
        lines.append(
            f"| {name} | {100 * m['p']:.1f} | {100 * m['r']:.1f} | {100 * m['f']:.1f} "
            f"| {pct(users.get('p'))} | {pct(users.get('r'))} | {pct(users.get('f'))} "
            f"| {pct(cli.get('f'))} "
            f"| {100 * (m['nested_r'] or 0):.1f} | {100 * (m['non_nested_r'] or 0):.1f} "
            f"| {ev['sentences_per_second'][name]} | {ev['ratio_to_bare_encoder'][name]} "
            f"| {tr['train_seconds']} | {tr['train_peak_rss_mb']} |"
        )
    lines.append(
        "| bare encoder |" + " |" * 9
        + f" {ev['sentences_per_second']['bare_encoder']} | 1.0 | | |"
    )
    earlier = {name: tr["source"] for name, tr in report["train"].items() if "source" in tr}
    if earlier:
        lines += ["", "Train s and peak RSS recorded when these pipelines were trained, by an "
                  "earlier run of this script with the same settings: " + "; ".join(
                      f"{name}: {source}" for name, source in earlier.items()) + "."]
    overrides = {name: tr["settings"] for name, tr in report["train"].items()
                 if tr.get("settings")}
    if overrides:
        lines += ["", "Settings in training beyond the shipped config: " + "; ".join(
            f"{name}: {settings}" for name, settings in overrides.items()) + "."]
    schedules = report.get("schedules")
    if schedules:
        lines += ["", "Training schedule of each row, from its saved config (this overrides the "
                  "first line's):", "", "| model | sentences | epochs | learning rate | steps |",
                  "|---|---|---|---|---|"]
        lines += [f"| {name} | {sc['sentences']} | {sc['epochs']} | {sc['learn_rate']} "
                  f"| {sc['steps']} |" for name, sc in schedules.items()]
    if s.get("load_set"):
        lines += ["", f"Config overrides at load (scoring): {s['load_set']}."]
    types = sorted({t for m in ev["models"].values() for t in m["per_type"]})
    lines += ["", "F1 per type:", "", "| model | " + " | ".join(types) + " |",
              "|---|" + "---|" * len(types)]
    for name, m in ev["models"].items():
        cells = [f"{100 * m['per_type'].get(t, {}).get('f', 0):.1f}" for t in types]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    buckets = [b for b in next(iter(ev["models"].values()))["by_length"]]
    lines += ["", "F1 by entity length (tokens; gold support in the header):", "",
              "| model | " + " | ".join(
                  f"{b} ({next(iter(ev['models'].values()))['by_length'][b]['support']})"
                  for b in buckets) + " |",
              "|---|" + "---|" * len(buckets)]
    for name, m in ev["models"].items():
        cells = [f"{100 * m['by_length'][b]['f']:.1f}" for b in buckets]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    proposals = {n: m["proposals_per_sentence"] for n, m in ev["models"].items()
                 if m.get("proposals_per_sentence") is not None}
    if proposals:
        lines += ["", "Span proposals kept by the filter per dev sentence: " + ", ".join(
            f"{n} {v}" for n, v in proposals.items()) + "."]
    lines += ["", f"Inference peak RSS (all pipelines loaded): {ev['eval_peak_rss_mb']} MB.",
              f"Machine: {report['machine']}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--train-limit", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--batch-words", type=int, default=400)
    parser.add_argument("--learn-rate", type=float, default=1e-4)
    parser.add_argument("--dev-limit", type=int, default=0,
                        help="score only the first N dev sentences (smoke runs); 0: all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--speed-sentences", type=int, default=400)
    parser.add_argument("--speed-rounds", type=int, default=2)
    parser.add_argument("--work", default=str(ROOT / "bench" / "work"))
    parser.add_argument("--out", default=None)
    parser.add_argument("--phase", choices=["all", "train", "evaluate"], default="all",
                        help="evaluate with --out: rescore the pipelines already in --work")
    parser.add_argument("--load-set", action="append", default=[], metavar="MODEL:KEY=VALUE",
                        help="config override when loading a trained pipeline to score it "
                        "(decoding settings), e.g. mrc:components.nested_mrc_ner.model."
                        "start_threshold=0.3")
    parser.add_argument("--model", help="ROW=CONFIG or CONFIG (train phase)")
    parser.add_argument("--models", nargs="+", default=["mrc", "spancat"],
                        help=f"ROW=CONFIG or CONFIG, configs: {', '.join(sorted(CONFIGS))}")
    parser.add_argument("--set", action="append", default=[], metavar="MODEL:KEY=VALUE",
                        help="config override for one model, e.g. "
                        "mrc:components.nested_mrc_ner.model.loss=dice")
    args = parser.parse_args()
    rows = [row_and_config(m)[0] for m in ([args.model] if args.model else args.models)]
    for setting in [*args.set, *args.load_set]:  # a setting for no row would be ignored
        if setting.partition(":")[0] not in rows:
            parser.error(f"{setting!r}: expected MODEL:KEY=VALUE with MODEL one of {rows}")
    args.batch_sentences = max(1, args.batch_words // 25)  # GENIA: ~25 tokens a sentence
    if args.phase == "train":
        print(json.dumps(train(args)))
    elif args.phase == "evaluate" and args.out:  # rescoring trained pipelines on their own
        report = {"settings": vars(args).copy(), "machine": machine(),
                  "train": saved_train_stats(args), "schedules": saved_schedules(args),
                  "evaluate": evaluate(args)}
        write_outputs(args.out, report, markdown(report))
    elif args.phase == "evaluate":
        print(json.dumps(evaluate(args)))
    else:
        report = orchestrate(args)
        write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
