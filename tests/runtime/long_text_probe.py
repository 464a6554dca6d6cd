"""Run one long text through a tiny pipeline in the worst case for decoding and print, as
JSON, its spans, time and the growth of the process's peak resident size over a short
text's. Run in a fresh process by tests/runtime/test_long_texts.py (and usable by hand):

    python tests/runtime/long_text_probe.py ENCODER_DIR locate_label 20000 [no-punct]

The text repeats a short sentence; with ``no-punct`` it has no sentence punctuation at all
(a table dump), so the pipe reads it as one sentence cut into overlapping windows.

The worst case: Locate-and-Label with a filter that passes every seed span; the MRC family
with start, end and match heads that pass every pair.
"""
import json
import resource
import sys
import time
import warnings

import spacy
from spacy.tokens import Span
from spacy.training import Example
from thinc.api import fix_random_seed

KEY = "nested"
WORDS = "IL-2 gene expression in human T cells and Jurkat cells .".split()
LABELS = ("DNA", "protein")


def locate_label_pipe(encoder: str) -> dict:
    return {
        "threshold": 0.0,
        "model": {
            "@architectures": "spacy-nested-mrc.LocateAndLabel.v2",
            "tok2vec": {
                "@architectures": "spacy-transformers.Tok2VecTransformer.v3",
                "name": encoder,
                "tokenizer_config": {"use_fast": True},
                "get_spans": {"@span_getters": "spacy-nested-mrc.sentence_windows.v2",
                              "window_tokens": 64, "stride_tokens": 48},
                "pooling": {"@layers": "reduce_mean.v1"},
            },
            "seeds": {"@misc": "spacy-nested-mrc.SeedSpans.v1"},
            "heads": {"@misc": "spacy-nested-mrc.LocateLabelHeads.v1", "hidden_width": 32},
            "loss": {"@misc": "spacy-nested-mrc.LocateLabelLoss.v1"},
            "decoder": {"@misc": "spacy-nested-mrc.SoftNMSDecoder.v1", "filter_threshold": 0.0,
                        "nms_score": 0.0},
        },
    }


def mrc_pipe(encoder: str) -> dict:
    return {
        "threshold": 0.0,
        # the factory's default model (packed, index questions) with these blocks' settings
        "model": {
            "encoder": {"name": encoder},
            "heads": {"match_hidden": 16},
            "decoder": {"start_threshold": 0.0, "end_threshold": 0.0, "max_span_length": 4},
        },
    }


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(encoder: str, kind: str, n_tokens: int, punctuation: bool = True) -> None:
    nlp = spacy.blank("en")
    config = locate_label_pipe(encoder) if kind == "locate_label" else mrc_pipe(encoder)
    nlp.add_pipe("nested_mrc_ner", config=config)
    doc = nlp.make_doc("IL-2 gene expression")
    reference = doc.copy()
    reference.spans[KEY] = [Span(reference, 0, 2, "DNA"), Span(reference, 0, 1, "protein")]
    fix_random_seed(0)
    nlp.initialize(lambda: [Example(doc, reference)])
    nlp(" ".join(WORDS * 20))  # warm-up: the same code paths on a short text
    before = peak_mb()
    words = WORDS if punctuation else [w for w in WORDS if w != "."]
    text = " ".join((words * (n_tokens // len(words) + 1))[:n_tokens])
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = nlp(text)
    seconds = time.perf_counter() - start
    codes = sorted({str(w.message).split("]")[0].lstrip("[") for w in caught})
    print(json.dumps({
        "kind": kind, "tokens": len(doc), "characters": len(text),
        "spans": len(doc.spans[KEY]),
        "seconds": round(seconds, 1), "peak_before_mb": round(before),
        "peak_growth_mb": round(peak_mb() - before), "warnings": codes,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), punctuation=sys.argv[4:] != ["no-punct"])
