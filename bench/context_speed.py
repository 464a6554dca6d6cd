"""The inference cost of context on whole abstracts: trained pipelines through ``nlp.pipe`` on
GENIA dev abstracts (with the file's sentence boundaries, as the JSON Lines reader gives them),
each beside the bare encoder over the very windows it reads, sorted by length (its floor), and
the bare encoder over the abstracts' sentences alone, sorted by length (reading the text once,
the floor of any pipeline), in one process, interleaved, best of ``--repeats``.

A pipeline's windows are those of its MRC model (``plan_reading``: each sentence alone with
``context = 0``, else cores of whole sentences with ``context`` wordpieces around them; the
packed MRC's questions, about 10 wordpieces a sequence, are not in its floor) or of its shared
``transformer``'s span getter (Locate-and-Label). The same trained weights loaded with and
without context (``--set NAME:KEY=JSON``) give the cost of context alone.

    python bench/context_speed.py --documents bench/work/genia_docs/dev.documents.spacy \\
        --pipelines mrc=PATH mrc_context32=PATH \\
        --set 'mrc_context32:components.nested_mrc_ner.model.windows.context_wordpieces=32' \\
        --out bench/results/documents_context_cpu_minilm/context_speed_cpu_minilm
"""

import argparse
from typing import Any, Callable, List

import numpy as np
import spacy
import torch
from benchlib.configs import load_overrides
from benchlib.outputs import write_table
from benchlib.speed import bare_encoder, interleaved
from spacy.tokens import Doc, Span
from transformers import AutoTokenizer

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.encoder.hf import resolve_encoder
from spacy_nested_mrc.encoder.passes import prediction_passes
from spacy_nested_mrc.encoder.span_getters import window_encoders
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import plan_reading

FLOOR = "bare encoder over the sentences, by length"


def reading_windows(nlp: Any, docs: List[Doc]) -> List[Span]:
    """The windows the encoder of ``nlp`` reads for the docs: its shared ``transformer``'s
    span getter's or that of Locate-and-Label's own transformer, else its nested_mrc_ner
    model's (``plan_reading``)."""
    encoders = window_encoders(nlp, "nested_mrc_ner")
    if encoders:
        get_spans = encoders[0][1].attrs["get_spans"]
        return [span for spans in get_spans(docs) for span in spans]
    model = nlp.get_pipe("nested_mrc_ner").model
    _, windows = plan_reading(model, layout_of(model), docs)
    return [doc[w.start : w.end] for doc, ws in zip(docs, windows) for w in ws]


def wordpieces(tokenizer: Any, spans: List[Any]) -> np.ndarray:
    """[N] wordpieces of each span's words, with the encoder's special tokens."""
    words = [[t.text for t in span] for span in spans]
    encoded = tokenizer(words, is_split_into_words=True)
    return np.asarray([len(ids) for ids in encoded["input_ids"]])


def floor_of(encode: Callable, windows: List[Any], lengths: np.ndarray, max_tokens: int
             ) -> Callable[[], None]:
    """The bare encoder over the windows by length, in calls of at most ``max_tokens``
    padded wordpieces, as the pipes' encoders call it (``prediction_passes``)."""
    calls = [[windows[k] for k in call] for call in prediction_passes(lengths, 0, max_tokens)]
    return lambda: [encode(call, len(call)) for call in calls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", required=True, help="dev documents (DocBin or JSONL)")
    parser.add_argument("--pipelines", nargs="+", required=True, help="NAME=PATH ...")
    parser.add_argument("--set", action="append", default=[], metavar="NAME:KEY=JSON",
                        help="a config override at load for one pipeline, e.g. its context")
    parser.add_argument("--docs", type=int, default=100, help="first N abstracts")
    parser.add_argument("--batch-size", type=int, default=8, help="docs per nlp.pipe batch")
    parser.add_argument("--floor-pass-tokens", type=int, default=1024,
                        help="the floor's most padded wordpieces a call (the pipes' default)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    blank = spacy.blank("en")
    docs = [eg.predicted for eg in create_jsonl_reader(args.documents, limit=args.docs)(blank)]
    n_words = sum(len(doc) for doc in docs)
    encode = bare_encoder(args.encoder, by_length=True)
    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(args.encoder))
    sentences = [sent for doc in docs for sent in doc.sents]
    lengths = wordpieces(tokenizer, sentences)
    runs = {FLOOR: floor_of(encode, sentences, lengths, args.floor_pass_tokens)}
    reads = {FLOOR: {"windows": len(sentences), "wordpieces": int(lengths.sum())}}
    own_floor = {FLOOR: FLOOR}  # each row's floor over its own windows
    for item in args.pipelines:
        name, path = item.split("=", 1)
        nlp = spacy.load(path, config=load_overrides(args.set, name))
        windows = reading_windows(nlp, docs)
        floor = f"{name}: bare encoder over its windows, by length"
        lengths = wordpieces(tokenizer, windows)
        reads[name] = reads[floor] = {"windows": len(windows), "wordpieces": int(lengths.sum())}
        own_floor[name] = own_floor[floor] = floor
        runs[name] = lambda nlp=nlp: list(nlp.pipe(docs, batch_size=args.batch_size))
        runs[floor] = floor_of(encode, windows, lengths, args.floor_pass_tokens)
    seconds = interleaved(runs, args.repeats)
    best = {label: min(times) for label, times in seconds.items()}
    rows = []
    for label, times in seconds.items():
        rows.append({
            "system": label,
            "words_per_s": n_words / best[label],
            "x_own_windows_floor": best[own_floor[label]] / best[label],
            "x_sentence_floor": best[FLOOR] / best[label],
            **reads[label],
            "seconds": times,
        })
    lines = [
        f"# Inference cost of context: {len(docs)} GENIA dev abstracts ({n_words} words, "
        f"{len(sentences)} sentences, sentence boundaries set), nlp.pipe batches of "
        f"{args.batch_size} docs, the floors' encoder calls of at most "
        f"{args.floor_pass_tokens} padded wordpieces, "
        f"{args.threads} threads, best of {args.repeats}",
        "",
        "| system | words/s | x floor over its own windows | x floor over the sentences "
        "| windows | wordpieces read (with special tokens, not questions) |",
        "|---|---|---|---|---|---|",
        *[f"| {r['system']} | {r['words_per_s']:.0f} | {r['x_own_windows_floor']:.2f} | "
          f"{r['x_sentence_floor']:.2f} | {r['windows']} | {r['wordpieces']} |"
          for r in rows],
        "",
        f"Pipelines: {', '.join(args.pipelines)}; overrides: {args.set or 'none'}.",
    ]
    write_table(args.out, rows, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
