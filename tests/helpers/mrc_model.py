"""The MRC query model (spacy-nested-mrc.MRCQuery.v1) in the ``nested_mrc_ner`` pipe on the tiny
encoder, initialized, its untrained heads firing everywhere: what the tests of its windows,
rows and decoding read."""

from dataclasses import replace

import spacy
from spacy.training import Example
from spacy.util import fix_random_seed

from helpers.configs import in_blocks

MRC = "spacy-nested-mrc.MRCQuery.v1"


def make_nlp(encoder: str, labels=("DNA", "protein"), **model_settings):
    """An initialized pipeline of the MRC model with ``labels`` (or of the architecture that
    ``model_settings`` name)."""
    nlp = spacy.blank("en")
    # PyTorch's default head initialization: untrained heads fire everywhere, which the
    # window and decoding tests rely on
    model = {"@architectures": MRC, "encoder": encoder, "query_style": "pseudo",
             "match_hidden": 16, "dropout": 0.0, "boundary_prior": 0.0}
    if model_settings.get("@architectures", MRC) == MRC:
        # the per-label MRC unless a test packs (the factory's default model packs)
        model.update({"packed": False, "per_label_loss": 0.0, "max_rows": 64})
    model.update(model_settings)
    pipe = nlp.add_pipe("nested_mrc_ner", config={"model": in_blocks(model)})
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
