"""The pipelines of spaCy's pipeline contract, one of each architecture on the tiny encoder, and
the texts they read; their spans and scores as JSON, for the scripts the contract's tests run in
other processes (``from helpers.contract import TEXTS, as_json``)."""

import json

import spacy
from spacy.util import fix_random_seed

from helpers.locate_label import shipped_pipeline
from helpers.multi_ner import model_config
from helpers.outputs import SHORT_TEXTS
from helpers.pipes import KEY, LABELS, PIPE, TRAIN, make_examples

ARCHITECTURES = ["mrc", "mrc_packed", "multi_ner", "locate_label"]
TEXTS = SHORT_TEXTS[:24]


def build(kind: str, encoder: str, tmp_path) -> spacy.Language:
    """An initialized pipeline of ``kind`` on the tiny encoder, its thresholds at 0 so that
    its random heads write spans to compare."""
    if kind == "locate_label":
        model = "components.nested_mrc_ner.model"
        nlp = shipped_pipeline("locate_label_cpu.cfg", encoder, tmp_path, {
            f"{model}.heads.hidden_width": 32, f"{model}.decoder.filter_threshold": 0.0,
            f"{model}.decoder.nms_score": 0.0, "components.nested_mrc_ner.threshold": 0.0})
        fix_random_seed(0)
        nlp.initialize(lambda: make_examples(nlp, TRAIN))
        return nlp
    nlp = spacy.blank("en")
    # the per-label MRC (the default model packs)
    settings = {"questions": {"packed": False}} if kind == "mrc" else {}
    config = model_config(encoder, "mrc_packed" if kind == "mrc" else kind, **settings)
    pipe = nlp.add_pipe(PIPE, config={"threshold": 0.0, "model": config})
    for label in LABELS:
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[3:4]))
    return nlp


def as_json(docs) -> str:
    return json.dumps([[(s.start, s.end, s.label_, float(score))
                        for s, score in zip(doc.spans[KEY], doc.spans[KEY].attrs["scores"])]
                       for doc in docs])
