"""A stand-in for ../shared/data/biomed-ner built in the test: each of the eleven corpora's
folder with a few sentences annotating its own labels (the labels of its question preset), and
a small trained pipeline with natural questions, as the intermediate training leaves one."""

import gzip
import json
from pathlib import Path

import spacy
from spacy.training import Example
from spacy.util import fix_random_seed

from helpers.configs import mrc_blocks
from spacy_nested_mrc.models.mrc.questions import load_preset

CORPORA = ("bc2gm", "craft", "linnaeus", "anatem", "ncbi-disease", "bc5cdr", "bionlp13cg",
           "bionlp13pc", "bionlp11id", "bionlp11epi", "ex-ptm")
WORDS = ["the", "IL-2", "gene", "in", "human", "T", "cells", "binds", "NF-kappa", "B", "."]


def biomed_folder(path: Path) -> Path:
    """RETURNS (Path): a folder of the eleven corpora, train and dev, gzipped JSON Lines."""
    for corpus in CORPORA:
        labels = sorted(load_preset(corpus))
        records = []
        for n in range(3):
            entities = [{"start": (k + n) % 9, "end": (k + n) % 9 + 2, "type": label}
                        for k, label in enumerate(labels[:4])]
            records.append({"tokens": WORDS, "entities": entities})
        (path / corpus).mkdir(parents=True, exist_ok=True)
        for split in ("train", "dev"):
            with gzip.open(path / corpus / f"{split}.jsonl.gz", "wt", encoding="utf8") as f:
                f.write("".join(json.dumps(record) + "\n" for record in records))
    return path


def intermediate_pipeline(encoder: str, path: Path) -> Path:
    """RETURNS (Path): a saved pipeline of the packed MRC model with natural questions (the
    biomedical presets and GENIA's), initialized on two labels of the corpora."""
    nlp = spacy.blank("en")
    model = mrc_blocks(encoder={"name": encoder, "precision": "fp32"},
                       questions={"style": "natural", "presets": ["genia", *CORPORA]},
                       heads={"match_hidden": 16})
    pipe = nlp.add_pipe("nested_mrc_ner", config={"model": model})
    for label in ("GENE", "Disease"):
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    nlp.to_disk(path)
    return path
