"""The Multi-NER model as a thinc ``Model[SpanBatch, SpanOutput]`` (Wang et al., 2023).

A shared encoder and one MRC task per entity type: the sequences are the MRC model's, one
``[CLS] question [SEP] context [SEP]`` per (doc, window, type), or packed, one per (doc,
window, type group). Each type has its own start, end and match heads (``MRCHeads`` with
``typed``: parameters with a type dimension, applied by einsum), and before the heads the K
type-specific vectors of each token attend to each other (``torch_module.TypeAttention``),
which is how the tasks share what they know of the label dependencies. The joint loss weighs
each task by ``task_weights``. Everything else (questions, windows, rows, decoding) is the
MRC model's own code.
"""

from dataclasses import replace
from typing import Any, Dict, Iterable, List, Tuple, Union

import numpy as np
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import SimpleFrozenDict, registry
from thinc.api import Model

from ...errors import Errors
from ...runtime.precision import autocast
from ...sentences import reading_starts_of
from ...types import SETTINGS, SpanBatch, SpanOutput
from ...validation import check_non_negative, check_positive
from ..mrc.blocks import (
    MRCDecoder,
    MRCHeadsSettings,
    QueryBlocks,
    QueryEncoder,
    QueryWindows,
    Questions,
)
from ..mrc.loss import MRCLoss
from ..mrc.model import (
    build_query_model,
    check_initialized,
    predict_passes,
)
from ..wrapping import torch_module
from .torch_module import TypeAttention

NAME = "multi_ner"


@registry.architectures("spacy-nested-mrc.MultiNER.v2")
def build_multi_ner_model(
    encoder: QueryEncoder,
    questions: Questions,
    windows: QueryWindows,
    heads: MRCHeadsSettings,
    loss: MRCLoss,
    decoder: MRCDecoder,
    task_weights: Dict[str, float] = SimpleFrozenDict(),
    attention_heads: int = 8,
) -> Model[SpanBatch, SpanOutput]:
    """Build the Multi-NER model (Wang et al., 2023): the blocks of ``MRCQuery.v2``, with one
    set of heads per entity type and the type attention before them.

    encoder (QueryEncoder): as for MRCQuery.v2 (``spacy-nested-mrc.QueryEncoder.v1``); all
        rows of a window (its K types, or its label groups) always go through the encoder
        in the same pass.
    questions (Questions): as for MRCQuery.v2; packed, the type attention gathers each
        token's type vectors across the label groups of its window.
    windows (QueryWindows): as for MRCQuery.v2.
    heads (MRCHeadsSettings): as for MRCQuery.v2; its dropout is also the type attention's.
    loss (MRCLoss): each task's loss, as for MRCQuery.v2.
    decoder (MRCDecoder): as for MRCQuery.v2.
    task_weights (Dict[str, float]): label -> lambda_k >= 0, the weight of the label's task in
        the joint loss ``mean_k(lambda_k * L_k)`` (1.0 for a label not named). Each head's
        L_k is over the task's own tokens or match candidates.
    attention_heads (int): heads of the type attention; they must divide the encoder's hidden
        size (NME030 at initialization).
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    check_positive("attention_heads", attention_heads)
    weights = dict(task_weights)
    for label, weight in weights.items():
        check_non_negative(f"task_weights[{label!r}]", weight)
    return build_query_model(
        NAME,
        # every task's loss is its own
        QueryBlocks(encoder, questions, windows, heads, replace(loss, per_label=1.0), decoder),
        typed=True,
        mixer=TypeAttention(attention_heads, heads.dropout),
        attrs={"task_weights": weights},
    )


def type_attention(
    nlp_or_model: Union[Language, Model],
    docs: Iterable[Union[Doc, str]],
    *,
    per_token: bool = False,
) -> Union[np.ndarray, List[np.ndarray]]:
    """How the entity types attend to each other in Multi-NER's type attention.

    nlp_or_model (Union[Language, Model]): a pipeline with a Multi-NER pipe, or its model;
        either initialized.
    docs (Iterable[Union[Doc, str]]): the docs, or texts (tokenized by the pipeline).
    per_token (bool): return the map of every token instead of their average.
    RETURNS (Union[np.ndarray, List[np.ndarray]]): [K, K], labels in the model's label order:
        row k is how type k's vector attends to every type's (the row sums to 1), averaged
        over attention heads, over start and end vectors and over the tokens of the docs
        that have wordpieces (NaN if there are none). With ``per_token``, per doc [N, K, K],
        NaN for tokens without wordpieces.
    """
    model, make_doc = _find_model(nlp_or_model)
    check_initialized(model)
    doc_list = []
    for doc in docs:
        if not isinstance(doc, Doc) and make_doc is None:
            raise ValueError(Errors.NME033)
        doc_list.append(doc if isinstance(doc, Doc) else make_doc(doc))
    n_types = len(model.attrs["labels"])
    maps = [np.full((len(doc), n_types, n_types), np.nan, dtype=np.float32) for doc in doc_list]
    batch = SpanBatch(doc_list, sentence_starts=reading_starts_of(doc_list, split=True))
    for chosen, _, passes in predict_passes(model, batch, heads_pass=_attention_pass):
        for _, part, (attention,) in passes:  # attention: [W, T, K, K]
            _scatter_windows(part, attention, n_types, [maps[k] for k in chosen])
    if per_token:
        return maps
    tokens = np.concatenate([m.reshape(-1, n_types, n_types) for m in maps])
    tokens = tokens[~np.isnan(tokens[:, 0, 0])]
    if not len(tokens):
        return np.full((n_types, n_types), np.nan, dtype=np.float32)
    return tokens.mean(axis=0)


def _attention_pass(heads: Model, hidden: Any, rows: Any) -> Tuple[np.ndarray]:
    """The type attention maps [W, T, K, K] of one prediction pass (``MRCHeads.attention``),
    in the heads' precision, with dropout off as in any prediction."""
    module = torch_module(heads)
    training = module.training
    module.eval()
    try:
        with torch.no_grad(), autocast(heads.attrs[SETTINGS].precision):
            return (module.attention(hidden, rows).cpu().numpy(),)
    finally:
        module.train(training)


def _scatter_windows(part: Any, attention: np.ndarray, n_types: int, maps: List[np.ndarray]):
    """Write the maps [W, T, K, K] of a pass's windows to the tokens of their docs, each token
    from the window whose core holds it."""
    first_rows = np.arange(0, part.n_rows, n_types)  # one row of each window
    positions = part.offset[first_rows, None] + np.arange(attention.shape[1])[None, :]
    keep = (
        part.token_mask[first_rows]
        & (positions >= part.core_start[first_rows, None])
        & (positions < part.core_end[first_rows, None])
    )
    for w, row in enumerate(first_rows):
        maps[part.doc[row]][positions[w, keep[w]]] = attention[w, keep[w]]


def _find_model(nlp_or_model: Union[Language, Model]) -> Tuple[Model, Any]:
    """The Multi-NER model, and the pipeline's tokenizer (None for a bare model)."""
    if isinstance(nlp_or_model, Model):
        model, make_doc, what = nlp_or_model, None, f"the model '{nlp_or_model.name}'"
    else:
        found = [
            pipe.model
            for _, pipe in nlp_or_model.pipeline
            if isinstance(getattr(pipe, "model", None), Model) and pipe.model.name == NAME
        ]
        model = found[0] if found else None
        make_doc, what = nlp_or_model.make_doc, "the pipeline"
    if model is None or model.name != NAME:
        raise ValueError(Errors.NME032.format(what=what))
    return model, make_doc

