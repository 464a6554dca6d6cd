"""Multi-NER (spacy-nested-mrc.MultiNER.v1) and the packed MRC in the ``nested_mrc_ner`` pipe on
the tiny encoder: the config of each kind, and an initialized pipeline of it whose untrained
heads propose spans."""

import spacy
from spacy.util import fix_random_seed

from helpers.configs import in_blocks
from helpers.pipes import LABELS, PIPE, TRAIN, make_examples

# the kinds: their architecture and the settings that make them
ARCHITECTURES = {
    "multi_ner": {"@architectures": "spacy-nested-mrc.MultiNER.v1"},
    "mrc_packed": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", "packed": True},
    "multi_ner_packed": {"@architectures": "spacy-nested-mrc.MultiNER.v1", "packed": True},
    # one wordpiece per question, no separators between them
    "mrc_packed_joined": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", "packed": True,
                          "query_style": "index", "separate_questions": False},
}


def model_config(encoder: str, kind: str, **settings) -> dict:
    # PyTorch's default head initialization: untrained heads propose spans
    config = {"encoder": encoder, "query_style": "pseudo", "match_hidden": 32, "dropout": 0.0,
              "boundary_prior": 0.0}
    config.update(ARCHITECTURES[kind])
    config.update(settings)
    return in_blocks(config)


def make_nlp(encoder: str, kind: str, labels=LABELS, **settings):
    """An initialized pipeline with the given architecture on the tiny BERT."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": model_config(encoder, kind, **settings)})
    for label in labels:
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[3:4]))  # no spans: no further labels
    return nlp
