"""The worst case for decoding: one long document through untrained pipelines built from the
shipped CPU configs (initialized on a few GENIA sentences, as `spacy train` would before its
first step), at the shipped thresholds and with every threshold at 0 (Locate-and-Label's
filter passes every seed span; the MRC start, end and match heads pass every pair). Each
case runs in a fresh process; the table gives its time and peak RSS.

    python bench/long_doc_worst_case.py --train ../shared/data/genia/train.jsonl \
        --dev ../shared/data/genia/dev.jsonl --tokens 100000 \
        --out bench/results/long_documents_cpu_minilm/long_doc_worst_case_cpu_minilm

The document is GENIA dev's sentences joined in order (repeated if there are too few) up to
``--tokens`` tokens, without sentence boundaries: the encoder windows are strided.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List

from benchlib.configs import CONFIGS
from benchlib.data import read_records
from benchlib.machine import machine
from benchlib.memory import rss_mb
from benchlib.outputs import write_outputs

from spacy_nested_mrc.runtime.memory import peak_rss_mb

# every threshold at 0: what an untrained model lets through in the worst case
PASS_ALL = {
    "locate_label": {"components.nested_mrc_ner.model.decoder.filter_threshold": 0.0,
                     "components.nested_mrc_ner.model.decoder.nms_score": 0.0,
                     "components.nested_mrc_ner.threshold": 0.0},
    "mrc_packed": {"components.nested_mrc_ner.model.decoder.start_threshold": 0.0,
                   "components.nested_mrc_ner.model.decoder.end_threshold": 0.0,
                   "components.nested_mrc_ner.threshold": 0.0},
}


def long_text(dev: str, n_tokens: int) -> str:
    """GENIA dev's tokens in order, repeated as needed, cut at ``n_tokens``."""
    tokens: List[str] = []
    records = read_records(dev)
    while len(tokens) < n_tokens:
        for record in records:
            tokens.extend(record["tokens"])
    return " ".join(tokens[:n_tokens])


def one_case(args: argparse.Namespace) -> Dict[str, Any]:
    """Build, initialize and run one pipeline on the long document, in this process."""
    import warnings

    import torch
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    from spacy_nested_mrc.encoder.hf import resolve_encoder

    torch.set_num_threads(args.threads)
    overrides = {
        "paths.train": args.train, "paths.dev": args.dev, "paths.train_limit": args.init_limit,
        "paths.encoder": resolve_encoder(args.encoder),
    }
    if args.pass_all:
        overrides.update(PASS_ALL[args.config])
    config = load_config(CONFIGS[args.config], overrides=overrides, interpolate=False)
    nlp = init_nlp(config, use_gpu=-1)
    text = long_text(args.dev, args.tokens)
    nlp(text[:2000])  # the same code paths once on a short text
    before = peak_rss_mb()
    sampler = StageSampler()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # what nlp(text) does, a pipe's predict and set_annotations as stages of their own
        doc = nlp.make_doc(text)
        for name, pipe in nlp.pipeline:
            with sampler.stage(f"{name}.predict"):
                scores = pipe.predict([doc])
            with sampler.stage(f"{name}.set_annotations"):
                pipe.set_annotations([doc], scores)
            del scores
    sampler.stop()
    group = doc.spans["nested"]
    return {
        "config": args.config, "pass_all": args.pass_all, "tokens": len(doc),
        "spans": len(group), "seconds": round(time.perf_counter() - start, 1),
        "peak_rss_before_mb": round(before), "peak_rss_mb": round(peak_rss_mb()),
        "stages": sampler.peaks,
        "warnings": sorted({str(w.message)[:200] for w in caught}),
    }


class StageSampler:
    """The resident size of this process sampled every 20 ms from a thread: the highest
    sample of each named stage, and the size as the stage ended ("... end")."""

    def __init__(self) -> None:
        self.peaks: Dict[str, int] = {}
        self.current = "start"
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.current = name
        try:
            yield
        finally:
            self._record(name, name)
            self.peaks[f"{name} end"] = resident_mb()
            self.current = "between"

    def stop(self) -> None:
        self.running = False
        self.thread.join()

    def _record(self, name: str, key: str) -> None:
        self.peaks[key] = max(self.peaks.get(key, 0), resident_mb())

    def _sample(self) -> None:
        while self.running:
            self._record(self.current, self.current)
            time.sleep(0.02)


def resident_mb() -> int:
    return round(rss_mb(os.getpid()))


def markdown(report: Dict[str, Any]) -> str:
    lines = [
        f"One document of {report['tokens']} tokens (GENIA dev's sentences joined, no sentence "
        f"boundaries) through untrained pipelines of the shipped CPU configs, initialized on "
        f"{report['init_limit']} GENIA train sentences; encoder {report['encoder']}, torch "
        f"threads {report['threads']}, each case in a fresh process.",
        "",
        "| config | thresholds | spans | seconds | peak RSS before MB | peak RSS MB | warnings |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['config']} | {'all 0 (worst case)' if row['pass_all'] else 'shipped'} | "
            f"{row['spans']} | {row['seconds']} | {row['peak_rss_before_mb']} | "
            f"{row['peak_rss_mb']} | {'; '.join(row['warnings']) or '-'} |"
        )
    lines += ["", "Peak resident size by stage (MB; sampled every 20 ms; \"end\": as the "
              "stage ended):", ""]
    for row in report["rows"]:
        if row.get("stages"):
            stages = ", ".join(f"{k} {v}" for k, v in row["stages"].items())
            thresholds = "all 0" if row["pass_all"] else "shipped"
            lines.append(f"- {row['config']}, {thresholds}: {stages}")
    lines += ["", f"Machine: {report['machine']}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, help="JSONL the pipelines initialize on")
    parser.add_argument("--dev", required=True, help="JSONL whose text makes the document")
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--init-limit", type=int, default=40)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=sorted(PASS_ALL))
    parser.add_argument("--out", help="write OUT.md and OUT.json")
    parser.add_argument("--config", help=argparse.SUPPRESS)  # one case, in a child process
    parser.add_argument("--pass-all", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.config:
        print(json.dumps(one_case(args)))
        return
    import torch

    torch.set_num_threads(args.threads)  # as in the children, so machine() reports it
    rows = []
    common = ["--train", args.train, "--dev", args.dev, "--tokens", str(args.tokens),
              "--init-limit", str(args.init_limit), "--encoder", args.encoder,
              "--threads", str(args.threads)]
    for config in args.configs:
        for pass_all in (False, True):
            command = [sys.executable, __file__, *common, "--config", config]
            done = subprocess.run(command + (["--pass-all"] if pass_all else []),
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{config} failed:\n{done.stderr[-3000:]}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    report = {"tokens": args.tokens, "init_limit": args.init_limit, "encoder": args.encoder,
              "threads": args.threads, "rows": rows, "machine": machine()}
    write_outputs(args.out, report, markdown(report))


if __name__ == "__main__":
    main()
