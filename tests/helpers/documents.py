"""Documents of several sentences: GENIA-style JSONL records grouped into documents (one of
their sentences context only), the file they are read from, and docs built of sentences."""

import json
from pathlib import Path

import numpy as np
from spacy.tokens import Doc


def write_jsonl(path: Path, records: list) -> Path:
    with path.open("w", encoding="utf-8") as file_:
        for record in records:
            file_.write(record if isinstance(record, str) else json.dumps(record))
            file_.write("\n")
    return path


# the sentences of documents "A" (its second sentence context only) and "B"
DOCUMENT_RECORDS = [
    {"tokens": ["IL-2", "gene", "."], "entities": [{"start": 0, "end": 2, "type": "DNA"},
                                                   {"start": 0, "end": 1, "type": "protein"}],
     "doc": "A"},
    {"tokens": ["It", "binds", "NF-kappa", "B", "."],
     "entities": [{"start": 2, "end": 4, "type": "protein"}], "doc": "A", "annotated": False},
    {"tokens": ["c-fos", "mRNA", "rises", "."],
     "entities": [{"start": 0, "end": 2, "type": "RNA"}], "doc": "A"},
    {"tokens": ["Jurkat", "cells", "."], "entities": [{"start": 0, "end": 2, "type": "cell_line"}],
     "doc": "B"},
]


def document(nlp, texts, unannotated=()):
    """A doc of sentences (lists of words) with its sentence starts."""
    words = [w for sentence in texts for w in sentence]
    doc = Doc(nlp.vocab, words=words)
    starts = np.cumsum([0] + [len(s) for s in texts[:-1]])
    for token in doc:
        token.is_sent_start = token.i in set(starts.tolist())
    return doc, starts
