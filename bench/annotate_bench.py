"""Annotating at scale on CPU: int8 against float, and the memory of a streaming job.

    python bench/annotate_bench.py \
        --pipeline mrc_packed=bench/work_full/mrc_packed_index_tuned/model-last \
        --pipeline locate_label=bench/work_full/locate_label_tuned/model-last \
        --baseline spancat=bench/work_full/spancat/model-last \
        --dev ../shared/data/genia/dev.jsonl \
        --out bench/results/annotate_cpu_minilm/annotate_cpu_minilm

1. Speed: every pipeline in float, with ``quantize = "int8"``, and in ONNX Runtime
   (``runtime = "onnxruntime"``) in float and int8 (``--variants``), spaCy's spancat, and
   the bare encoder in float and int8, timed in one process in interleaved rounds
   (``benchlib.speed.throughput``); sentences/second and the ratio to the bare float encoder.
2. Accuracy: strict P/R/F on dev through spaCy's tokenizer (``nlp(text)``) of each.
3. Engines: documents/s of ``nlp.pipe`` in one process, ``annotate`` with 1 and 2
   processes, and ``annotate --engine ray`` with 1 and 2 actors, on the same abstracts (dev
   sentences joined by their ``doc`` field), one after the other.
4. Resume: ``annotate`` killed with SIGKILL at random moments, then run to the end; the
   output compared with an uninterrupted run's.
5. Streaming: ``annotate`` on N abstracts (repeated) in a fresh process each, under
   ``/usr/bin/time -v``: peak RSS and documents/s for each N. A streaming job's peak should
   not grow with N.
"""
import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from benchlib.annotate import annotate_command, write_input
from benchlib.data import abstracts
from benchlib.machine import machine
from benchlib.outputs import write_outputs
from benchlib.speed import throughput

# how each pipeline runs in the speed and accuracy part: (quantize, runtime, precision)
# (fp32 unless the variant says otherwise, whatever precision the pipeline was saved with)
VARIANTS = {
    "float": (None, "torch", "fp32"),
    "bf16": (None, "torch", "bf16"),
    "int8": ("int8", "torch", "fp32"),
    "onnx": (None, "onnxruntime", "fp32"),
    "onnx_int8": ("int8", "onnxruntime", "fp32"),
}


def named(values: List[str]) -> Dict[str, str]:
    return dict(value.split("=", 1) for value in values)


def accuracy(nlp: Any, dev: str, limit: int, batch_size: int) -> Dict[str, float]:
    from spacy_nested_mrc.evaluation.examples import predict_examples
    from spacy_nested_mrc.evaluation.report import evaluate_examples

    examples = predict_examples(nlp, dev, "nested", limit=limit, batch_size=batch_size)
    scores = evaluate_examples(examples, "nested").scores
    return {k: round(scores[f"spans_nested_{k}"], 4) for k in ("p", "r", "f")}


def speed_and_accuracy(args: argparse.Namespace) -> Dict[str, Any]:
    import spacy
    import torch

    from spacy_nested_mrc.annotate.loading import load_annotator
    from spacy_nested_mrc.corpora.jsonl import read_jsonl

    torch.set_num_threads(args.threads)
    pipelines: Dict[str, Any] = {}
    for name, path in named(args.pipeline).items():
        for variant in args.variants:
            quantize, runtime, precision = VARIANTS[variant]
            pipelines[name + ("" if variant == "float" else f"_{variant}")] = load_annotator(
                path, quantize, runtime, precision=precision
            )
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


def run_timed(command: List[str]) -> Dict[str, Any]:
    """Run a command under ``/usr/bin/time -v``: its peak RSS and annotate's documents/s."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    rate = re.search(r"([\d.]+) documents/s", done.stdout)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", done.stderr)
    return {
        "peak_rss_mb": round(int(rss.group(1)) / 1024) if rss else None,
        "documents_per_second": float(rate.group(1)) if rate else None,
        "wall": wall.group(1) if wall else None,
        "summary": done.stdout.strip().splitlines()[0],
    }


def streaming(args: argparse.Namespace, texts: List[str], tmp: Path) -> Dict[str, Any]:
    """Peak RSS and documents/s of ``annotate`` for each number of abstracts."""
    name, path = next(iter(named(args.pipeline).items()))
    runs = []
    for n in args.stream_docs:
        source = write_input(tmp / f"stream_{n}.jsonl", texts, n)
        options = ["--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size),
                   *variant_options(args.stream_variant)]
        run = run_timed(annotate_command(path, source, tmp / f"stream_out_{n}", *options))
        runs.append({"documents": n, **run})
        print(json.dumps(runs[-1]), flush=True)
    return {"pipeline": name, "variant": args.stream_variant, "runs": runs}


def variant_options(variant: str) -> List[str]:
    """annotate's options for one of ``VARIANTS``."""
    quantize, runtime, precision = VARIANTS[variant]
    return ((["--quantize", quantize] if quantize else []) + ["--runtime", runtime]
            + (["--precision", precision] if precision else []))


def annotate_variants(args: argparse.Namespace, texts: List[str], tmp: Path) -> Dict[str, Any]:
    """Documents/s and peak RSS of ``annotate`` (a fresh process each run) over the same
    abstracts in each of ``--variants``, the variants alternated ``--rounds`` times so that
    a noisy machine slows them alike, each run on its own copy of the output."""
    name, path = next(iter(named(args.pipeline).items()))
    source = write_input(tmp / "variants.jsonl", texts, len(texts))
    runs: Dict[str, List[Dict[str, Any]]] = {variant: [] for variant in args.variants}
    for round_ in range(args.rounds):
        for variant in args.variants:
            out = tmp / f"variant_{variant}_{round_}"
            run = run_timed(annotate_command(path, source, out, "--batch-size",
                                             str(args.batch_size), *variant_options(variant)))
            runs[variant].append(run)
            print(variant, run, flush=True)
    return {"pipeline": name, "documents": len(texts), "rounds": args.rounds,
            "documents_per_second": {v: max(r["documents_per_second"] for r in rs)
                                     for v, rs in runs.items()},
            "runs": runs}


def engines(args: argparse.Namespace, texts: List[str], tmp: Path) -> Dict[str, Any]:
    """Documents/s of the engines on the same abstracts, one after the other: ``nlp.pipe``
    in one process (timed here), annotate with 1 and 2 processes, Ray with 1 and 2 actors."""
    import spacy

    name, path = next(iter(named(args.pipeline).items()))
    docs = [texts[i % len(texts)] for i in range(args.engine_docs)]
    source = write_input(tmp / "engines.jsonl", texts, args.engine_docs)
    nlp = spacy.load(path)
    start = time.perf_counter()
    for _ in nlp.pipe(docs, batch_size=args.batch_size):
        pass
    result = {"nlp.pipe, 1 process": round(len(docs) / (time.perf_counter() - start), 2)}
    del nlp
    variants = {
        "annotate, 1 process": ["--n-process", "1"],
        "annotate, 2 processes": ["--n-process", "2"],
        "annotate --engine ray, 1 actor": ["--engine", "ray", "--concurrency", "1"],
        "annotate --engine ray, 2 actors": ["--engine", "ray", "--concurrency", "2"],
    }
    for label, extra in variants.items():
        out = tmp / f"engine_{len(result)}"
        run = run_timed(annotate_command(path, source, out, "--batch-size",
                                         str(args.batch_size), *extra))
        result[label] = run["documents_per_second"]
        print(label, run, flush=True)
    return {"pipeline": name, "documents": args.engine_docs, "documents_per_second": result}


def resume(args: argparse.Namespace, texts: List[str], tmp: Path) -> Dict[str, Any]:
    """Killed (SIGKILL) at random moments, then run to the end: the output against an
    uninterrupted run's."""
    import random

    name, path = next(iter(named(args.pipeline).items()))
    source = write_input(tmp / "resume.jsonl", texts, args.resume_docs)
    extra = ["--shard-size", "20", "--batch-size", str(args.batch_size)]
    reference = tmp / "resume_reference"
    out = tmp / "resume_killed"
    rng = random.Random(0)
    kills = []

    def records(folder: Path) -> List[str]:
        manifest_path = folder / "manifest.json"
        if not manifest_path.exists():
            return []
        manifest = json.loads(manifest_path.read_text())
        lines: List[str] = []
        for shard in manifest["shards"]:
            lines += (folder / shard["name"]).read_text(encoding="utf8").splitlines()
        return lines

    # the uninterrupted run, timed: its start-up (until its first shard is committed) and
    # its whole length
    start = time.perf_counter()
    proc = subprocess.Popen(annotate_command(path, source, reference, *extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    startup = None
    while proc.poll() is None:
        if startup is None and records(reference):
            startup = time.perf_counter() - start
        time.sleep(0.2)
    if proc.returncode != 0:
        raise RuntimeError(f"annotate failed ({proc.returncode})")
    uninterrupted = time.perf_counter() - start
    startup = startup or 0.0
    for _ in range(args.kills):
        # a random moment inside what is left of the job, past the start-up: each run
        # resumes, so each kill is aimed at a fraction of the remaining documents' time
        left = 1 - len(records(out)) / args.resume_docs
        fraction = rng.uniform(args.kill_after[0], args.kill_after[1])
        delay = startup + fraction * (uninterrupted - startup) * left
        proc = subprocess.Popen(annotate_command(path, source, out, *extra),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        finished = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills.append({"after_seconds": round(delay, 1), "had_finished": finished,
                      "committed": len(records(out))})
    run_timed(annotate_command(path, source, out, *extra))

    got, want = records(out), records(reference)

    def spans(lines: List[str]) -> List[Any]:
        return [(r["id"], [(s["start_char"], s["end_char"], s["label"]) for s in r["spans"]])
                for r in map(json.loads, lines)]

    return {"pipeline": name, "documents": args.resume_docs, "kills": kills,
            "uninterrupted_seconds": round(uninterrupted, 1),
            "startup_seconds": round(startup, 1),
            "identical": got == want, "same_ids_and_spans": spans(got) == spans(want),
            "records": len(got)}


def markdown(report: Dict[str, Any]) -> str:
    machine_ = report["machine"]
    lines = ["# Annotating GENIA abstracts on CPU", "",
             f"Machine: {machine_['cpu']}, {machine_.get('threads')} torch threads. Command: "
             f"`{report['command']}`", ""]
    speed = report.get("speed")
    if speed:
        lines += [f"## bf16, int8 and ONNX Runtime against float "
                  f"({speed['speed_sentences']} dev sentences for speed; "
                  "F1 on all of dev through spaCy's tokenizer, strict)", "",
                  "| system | sentences/s | x bare float encoder | dev P | dev R | dev F1 |",
                  "|---|---|---|---|---|---|"]
        for name, rate in speed["sentences_per_second"].items():
            acc = speed["accuracy"].get(name, {})
            cells = [f"{100 * acc[k]:.1f}" if k in acc else "-" for k in ("p", "r", "f")]
            lines.append(f"| {name} | {rate} | {speed['ratio_to_bare_encoder'][name]} | "
                         + " | ".join(cells) + " |")
    if report.get("annotate_variants"):
        var = report["annotate_variants"]
        accuracy_ = (speed or {}).get("accuracy", {})
        lines += ["", f"## annotate in each variant ({var['pipeline']}, {var['documents']} "
                  f"abstracts, a fresh process each run, the variants alternated "
                  f"{var.get('rounds', 1)} times; the best run counts)", "",
                  "| variant | documents/s (best) | each run | x fp32 | peak RSS MB | "
                  "dev F1 |", "|---|---|---|---|---|---|"]
        base = var["documents_per_second"].get("float")
        for variant, rate in var["documents_per_second"].items():
            each = [r["documents_per_second"] for r in var.get("runs", {}).get(variant, [])]
            peaks = [r["peak_rss_mb"] for r in var.get("runs", {}).get(variant, [])]
            acc = accuracy_.get(var["pipeline"] + ("" if variant == "float" else f"_{variant}"))
            ratio = f"{rate / base:.2f}" if base else "-"
            f1 = f"{100 * acc['f']:.1f}" if acc else "-"
            lines.append(f"| {variant} | {rate} | {', '.join(map(str, each)) or '-'} | {ratio} | "
                         f"{max(peaks) if peaks else '-'} | {f1} |")
    if report.get("engines"):
        eng = report["engines"]
        lines += ["", f"## Engines ({eng['pipeline']}, {eng['documents']} abstracts)", "",
                  "| engine | documents/s |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in eng["documents_per_second"].items()]
    if report.get("resume"):
        res = report["resume"]
        lines += ["", f"## Resume ({res['pipeline']}, {res['documents']} abstracts)", "",
                  f"Killed with SIGKILL {len(res['kills'])} times ({res['kills']}), then run to "
                  f"the end: output identical to an uninterrupted run: **{res['identical']}** "
                  f"({res['records']} records; an uninterrupted run takes "
                  f"{res.get('uninterrupted_seconds')} s, "
                  f"{res.get('startup_seconds')} s of them before its first shard; "
                  "'committed': documents in committed shards when killed)."]
    if report.get("streaming"):
        st = report["streaming"]
        lines += ["", f"## Streaming memory ({st['pipeline']}, {st.get('variant', 'int8')})", "",
                  "| abstracts | peak RSS (MB) | documents/s | wall |", "|---|---|---|---|"]
        for run in st["runs"]:
            lines.append(f"| {run['documents']} | {run['peak_rss_mb']} | "
                         f"{run['documents_per_second']} | {run['wall']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--baseline", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--dev-limit", type=int, default=0)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--speed-sentences", type=int, default=400)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS),
                        help="how each pipeline runs: PyTorch or ONNX Runtime, float or int8")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--stream-docs", type=int, nargs="*", default=[200, 2000],
                        help="abstracts annotated for the peak-RSS comparison")
    parser.add_argument("--engine-docs", type=int, default=100, help="abstracts per engine")
    parser.add_argument("--resume-docs", type=int, default=150)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--kill-after", type=float, nargs=2, default=[0.3, 0.8],
                        help="each kill after the start-up, at a random fraction (between "
                             "these) of the time an uninterrupted run needs for the documents "
                             "left")
    parser.add_argument("--stream-variant", default="int8", choices=list(VARIANTS),
                        help="how the streaming runs annotate")
    parser.add_argument("--shard-size", type=int, default=100)
    parser.add_argument("--parts", nargs="*", default=["speed", "engines", "resume", "stream"])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    report: Dict[str, Any] = {"machine": {**machine(), "threads": args.threads},
                              "command": " ".join(sys.argv)}
    texts = abstracts(args.dev)
    with tempfile.TemporaryDirectory() as tmp:
        if "speed" in args.parts:
            report["speed"] = speed_and_accuracy(args)
        if "variants" in args.parts:
            report["annotate_variants"] = annotate_variants(args, texts, Path(tmp))
        if "engines" in args.parts:
            report["engines"] = engines(args, texts, Path(tmp))
        if "resume" in args.parts:
            report["resume"] = resume(args, texts, Path(tmp))
            print(report["resume"], flush=True)
        if "stream" in args.parts:
            report["streaming"] = streaming(args, texts, Path(tmp))
    write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
