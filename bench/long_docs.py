"""Long documents: the same pipeline on GENIA dev sentences and on documents of at least
``--min-tokens`` tokens made by joining consecutive sentences (whole abstracts, in order),
without sentence boundaries and with spaCy's ``sentencizer`` run first; and the time and peak
memory of one doc of 10k, 50k and 100k tokens.

    python bench/long_docs.py PIPELINE --dev ../shared/data/genia/dev.jsonl \
        --load-set 'components.transformer.model.get_spans={"@span_getters": ...}' \
        --out bench/results/long_documents_cpu_minilm/long_docs_cpu_minilm

The joined documents are longer than the encoder window, so they go through overlapping
windows that are merged; their F1 should match the sentence-level F1. ``--load-set`` overrides
the pipeline's config at load (prediction settings such as the encoder windows).
"""
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from benchlib.configs import config_setting
from benchlib.data import read_records


def join_documents(records: List[Dict[str, Any]], min_tokens: int) -> List[Dict[str, Any]]:
    """Consecutive sentences joined (whole abstracts at a time) into records of at least
    ``min_tokens`` tokens; the last record may be shorter."""
    joined: List[Dict[str, Any]] = []
    current: Dict[str, Any] = {"tokens": [], "entities": []}
    previous_doc = None
    for record in records:
        starts_abstract = record.get("doc") != previous_doc
        previous_doc = record.get("doc")
        if starts_abstract and len(current["tokens"]) >= min_tokens:
            joined.append(current)
            current = {"tokens": [], "entities": []}
        offset = len(current["tokens"])
        current["tokens"].extend(record["tokens"])
        for entity in record["entities"]:
            current["entities"].append(
                {"start": entity["start"] + offset, "end": entity["end"] + offset,
                 "type": entity["type"]}
            )
    if current["tokens"]:
        if joined and len(current["tokens"]) < min_tokens:  # a short rest joins the last one
            last = joined[-1]
            offset = len(last["tokens"])
            last["tokens"].extend(current["tokens"])
            last["entities"].extend({**e, "start": e["start"] + offset, "end": e["end"] + offset}
                                    for e in current["entities"])
        else:
            joined.append(current)
    return joined


def score(nlp, records: List[Dict[str, Any]], batch_size: int) -> Dict[str, Any]:
    from spacy.tokens import Doc, Span
    from spacy.training import Example

    from spacy_nested_mrc.scoring.scorer import score_nested

    gold = []
    for record in records:
        doc = Doc(nlp.vocab, words=record["tokens"])
        doc.spans["nested"] = [Span(doc, e["start"], e["end"], e["type"])
                               for e in record["entities"]]
        gold.append(doc)
    start = time.perf_counter()
    predicted = list(nlp.pipe([Doc(nlp.vocab, words=r["tokens"]) for r in records],
                              batch_size=batch_size))
    seconds = time.perf_counter() - start
    scores = score_nested([Example(p, g) for p, g in zip(predicted, gold)], spans_key="nested")
    return {
        "docs": len(records),
        "tokens": sum(len(r["tokens"]) for r in records),
        "min_doc_tokens": min(len(r["tokens"]) for r in records),
        "p": scores["spans_nested_p"],
        "r": scores["spans_nested_r"],
        "f": scores["spans_nested_f"],
        "seconds": round(seconds, 1),
    }


def load(args: argparse.Namespace):
    """The pipeline, with the ``--load-set`` overrides."""
    import spacy
    from spacy.util import dot_to_dict

    overrides: Dict[str, Any] = {}
    for assignment in args.load_set:
        overrides.update(config_setting(assignment))
    return spacy.load(args.pipeline, config=dot_to_dict(overrides))


def memory_one_doc(args: argparse.Namespace) -> Dict[str, Any]:
    """Peak RSS of predicting one doc of ``args.tokens`` tokens (dev sentences repeated)."""
    from spacy.tokens import Doc

    nlp = load(args)
    words: List[str] = []
    sentences = [record["tokens"] for record in read_records(args.dev)]
    while len(words) < args.tokens:
        for tokens in sentences:
            words.extend(tokens)
            if len(words) >= args.tokens:
                break
    words = words[: args.tokens]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    doc = nlp(Doc(nlp.vocab, words=words))
    return {
        "tokens": len(doc),
        "spans": len(doc.spans["nested"]),
        "seconds": round(time.perf_counter() - start, 1),
        "rss_before_mb": round(before),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--min-tokens", type=int, default=2000)
    parser.add_argument("--memory-tokens", type=int, nargs="*",
                        default=[10_000, 50_000, 100_000])
    parser.add_argument("--tokens", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)
    parser.add_argument("--load-set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override at load, e.g. components.transformer.model."
                        "get_spans.window_tokens=64 (value as JSON where it parses)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.tokens:
        print(json.dumps(memory_one_doc(args)))
        return
    nlp = load(args)
    sentences = read_records(args.dev)  # every sentence its own record
    documents = join_documents(sentences, args.min_tokens)
    result: Dict[str, Any] = {
        "pipeline": args.pipeline,
        "load_set": args.load_set,
        "sentences": score(nlp, sentences, args.batch_size),
        "documents": score(nlp, documents, 1),
        "memory": [],
    }
    nlp.add_pipe("sentencizer", first=True)
    result["sentencized_documents"] = score(nlp, documents, 1)
    for n in args.memory_tokens:
        command = [sys.executable, __file__, args.pipeline, "--dev", args.dev,
                   "--tokens", str(n), "--threads", str(args.threads)]
        command += [f"--load-set={setting}" for setting in args.load_set]
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        result["memory"].append(json.loads(out.strip().splitlines()[-1]))
    s = result["sentences"]
    rows = [("sentences", s), ("joined documents", result["documents"]),
            ("joined documents, sentencizer first", result["sentencized_documents"])]
    lines = [
        f"Pipeline {args.pipeline} on GENIA dev, torch threads {args.threads}, "
        f"overrides at load: {args.load_set or 'none'}.",
        "",
        "| input | docs | tokens | shortest doc | P | R | F1 | F1 - sentences F1 | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, d in rows:
        lines.append(
            f"| {name} | {d['docs']} | {d['tokens']} | {d['min_doc_tokens']} "
            f"| {100 * d['p']:.2f} | {100 * d['r']:.2f} | {100 * d['f']:.2f} "
            f"| {100 * (d['f'] - s['f']):+.2f} | {d['seconds']} |")
    lines += [
        "",
        "| one doc of | spans | seconds | RSS before MB | peak RSS MB |",
        "|---|---|---|---|---|",
    ]
    for m in result["memory"]:
        lines.append(f"| {m['tokens']} tokens | {m['spans']} | {m['seconds']} "
                     f"| {m['rss_before_mb']} | {m['peak_rss_mb']} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(result, indent=2))
        Path(f"{args.out}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
