"""The MRC query model (spacy-nested-mrc.MRCQuery.v2) in the ``nested_mrc_ner`` pipe on the tiny
encoder, initialized, its untrained heads firing everywhere: what the tests of its windows,
rows and decoding read."""

from dataclasses import replace

import spacy
from spacy.training import Example
from spacy.util import fix_random_seed

from helpers.configs import MRC, PER_LABEL_MRC, blocks_config

# the per-label MRC unless a test packs (the factory's default model packs), with pseudo
# questions and PyTorch's default head initialization: untrained heads fire everywhere, which
# the window and decoding tests rely on
UNTRAINED_MRC = {**PER_LABEL_MRC, "questions": {"style": "pseudo", "packed": False},
                 "heads": {"match_hidden": 16, "dropout": 0.0, "boundary_prior": 0.0}}


def make_nlp(name: str, labels=("DNA", "protein"), architecture: str = MRC, **blocks):
    """An initialized pipeline of the MRC model (or of the MRC family's ``architecture``, at
    the same settings) on the encoder ``name`` with ``labels``, its settings changed by
    ``blocks`` (in blocks: ``windows={"window_wordpieces": 24}``)."""
    nlp = spacy.blank("en")
    base = UNTRAINED_MRC if architecture == MRC else {
        key: value for key, value in UNTRAINED_MRC.items() if key != "per_label_loss"}
    config = blocks_config(architecture, base, {"encoder": name}, **blocks)
    pipe = nlp.add_pipe("nested_mrc_ner", config={"model": config})
    for label in labels:
        pipe.add_label(label)
    fix_random_seed(0)
    doc = nlp.make_doc("IL-2 gene")
    nlp.initialize(lambda: [Example(doc, doc.copy())])
    return nlp


def change_blocks(model, **blocks) -> None:
    """Change some settings of an MRC-family model's blocks in place, as a config given at
    load would: ``blocks`` maps a block's name to the settings changed in it."""
    parts = model.attrs["settings"]
    model.attrs["settings"] = replace(parts, **{
        name: replace(getattr(parts, name), **changed) for name, changed in blocks.items()
    })
