"""Multi-NER (spacy-nested-mrc.MultiNER.v2) and the packed MRC in the ``nested_mrc_ner`` pipe on
the tiny encoder: the config of each kind, and an initialized pipeline of it whose untrained
heads propose spans."""

import spacy
from spacy.util import fix_random_seed

from helpers.configs import MRC, MULTI_NER, blocks_config
from helpers.pipes import LABELS, PIPE, TRAIN, make_examples

# Multi-NER as the tests have always run it: one sequence per label, 64 rows a pass
MULTI_NER_SETTINGS = {"encoder": {"max_rows_per_pass": 64}, "questions": {"packed": False}}
# the kinds: their architecture and the settings that make them
ARCHITECTURES = {
    "multi_ner": (MULTI_NER, MULTI_NER_SETTINGS),
    "mrc_packed": (MRC, {"questions": {"packed": True}}),
    "multi_ner_packed": (MULTI_NER, {**MULTI_NER_SETTINGS, "questions": {"packed": True}}),
    # one wordpiece per question, no separators between them
    "mrc_packed_joined": (MRC, {"questions": {"packed": True, "style": "index",
                                              "separate": False}}),
}
# pseudo questions in fp32, and PyTorch's default head initialization: untrained heads
# propose spans
UNTRAINED = {"encoder": {"precision": "fp32"}, "questions": {"style": "pseudo"},
             "heads": {"match_hidden": 32, "dropout": 0.0, "boundary_prior": 0.0}}


def model_config(name: str, kind: str, *bases, **blocks) -> dict:
    """The config of ``kind`` on the encoder ``name``, its settings changed by ``bases`` and
    then ``blocks`` (in blocks: ``decoder={"start_threshold": 0.0}``)."""
    architecture, settings = ARCHITECTURES[kind]
    return blocks_config(architecture, UNTRAINED, settings, {"encoder": name}, *bases, **blocks)


def make_nlp(name: str, kind: str, labels=LABELS, **blocks):
    """An initialized pipeline of ``kind`` on the encoder ``name`` (the tiny BERT)."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": model_config(name, kind, **blocks)})
    for label in labels:
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[3:4]))  # no spans: no further labels
    return nlp
