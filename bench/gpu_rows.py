"""Full-data rows on one lent GPU, in one call: the documents study of "Documents, not
sentences" (#28, ``--study documents``) or the encoder study (#39, ``--study encoders``).

Every row trains a shipped CPU config on all of GENIA train grouped into abstracts
(``group_by doc``) with ``spacy train --gpu-id``, all rows at once (one process each, sharing
the GPU), then tunes it on dev in its abstracts (``tune``, our pipes only) and scores it with
``context_eval.py`` (dev inside its abstracts, context-only sentences unscored; and dev as
isolated sentences). The settings beside each config are the ones of the CPU rows in
``bench/results/documents_context_cpu_minilm/NOTES.md``, so a row differs from its CPU twin
only in the hardware (and the seed's luck), and a pair differs only in the context.

    python bench/gpu_rows.py --train train.jsonl --dev-documents dev.documents.spacy \
        --dev-sentences dev.sentences.spacy --encoder ENCODER_FOLDER --work WORK --out OUT \
        --deadline 520 [--rows mrc_packed_ctx0 ...] [--gpu-id 0] [--smoke]

A training still running when the deadline's training share is over is stopped and its
``model-best`` (saved at each dev evaluation) is scored; its row says so. ``--smoke`` runs
every row for a few steps on a few abstracts (the script's own check, on CPU too).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from confection import Config

ROOT = Path(__file__).resolve().parent.parent
PIPE = "components.nested_mrc_ner"
DOCS = {"corpora.train.group_by": "doc", "corpora.dev.group_by": "doc",
        "corpora.dev.limit": 200}
# the schedule of the CPU rows full_ctx32_b800 / full_mn_ctx32: batches of 800 words, lr 3e-4
MRC_SCHEDULE = {
    "training.batcher.size.start": 800, "training.batcher.size.stop": 800,
    "training.optimizer.learn_rate.initial_rate": 3e-4,
    "training.optimizer.learn_rate.warmup_steps": 177,
    "training.optimizer.learn_rate.total_steps": 1770,
}
PACKED_MULTI_NER = {f"{PIPE}.model.questions.packed": True,
                    f"{PIPE}.model.questions.style": "index",
                    f"{PIPE}.model.encoder.gradient_checkpointing": False,
                    "training.max_epochs": 3}
CONTEXT_WINDOWS = {"@span_getters": "spacy-nested-mrc.context_windows.v2",
                   "window_tokens": 128, "context_tokens": 32}
ROWS: Dict[str, Dict[str, Any]] = {
    "mrc_packed_ctx0": {"config": "configs/mrc_packed_cpu.cfg", "set": {
        **MRC_SCHEDULE, f"{PIPE}.model.windows.context_wordpieces": 0}},
    "mrc_packed_ctx32": {"config": "configs/mrc_packed_cpu.cfg", "set": {
        **MRC_SCHEDULE, f"{PIPE}.model.windows.context_wordpieces": 32}},
    "multi_ner_ctx0": {"config": "configs/multi_ner_cpu.cfg", "set": {
        **MRC_SCHEDULE, **PACKED_MULTI_NER, f"{PIPE}.model.windows.context_wordpieces": 0}},
    "multi_ner_ctx32": {"config": "configs/multi_ner_cpu.cfg", "set": {
        **MRC_SCHEDULE, **PACKED_MULTI_NER, f"{PIPE}.model.windows.context_wordpieces": 32}},
    # the schedule of the CPU row full_ll_ctx
    "locate_label_ctx0": {"config": "configs/locate_label_cpu.cfg", "set": {
        "training.optimizer.learn_rate.warmup_steps": 280,
        "training.optimizer.learn_rate.total_steps": 2800}},
    "locate_label_ctx32": {"config": "configs/locate_label_cpu.cfg", "set": {
        "training.optimizer.learn_rate.warmup_steps": 280,
        "training.optimizer.learn_rate.total_steps": 2800,
        f"{PIPE}.model.tok2vec.transformer.get_spans": CONTEXT_WINDOWS,
        f"{PIPE}.model.tok2vec.transformer.token_vectors": "own_window"}},
    # spaCy's spancat at its best sentence schedule (3 epochs, lr 1e-4) on the same abstracts;
    # spacy-transformers' strided windows (128 / 96) give it context; our tokenizer, as its row
    "spancat_docs": {"config": "bench/configs/spancat_cpu.cfg", "tune": False, "set": {
        "nlp.tokenizer": {"@tokenizers": "spacy-nested-mrc.Tokenizer.v1",
                          "split_hyphens": False},
        "training.batcher.size": {"@schedules": "constant.v1", "rate": 800},
        "training.max_epochs": 3,
        "training.optimizer.learn_rate.initial_rate": 1e-4,
        "training.optimizer.learn_rate.warmup_steps": 150,
        "training.optimizer.learn_rate.total_steps": 1470}},
}
# The encoder study (#39): the shipped CPU configs on all-mpnet-base-v2, sentence by sentence as
# their MiniLM rows in bench/results/adapt_cpu_minilm/, batches of 800 words (the GPU spends a
# step mostly in Python, so fewer, larger steps), 3 epochs (1,408 steps), learning rates for a
# base-size encoder; tuned on dev and scored through spacy evaluate's protocol (encoder_rows.py).
EPOCHS_800 = {"training.batcher.size.start": 800, "training.batcher.size.stop": 800,
              "training.max_epochs": 3, "training.eval_frequency": 350,
              "training.optimizer.learn_rate.warmup_steps": 141,
              "training.optimizer.learn_rate.total_steps": 1408}
ENCODER_ROWS: Dict[str, Dict[str, Any]] = {
    "mrc_packed_lr5e-5": {"config": "configs/mrc_packed_cpu.cfg", "set": {
        **EPOCHS_800, "training.optimizer.learn_rate.initial_rate": 5e-5}},
    "mrc_packed_lr1e-4": {"config": "configs/mrc_packed_cpu.cfg", "set": {
        **EPOCHS_800, "training.optimizer.learn_rate.initial_rate": 1e-4}},
    "locate_label_lr1e-4": {"config": "configs/locate_label_cpu.cfg", "set": {
        **EPOCHS_800, "training.optimizer.learn_rate.initial_rate": 1e-4}},
    # spaCy's spancat at its best MiniLM schedule (3 epochs, lr 1e-4), our tokenizer
    "spancat_lr1e-4": {"config": "bench/configs/spancat_cpu.cfg", "tune": False, "set": {
        "nlp.tokenizer": {"@tokenizers": "spacy-nested-mrc.Tokenizer.v1",
                          "split_hyphens": False},
        **EPOCHS_800, "training.optimizer.learn_rate.initial_rate": 1e-4}},
}
# the same rows on the encoder that --adapt-config adapts first (WORK/adapted/encoder)
for _name, _row in list(ENCODER_ROWS.items()):
    ENCODER_ROWS[f"adapted_{_name}"] = {**_row, "adapted": True}
STUDIES = {"documents": ROWS, "encoders": ENCODER_ROWS}
SMOKE = {"training.max_steps": 4, "training.eval_frequency": 2, "corpora.train.limit": 6,
         "corpora.dev.limit": 3}


def set_path(config: Config, dotted: str, value: Any) -> None:
    """Set ``a.b.c`` in ``config``; every section on the way must exist (a typo fails)."""
    *sections, key = dotted.split(".")
    node = config
    for section in sections:
        if section not in node:
            raise KeyError(f"{dotted}: no section {section!r}")
        node = node[section]
    node[key] = value


def row_config(name: str, args: argparse.Namespace, work: Path, encoder: str) -> Path:
    """RETURNS: the row's config file on ``encoder``, written into ``work``."""
    row = STUDIES[args.study][name]
    config = Config().from_disk(ROOT / row["config"], interpolate=False)
    if args.study == "documents":
        settings = {**DOCS, "paths.dev": str(args.dev_documents),
                    "training.eval_frequency": 300}
    else:
        settings = {"paths.dev": str(args.dev)}
    settings.update({"paths.encoder": encoder, "paths.train": str(args.train),
                     **row["set"]})
    if args.gpu_id >= 0:
        settings["system.gpu_allocator"] = "pytorch"
    if args.smoke:
        settings.update(SMOKE)
    for dotted, value in settings.items():
        set_path(config, dotted, value)
    path = work / f"{name}.cfg"
    config.to_disk(path)
    return path


def last_step(log: Path) -> Optional[int]:
    """RETURNS: the last step spacy train's table printed, None before the first."""
    steps = re.findall(r"^\s*\d+\s+(\d+)\s", log.read_text(errors="replace"), re.M)
    return int(steps[-1]) if steps else None


def stop(process: subprocess.Popen) -> int:
    """Stop ``process`` and everything it started. Under ``/usr/bin/time`` (which does not
    hand SIGTERM on) its child is signalled, so that ``time`` still writes the wall time and
    peak RSS of the stopped training into the log. RETURNS: the exit code."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    pids = [int(pid) for pid in children.read_text().split()] if children.exists() else []
    for pid in pids or [process.pid]:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--study", choices=sorted(STUDIES), default="documents")
    parser.add_argument("--dev", type=Path, help="encoders: dev .jsonl for the evaluations "
                        "during training")
    parser.add_argument("--dev-documents", type=Path, help="documents: dev in its abstracts")
    parser.add_argument("--dev-sentences", type=Path, required=True,
                        help="dev as a DocBin of sentences (scored; encoders: also tuned on)")
    parser.add_argument("--encoder", required=True)
    parser.add_argument("--encoder-name", default=None,
                        help="the encoder as the encoders study's table names it")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", nargs="+", default=None,
                        help="rows of the study (default: all of them)")
    parser.add_argument("--gpu-id", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads a process")
    parser.add_argument("--deadline", type=float, default=520.0,
                        help="seconds for the whole script; scoring gets --score-seconds of it")
    parser.add_argument("--score-seconds", type=float, default=150.0)
    parser.add_argument("--adapt-config", type=Path, default=ROOT / "configs/adapt/adapt_cpu.cfg",
                        help="encoders: the adaptation config of the adapted_* rows")
    parser.add_argument("--adapt-text", help="encoders: the text the adapted_* rows adapt on")
    parser.add_argument("--adapt-set", nargs="*", default=[],
                        help="encoders: overrides of the adaptation, e.g. adapt.batch_size=64")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rows_of = STUDIES[args.study]
    args.rows = args.rows or list(rows_of)
    unknown = sorted(set(args.rows) - set(rows_of))
    needed = "dev" if args.study == "encoders" else "dev_documents"
    if unknown or getattr(args, needed) is None:
        parser.error(f"study {args.study}: rows {sorted(rows_of)}, "
                     f"--{needed.replace('_', '-')} required (unknown rows: {unknown})")
    start = time.time()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    python = sys.executable
    timed = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []  # peak RSS, wall

    def launch(command: List[str], log_name: str) -> Tuple[subprocess.Popen, float, Any]:
        log = (args.out / log_name).open("w")
        return (subprocess.Popen([*timed, *command], stdout=log, stderr=subprocess.STDOUT,
                                 env=env, start_new_session=True), time.time(), log)

    def train(name: str, encoder: str) -> Tuple[subprocess.Popen, float, Any]:
        output = args.work / name
        shutil.rmtree(output, ignore_errors=True)
        config = row_config(name, args, args.work, encoder)
        return launch([python, "-m", "spacy", "train", str(config), "--output", str(output),
                       "--gpu-id", str(args.gpu_id)], f"{name}.train.log")

    waiting = [name for name in args.rows if rows_of[name].get("adapted")]
    adapting = None
    if waiting:
        if not args.adapt_text:
            parser.error(f"rows {waiting} need --adapt-text")
        adapted = args.work / "adapted"
        shutil.rmtree(adapted, ignore_errors=True)
        overrides = [f"--{setting.replace('=', ' ', 1)}" for setting in args.adapt_set]
        if args.smoke:
            overrides.append("--adapt.max_steps 2")
        adapting = launch([python, "-m", "spacy_nested_mrc", "adapt", str(args.adapt_config),
                           str(adapted), "--paths.encoder", str(args.encoder), "--paths.text",
                           args.adapt_text, "--gpu-id", str(args.gpu_id),
                           *" ".join(overrides).split()], "adapt.log")
    processes = {name: train(name, str(args.encoder)) for name in args.rows
                 if name not in waiting}
    train_deadline = start + args.deadline - args.score_seconds
    rows: Dict[str, Dict[str, Any]] = {}
    adaptation: Dict[str, Any] = {}
    if adapting is not None:
        process, began, log = adapting
        try:
            code = process.wait(timeout=max(1.0, train_deadline - time.time()))
        except subprocess.TimeoutExpired:
            code = stop(process)
        log.close()
        adaptation = {"rc": code, "seconds": round(time.time() - began, 1),
                      "log": str(args.out / "adapt.log"), "config": str(args.adapt_config),
                      "text": args.adapt_text, "set": args.adapt_set}
        encoder = args.work / "adapted" / "encoder"
        if code == 0 and encoder.exists():
            processes.update({name: train(name, str(encoder)) for name in waiting})
    for name, (process, began, log) in processes.items():
        try:
            code = process.wait(timeout=max(1.0, train_deadline - time.time()))
            stopped = False
        except subprocess.TimeoutExpired:
            code = stop(process)
            stopped = True
        log.close()
        rows[name] = {"train_rc": code, "train_seconds": round(time.time() - began, 1),
                      "stopped_at_deadline": stopped,
                      "last_step": last_step(args.out / f"{name}.train.log")}
    scoring = {}
    for name, row in rows.items():
        output = args.work / name
        model = output / ("model-best" if row["stopped_at_deadline"] else "model-last")
        if not (model / "config.cfg").exists():
            model = output / "model-best"
        if not (model / "config.cfg").exists():
            row["scored"] = None
            continue
        row["scored"] = model.name
        tuned = model
        if rows_of[name].get("tune", True):
            tuned = args.work / f"{name}_tuned"
            documents = args.study == "documents"
            command = [python, "-m", "spacy_nested_mrc", "tune", str(model),
                       str(args.dev_documents if documents else args.dev_sentences),
                       "--output", str(tuned), "--gate-grid", "0.4" if documents else "0.3,0.4,0.5",
                       "--gpu-id", str(args.gpu_id), "--report",
                       str(args.out / f"{name}.tuning.json")]
            if args.smoke:
                command += ["--limit", "3"]
        else:
            command = None
        if args.study == "documents":
            evaluate = [python, str(ROOT / "bench" / "context_eval.py"), "--documents",
                        str(args.dev_documents), "--sentences", str(args.dev_sentences),
                        "--pipelines", f"{name}={tuned}", "--threads", str(args.threads),
                        "--gpu-id", str(args.gpu_id), "--ways", "abstracts_sentences",
                        "sentences", "--out", str(args.out / f"{name}.context_eval")]
            if args.smoke:
                evaluate += ["--limit", "3"]
        else:
            precision = "fp32" if "spancat" in name else "bf16"
            encoder_name = (args.encoder_name or str(args.encoder)) + (
                " adapted" if rows_of[name].get("adapted") else "")
            spec = "|".join([name, encoder_name, precision,
                             str(tuned), str(args.out / f"{name}.train.log")])
            evaluate = [python, str(ROOT / "bench" / "encoder_rows.py"), "--dev",
                        str(args.dev_sentences), "--gpu-id", str(args.gpu_id),
                        "--row", shlex.quote(spec), "--out", str(args.out / f"{name}_rows")]
        script = [" ".join(command) + " && " if command else "", " ".join(evaluate)]
        log = (args.out / f"{name}.score.log").open("w")
        scoring[name] = (subprocess.Popen(["bash", "-c", "".join(script)], stdout=log,
                                          stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True), log)
    for name, (process, log) in scoring.items():
        try:
            rows[name]["score_rc"] = process.wait(
                timeout=max(1.0, start + args.deadline - time.time()))
        except subprocess.TimeoutExpired:
            stop(process)
            rows[name]["score_rc"] = "stopped at the deadline"
        log.close()
        result = args.out / f"{name}.context_eval.json"
        if result.exists():
            rows[name]["scores"] = json.loads(result.read_text())["rows"]
        result = args.out / f"{name}_rows.json"
        if result.exists():
            scored = json.loads(result.read_text())["rows"][0]
            rows[name]["scores"] = [{"way": scorer, "f": scored[scorer]["f"] / 100}
                                    for scorer in ("ours", "spacy")]
    summary = {"study": args.study, "rows": rows, "adaptation": adaptation,
               "settings": {name: rows_of[name] for name in args.rows},
               "seconds": round(time.time() - start, 1), "smoke": args.smoke}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    for name, row in rows.items():
        scores = row.get("scores") or []
        found = {s["way"]: f"{100 * s['f']:.2f}" for s in scores}
        print(f"{name}: train {row['train_seconds']} s rc {row['train_rc']} step "
              f"{row['last_step']} stopped {row['stopped_at_deadline']} scored "
              f"{row.get('scored')} score_rc {row.get('score_rc')} F1 {found}")


if __name__ == "__main__":
    main()
