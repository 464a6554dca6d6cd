"""The ``nested_mrc_ner`` pipe on toy nested examples: its name and spans key, the examples and
their labels, and the per-label MRC pipe the pipe's tests train."""

from typing import Dict, Tuple

import spacy
import torch
from spacy.lang.en import English
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import fix_random_seed
from thinc.api import Model

from helpers.configs import PER_LABEL_MRC, mrc_blocks
from spacy_nested_mrc.encoder.hf import hf_transformers

PIPE = "nested_mrc_ner"
KEY = "nested"

# (text, [(start, end, label)]) with nested entities, an example without entities and an
# empty text
TRAIN = [
    ("IL-2 gene expression", [(0, 2, "DNA"), (0, 1, "protein")]),
    ("human T cells bind", [(0, 3, "cell_type"), (1, 3, "cell_type")]),
    ("Jurkat cells express IL-2", [(0, 2, "cell_line"), (3, 4, "protein")]),
    ("binding of the kinase", []),
    ("", []),
]
LABELS = ("DNA", "cell_line", "cell_type", "protein")


# the per-label MRC of Li et al. (one sequence per label; the default packs them), small
SMALL_MRC = {**PER_LABEL_MRC, "questions": {"style": "pseudo", "packed": False},
             "heads": {"match_hidden": 32, "dropout": 0.0}}


def model_config(name: str, **blocks) -> dict:
    """The small per-label MRC on the encoder ``name``, with the settings ``blocks`` give (in
    blocks: ``heads={"match_candidates": "all"}``)."""
    return mrc_blocks(SMALL_MRC, {"encoder": name}, **blocks)


def blank_nlp(encoder: str, model=None, **component) -> English:
    """A pipeline of the small per-label MRC, ``model`` its settings in blocks."""
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": model_config(encoder, **(model or {})), **component})
    return nlp


def make_examples(nlp, data, key: str = KEY):
    examples = []
    for text, spans in data:
        predicted = nlp.make_doc(text)
        reference = predicted.copy()
        reference.spans[key] = [Span(reference, s, e, label) for s, e, label in spans]
        examples.append(Example(predicted, reference))
    return examples


def span_keys(doc, key: str = KEY):
    return [(s.start, s.end, s.label_) for s in doc.spans[key]]


def initialized_nlp(encoder: str, labels=LABELS, model=None, **component) -> English:
    nlp = blank_nlp(encoder, model, **component)
    pipe = nlp.get_pipe(PIPE)
    for label in labels:
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN[:1]))
    return nlp


def torch_grads(pipe):
    model = pipe.model
    params = [
        *hf_transformers(model.get_ref("encoder"))[0].parameters(),
        *model.get_ref("heads").attrs["torch_module"].parameters(),
    ]
    return [p.grad.detach().clone() for p in params if p.grad is not None]


def torch_weights(nlp) -> Dict[Tuple[int, str], torch.nn.Parameter]:
    """Every torch parameter of the pipeline's pipes, keyed as the optimizers key it."""
    found = {}
    for _, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if not isinstance(model, Model):
            continue
        for node in model.walk():
            for shim in node.shims:
                for name, param in shim._model.named_parameters():
                    found[(shim.id, name)] = param
    return found
