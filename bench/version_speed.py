"""Inference speed against the bare encoder, this checkout beside an earlier commit: was the
model layer's move onto public APIs (issue 17) free?

    python bench/version_speed.py --dev ../shared/data/genia/dev.jsonl --old 581c377 \
        --out bench/results/speed_cpu_minilm/version_speed_cpu_minilm

The earlier commit is checked out as a git worktree (in --work). Each version is timed in
fresh processes of this script (``--child``) whose ``PYTHONPATH`` puts that version's package
first, so that the timing code and the sentences are the same for both and only the package
differs. The runs alternate between the versions (old, new, old, new, ...), so that a slow
spell of the machine hits both. In each run, untrained pipelines of every model family (the
architectures' defaults, GENIA's five labels: the MRC family with the built-in questions,
Locate-and-Label over spacy-transformers' Tok2VecTransformer with its strided windows) and the
bare encoder are timed interleaved (``benchlib.speed.throughput``); the measure is each
pipeline's speed as a ratio to the bare encoder of the same process, since the two versions
cannot share a process. Writes OUT.json and OUT.md.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean
from typing import Any, Dict, List

from benchlib.machine import machine
from benchlib.outputs import write_outputs
from benchlib.pipelines import untrained_pipeline
from benchlib.speed import add_speed_arguments, throughput

ROOT = Path(__file__).resolve().parents[1]
LABELS = ["DNA", "RNA", "cell_line", "cell_type", "protein"]
MRC = "spacy-nested-mrc.MRCQuery.v1"
# the MRC rows name every setting the factory's default model (packed, index) sets otherwise
PER_LABEL = {"packed": False, "query_style": "natural", "per_label_loss": 0.0, "max_rows": 64}
MODES: Dict[str, Dict[str, Any]] = {
    "mrc": {"@architectures": MRC, **PER_LABEL},
    "mrc_packed_index": {"@architectures": MRC, **PER_LABEL, "packed": True,
                         "query_style": "index"},
    "multi_ner": {"@architectures": "spacy-nested-mrc.MultiNER.v1"},
    "locate_label": {"@architectures": "spacy-nested-mrc.LocateAndLabel.v1"},
}


def model_config(mode: str, encoder: str) -> Dict[str, Any]:
    """The pipe's model config of ``mode`` on the local encoder folder ``encoder``."""
    if mode != "locate_label":
        return {**MODES[mode], "encoder": encoder}
    tok2vec = {"@architectures": "spacy-transformers.Tok2VecTransformer.v3", "name": encoder,
               "tokenizer_config": {"use_fast": True},
               "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1",
                             "window": 128, "stride": 96},
               "pooling": {"@layers": "reduce_mean.v1"}}
    return {**MODES[mode], "tok2vec": tok2vec}


def child(args: argparse.Namespace) -> None:
    """Time this process's package (the one ``PYTHONPATH`` puts first); print one JSON line."""
    import spacy
    import torch
    from spacy.tokens import Doc
    from spacy.util import fix_random_seed

    import spacy_nested_mrc
    from spacy_nested_mrc.encoder.hf import resolve_encoder

    torch.set_num_threads(args.threads)
    fix_random_seed(0)
    vocab = spacy.blank("en").vocab
    with open(args.dev, encoding="utf8") as file_:
        records = [json.loads(line) for _, line in zip(range(args.sentences), file_)]
    sample = [Doc(vocab, words=record["tokens"]) for record in records]
    encoder = resolve_encoder(args.encoder)
    pipelines = {mode: untrained_pipeline(model_config(mode, encoder), LABELS)[0]
                 for mode in args.modes}
    spans: Dict[str, float] = {}
    speed = throughput(pipelines, sample, args.encoder, args.batch_size, args.rounds, spans)
    print(json.dumps({"package": spacy_nested_mrc.__file__, "spans_per_sentence": spans,
                      "sentences_per_second": {k: round(v, 2) for k, v in speed.items()},
                      "ratio": {k: round(v / speed["bare_encoder"], 3)
                                for k, v in speed.items()}}))


def checkout(commit: str, work: Path) -> Path:
    """RETURNS (Path): a worktree of ``commit`` under ``work`` (made once, reused)."""
    path = work / f"worktree_{commit}"
    if not path.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path),
                        commit], check=True, capture_output=True)
    return path


def run_version(root: Path, args: argparse.Namespace) -> Dict[str, Any]:
    """One child run with ``root``'s package. RETURNS (Dict[str, Any]): its report (the
    package's path checked, so that a version cannot time the other)."""
    command = [sys.executable, __file__, "--child", "--dev", str(Path(args.dev).resolve()),
               "--modes", *args.modes, "--sentences", str(args.sentences), "--rounds",
               str(args.rounds), "--threads", str(args.threads), "--batch-size",
               str(args.batch_size), "--encoder", args.encoder]
    out = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(root)}, check=True,
                         capture_output=True, text=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    if not Path(report["package"]).resolve().is_relative_to(root.resolve()):
        raise SystemExit(f"{root}: the package came from {report['package']}")
    return report


def run(args: argparse.Namespace) -> Dict[str, Any]:
    work = Path(args.work).resolve()
    versions = {f"old ({args.old})": checkout(args.old, work), "new (this checkout)": ROOT}
    runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in versions}
    for _ in range(args.repeats):
        for name, root in versions.items():
            runs[name].append(run_version(root, args))
            print(name, json.dumps(runs[name][-1]["ratio"]), flush=True)
    return {"settings": vars(args), "machine": machine(), "runs": runs}


def markdown(report: Dict[str, Any]) -> str:
    s = report["settings"]
    old, new = report["runs"]
    lines = [f"Inference speed as a ratio to the bare encoder timed in the same process: "
             f"untrained pipelines (GENIA's 5 labels, the architectures' defaults), the first "
             f"{s['sentences']} GENIA dev sentences, batch size {s['batch_size']}, torch "
             f"threads {s['threads']}, best of {s['rounds']} interleaved rounds per run; "
             f"{s['repeats']} runs a version, alternating between the versions, each in a "
             f"fresh process.", "",
             f"| mode | {old}: each run | {new}: each run | new / old (means) |",
             "|---|---|---|---|"]
    for mode in s["modes"]:
        a = [r["ratio"][mode] for r in report["runs"][old]]
        b = [r["ratio"][mode] for r in report["runs"][new]]
        lines.append(f"| {mode} | {', '.join(f'{x:.3f}' for x in a)} | "
                     f"{', '.join(f'{x:.3f}' for x in b)} | {mean(b) / mean(a):.2f} |")
    lines += ["", "Spans written per sentence (the decoding load), first run of each: "
              + "; ".join(f"{name}: {json.dumps(runs[0]['spans_per_sentence'])}"
                          for name, runs in report["runs"].items()),
              "", "Packages imported: " + "; ".join(f"{name}: {runs[0]['package']}"
                                                    for name, runs in report["runs"].items()),
              "", f"Machine: {report['machine']}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dev", required=True)
    parser.add_argument("--old", default="581c377",
                        help="the earlier commit (581c377: the release whose saved pipelines "
                        "tests/ loads, before the model layer moved onto public APIs)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default=str(ROOT / "bench" / "work_versions"))
    add_speed_arguments(parser)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    report = run(args)
    write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
