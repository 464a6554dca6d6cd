"""The MRC query model as a thinc ``Model[SpanBatch, SpanOutput]``.

For every doc, window and label one sequence ``[CLS] question [SEP] context [SEP]`` goes through
the encoder; the heads of ``torch_module.MRCHeads`` score the context tokens. Sequences are
built per batch (never for the corpus), and at most ``max_rows`` go through the encoder at once.
"""

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from spacy.tokens import Doc
from spacy.util import SimpleFrozenDict, registry
from thinc.api import (
    ArgsKwargs,
    Model,
    PyTorchGradScaler,
    PyTorchWrapper_v2,
    get_torch_default_device,
)

from ...encoder import (
    build_encoder,
    encoder_has_weights,
    get_hidden_size,
    get_max_positions,
    get_tokenizer,
    load_encoder,
    to_device,
)
from ...errors import Errors, Warnings
from ...spans import (
    Window,
    WordpieceAlignment,
    align_wordpieces,
    owned_by,
    plan_windows,
    shorten_long_tokens,
)
from ...types import SpanBatch, SpanOutput
from ...validation import check_choice, check_positive, check_probability
from ..wrapping import convert_heads_outputs
from .decode import MATCH_CANDIDATES
from .loss import LOSSES, MRCLoss
from .questions import QUERY_STYLES, make_questions
from .torch_module import MRCHeads

DEFAULT_PRESETS = ("genia", "ace2005", "conll03", "ontonotes")


@registry.architectures("spacy-nested-mrc.MRCQuery.v1")
def build_mrc_query_model(
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2",
    query_style: str = "natural",
    queries: Dict[str, str] = SimpleFrozenDict(),
    queries_path: Optional[str] = None,
    query_presets: Sequence[str] = DEFAULT_PRESETS,
    max_length: int = 256,
    window_overlap: int = 32,
    match_candidates: str = "pred_and_gold",
    match_hidden: int = 256,
    dropout: float = 0.1,
    max_span_length: int = 0,
    start_threshold: float = 0.5,
    end_threshold: float = 0.5,
    loss: str = "bce",
    dice_smooth: float = 1.0,
    weight_start: float = 1.0,
    weight_end: float = 1.0,
    weight_match: float = 1.0,
    max_rows: int = 64,
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = SimpleFrozenDict(),
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(use_fast=True),
) -> Model[SpanBatch, SpanOutput]:
    """Build the MRC query model (Li et al., 2020).

    encoder (str): a Hugging Face model: local folder or hub name (embedded copies are used
        when a package carries one, as for all-MiniLM-L6-v2).
    query_style (str): "natural", "pseudo" (label name) or "index" (label position).
    queries (Dict[str, str]): label -> question, over the built-in ones.
    queries_path (Optional[str]): a JSON file label -> question.
    query_presets (List[str]): built-in question sets searched in order.
    max_length (int): wordpieces per encoder sequence (capped at the encoder's limit).
    window_overlap (int): tokens shared by consecutive windows of a long doc.
    match_candidates (str): training pairs of the match head: all | gold | pred_and_gold.
    match_hidden (int): hidden width of the match classifier.
    dropout (float): dropout in the heads.
    max_span_length (int): the most tokens an entity may have; 0 for no limit.
    start_threshold, end_threshold (float): boundary probabilities that open/close a span.
    loss (str): "bce" or "dice"; dice_smooth (float) is dice's smoothing.
    weight_start, weight_end, weight_match (float): per-head loss weights.
    max_rows (int): most sequences per encoder pass; training batches are split to fit.
    mixed_precision (bool): fp16 autocast on GPU; grad_scaler_config (dict) its scaler.
    tokenizer_config (dict): settings for the tokenizer's from_pretrained.
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    check_choice("query_style", query_style, QUERY_STYLES)
    check_choice("match_candidates", match_candidates, MATCH_CANDIDATES)
    check_choice("loss", loss, LOSSES)
    for name, value in (
        ("start_threshold", start_threshold),
        ("end_threshold", end_threshold),
        ("dropout", dropout),
    ):
        check_probability(name, value)
    for name, value in (
        ("max_length", max_length),
        ("match_hidden", match_hidden),
        ("max_rows", max_rows),
    ):
        check_positive(name, value)
    check_positive("window_overlap", window_overlap, allow_zero=True)
    check_positive("max_span_length", max_span_length, allow_zero=True)
    enc = build_encoder(mixed_precision=mixed_precision, grad_scaler_config=grad_scaler_config)
    heads_module = MRCHeads(
        match_hidden=match_hidden,
        dropout=dropout,
        candidates=match_candidates,
        max_span_length=max_span_length,
        start_threshold=start_threshold,
        end_threshold=end_threshold,
        loss=MRCLoss(loss, dice_smooth, weight_start, weight_end, weight_match),
    )
    scaler_config = {"enabled": mixed_precision, **grad_scaler_config}
    heads = PyTorchWrapper_v2(
        heads_module,
        convert_inputs=_heads_inputs,
        convert_outputs=convert_heads_outputs,
        mixed_precision=mixed_precision,
        grad_scaler=PyTorchGradScaler(**scaler_config),
    )
    return Model(
        "mrc_query",
        forward,
        init=init,
        layers=[enc, heads],
        refs={"encoder": enc, "heads": heads},
        attrs={
            "labels": [],
            "questions": {},
            "docs_per_pass": max_rows,
            "set_labels": set_labels,
            "encoder_name": encoder,
            "tokenizer_config": dict(tokenizer_config),
            "query_settings": {
                "style": query_style,
                "queries": dict(queries),
                "queries_path": queries_path,
                "presets": list(query_presets),
            },
            "max_length": max_length,
            "window_overlap": window_overlap,
            "max_rows": max_rows,
        },
    )


def set_labels(model: Model, labels: Sequence[str]) -> None:
    """Fix the labels and their questions; raises NME002 for a label without a question."""
    questions = make_questions(list(labels), **model.attrs["query_settings"])
    model.attrs["labels"] = list(labels)
    model.attrs["questions"] = questions
    model.attrs["docs_per_pass"] = max(1, model.attrs["max_rows"] // max(1, len(labels)))


def init(model: Model, X: Optional[SpanBatch] = None, Y: Any = None) -> Model:
    """Load the encoder's weights and size the heads."""
    encoder = model.get_ref("encoder")
    if not encoder_has_weights(encoder):
        load_encoder(encoder, model.attrs["encoder_name"], model.attrs["tokenizer_config"])
    heads_module = model.get_ref("heads").shims[0]._model
    heads_module.materialize(get_hidden_size(encoder), get_torch_default_device())
    if model.attrs["labels"]:
        _layout(model)  # fail early when the questions leave no room for a context
    return model


def forward(model: Model, batch: SpanBatch, is_train: bool):
    """Training: the loss of the batch; prediction: scored spans, ``max_rows`` at a time."""
    if not model.attrs["labels"] or not encoder_has_weights(model.get_ref("encoder")):
        raise ValueError(Errors.NME001.format(name=model.name))
    layout = _layout(model)
    if is_train:
        rows = build_rows(model, layout, batch.docs, batch.gold)
        if rows.unlearnable:
            n = rows.unlearnable
            warnings.warn(Warnings.NMW010.format(count=n, plural="" if n == 1 else "s"))
        if rows.n_rows == 0:
            return SpanOutput(loss=0.0), lambda d_loss: None
        hidden, backprop_encoder = model.get_ref("encoder")(rows.encoder_inputs(), is_train)
        loss, backprop_heads = model.get_ref("heads")((hidden, rows.head_inputs(True)), is_train)

        def backprop(d_loss: float) -> None:
            backprop_encoder(backprop_heads(d_loss))

        return SpanOutput(loss=loss), backprop
    output = SpanOutput(spans=[None] * len(batch.docs), scores=[None] * len(batch.docs))
    max_rows = model.attrs["max_rows"]
    # docs of similar length share a pass, so little of each pass is padding
    by_length = sorted(range(len(batch.docs)), key=lambda k: len(batch.docs[k]))
    for begin in range(0, len(by_length), model.attrs["docs_per_pass"]):
        chosen = by_length[begin : begin + model.attrs["docs_per_pass"]]
        rows = build_rows(model, layout, [batch.docs[k] for k in chosen], None)
        found_pairs, found_scores = [np.zeros((0, 3), dtype=np.int64)], [np.zeros(0, np.float32)]
        for low in range(0, rows.n_rows, max_rows):  # a long doc has many rows
            part = rows.select(slice(low, low + max_rows))
            hidden = model.get_ref("encoder").predict(part.encoder_inputs())
            pairs, prob, _, _ = model.get_ref("heads").predict((hidden, part.head_inputs(False)))
            pairs[:, 0] += low
            found_pairs.append(pairs)
            found_scores.append(prob)
        spans, scores = rows.to_doc_spans(
            np.concatenate(found_pairs), np.concatenate(found_scores), len(chosen)
        )
        for n, k in enumerate(chosen):
            output.spans[k], output.scores[k] = spans[n], scores[n]
    return output, lambda d_loss: None


@dataclass
class QueryLayout:
    """How each label's sequence is laid out around the context.

    prefix (List[np.ndarray]): per label, the ids before the context ([CLS] question [SEP]).
    suffix (List[np.ndarray]): per label, the ids after it ([SEP]).
    prefix_types, suffix_types (List[np.ndarray]): their token type ids.
    context_type (int): the token type id of the context.
    room (int): context wordpieces that fit in one window with the longest question.
    """

    prefix: List[np.ndarray]
    suffix: List[np.ndarray]
    prefix_types: List[np.ndarray]
    suffix_types: List[np.ndarray]
    context_type: int
    room: int


def _layout(model: Model) -> QueryLayout:
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    max_length = min(model.attrs["max_length"], get_max_positions(model.get_ref("encoder")))
    labels = model.attrs["labels"]
    return query_layout(
        tokenizer, [model.attrs["questions"][label] for label in labels], labels, max_length
    )


def query_layout(tokenizer: Any, questions: List[str], labels: List[str], max_length: int):
    """Lay out ``[CLS] question [SEP] context [SEP]`` for any tokenizer's special tokens.

    A sentinel id stands in for the context, so the tokenizer's own pair template tells where
    the context goes and which token type it gets.
    RETURNS (QueryLayout): the layout.
    """
    sentinel = -7
    layout = QueryLayout([], [], [], [], 0, 0)
    overhead = 0
    for question in questions:
        q_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
        seq = tokenizer.build_inputs_with_special_tokens(q_ids, [sentinel])
        types = tokenizer.create_token_type_ids_from_sequences(q_ids, [sentinel])
        pos = seq.index(sentinel)
        layout.prefix.append(np.asarray(seq[:pos], dtype=np.int64))
        layout.suffix.append(np.asarray(seq[pos + 1 :], dtype=np.int64))
        layout.prefix_types.append(np.asarray(types[:pos], dtype=np.int64))
        layout.suffix_types.append(np.asarray(types[pos + 1 :], dtype=np.int64))
        layout.context_type = int(types[pos])
        overhead = max(overhead, len(seq) - 1)
    layout.room = max_length - overhead
    if layout.room < 1:
        raise ValueError(
            Errors.NME008.format(labels=labels, needed=overhead, max_length=max_length)
        )
    return layout


@dataclass
class MRCRows:
    """The encoder sequences of a batch: one row per (doc, window, label).

    input_ids, attention_mask, token_type_ids (np.ndarray): [R, L].
    start_index, end_index (np.ndarray): [R, T] wordpiece of each window token's start/end.
    token_mask (np.ndarray): [R, T] bool, tokens that exist and have wordpieces.
    doc, label, offset, core_start, core_end (np.ndarray): [R] where each row comes from.
    gold_start, gold_end (Optional[np.ndarray]): [R, T] bool; gold_pairs [G, 3] (row, i, j).
    use_token_types (bool): whether the encoder takes token type ids.
    unlearnable (int): gold spans starting or ending on a token without wordpieces.
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    start_index: np.ndarray
    end_index: np.ndarray
    token_mask: np.ndarray
    doc: np.ndarray
    label: np.ndarray
    offset: np.ndarray
    core_start: np.ndarray
    core_end: np.ndarray
    gold_start: Optional[np.ndarray]
    gold_end: Optional[np.ndarray]
    gold_pairs: Optional[np.ndarray]
    use_token_types: bool
    unlearnable: int = 0

    @property
    def n_rows(self) -> int:
        return len(self.doc)

    def encoder_inputs(self) -> ArgsKwargs:
        kwargs = {
            "input_ids": to_device(self.input_ids),
            "attention_mask": to_device(self.attention_mask),
        }
        if self.use_token_types:
            kwargs["token_type_ids"] = to_device(self.token_type_ids)
        return ArgsKwargs(args=(), kwargs=kwargs)

    def head_inputs(self, with_gold: bool) -> Dict[str, torch.Tensor]:
        tensors = {
            "start_index": to_device(self.start_index),
            "end_index": to_device(self.end_index),
            "token_mask": to_device(self.token_mask, torch.bool),
        }
        if with_gold:
            assert self.gold_start is not None and self.gold_pairs is not None
            shape = self.token_mask.shape
            gold_match = torch.zeros(
                (shape[0], shape[1], shape[1]), dtype=torch.bool, device=get_torch_default_device()
            )
            pairs = to_device(self.gold_pairs)
            gold_match[pairs[:, 0], pairs[:, 1], pairs[:, 2]] = True
            tensors["gold_start"] = to_device(self.gold_start, torch.bool)
            tensors["gold_end"] = to_device(self.gold_end, torch.bool)
            tensors["gold_match"] = gold_match
        return tensors

    def select(self, rows: slice) -> "MRCRows":
        """The rows of a slice, without the padding columns they do not need (prediction)."""
        length = max(1, int(self.attention_mask[rows].sum(axis=1).max(initial=0)))
        return MRCRows(
            self.input_ids[rows, :length],
            self.attention_mask[rows, :length],
            self.token_type_ids[rows, :length],
            self.start_index[rows],
            self.end_index[rows],
            self.token_mask[rows],
            self.doc[rows],
            self.label[rows],
            self.offset[rows],
            self.core_start[rows],
            self.core_end[rows],
            None,
            None,
            None,
            self.use_token_types,
        )

    def to_doc_spans(
        self, pairs: np.ndarray, scores: np.ndarray, n_docs: int
    ) -> Tuple[List[np.ndarray], List[np.ndarray]]:
        """Predicted pairs [P, 3] (row, i, j) with scores [P] -> per doc, spans [S, 3]
        (start, end, label) sorted, and their scores [S].

        A span is kept only from the window that owns its centre, so spans in overlaps of
        windows are reported once.
        """
        rows, i, j = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        starts = self.offset[rows] + i
        ends = self.offset[rows] + j + 1
        keep = owned_by(starts, ends, self.core_start[rows], self.core_end[rows])
        table = np.stack([self.doc[rows], starts, ends, self.label[rows]], axis=1)[keep]
        kept_scores = scores[keep].astype(np.float32)
        order = np.lexsort((table[:, 3], table[:, 2], table[:, 1], table[:, 0]))
        table, kept_scores = table[order], kept_scores[order]
        bounds = np.searchsorted(table[:, 0], np.arange(n_docs + 1))
        spans = [table[bounds[d] : bounds[d + 1], 1:] for d in range(n_docs)]
        return spans, [kept_scores[bounds[d] : bounds[d + 1]] for d in range(n_docs)]


def build_rows(
    model: Model, layout: QueryLayout, docs: List[Doc], gold: Optional[List[np.ndarray]]
) -> MRCRows:
    """Tokenize the docs once and expand them into (doc, window, label) sequences."""
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    n_labels = len(model.attrs["labels"])
    overlap = model.attrs["window_overlap"]
    aligned = _tokenize(tokenizer, docs)
    n_shortened = 0
    for d, alignment in enumerate(aligned):
        aligned[d], cut = shorten_long_tokens(alignment, max(2, layout.room))
        n_shortened += cut
    if n_shortened:
        plural = "" if n_shortened == 1 else "s"
        warnings.warn(Warnings.NMW011.format(count=n_shortened, plural=plural, room=layout.room))
    plans: List[Tuple[int, WordpieceAlignment, Window, np.ndarray]] = []
    for d, alignment in enumerate(aligned):
        cum = np.concatenate([[0], np.cumsum(alignment.counts)])
        for window in plan_windows(alignment.counts, layout.room, overlap):
            plans.append((d, alignment, window, cum))
    n_rows = len(plans) * n_labels
    max_ctx = max((cum[w.end] - cum[w.start] for _, _, w, cum in plans), default=0)
    max_tokens = max((w.end - w.start for _, _, w, _ in plans), default=0)
    max_extra = max((len(p) + len(s) for p, s in zip(layout.prefix, layout.suffix)), default=0)
    length = int(max_ctx + max_extra)
    input_ids = np.full((n_rows, length), tokenizer.pad_token_id or 0, dtype=np.int64)
    attention = np.zeros((n_rows, length), dtype=np.int64)
    types = np.zeros((n_rows, length), dtype=np.int64)
    start_index = np.zeros((n_rows, max_tokens), dtype=np.int64)
    end_index = np.zeros((n_rows, max_tokens), dtype=np.int64)
    token_mask = np.zeros((n_rows, max_tokens), dtype=bool)
    meta = np.zeros((5, n_rows), dtype=np.int64)  # doc, label, offset, core_start, core_end
    with_gold = gold is not None
    gold_start = np.zeros((n_rows, max_tokens), dtype=bool) if with_gold else None
    gold_end = np.zeros((n_rows, max_tokens), dtype=bool) if with_gold else None
    gold_pairs: List[np.ndarray] = []
    unlearnable = 0
    for p, (d, alignment, window, cum) in enumerate(plans):
        ctx = alignment.ids[cum[window.start] : cum[window.end]]
        first = alignment.first[window.start : window.end]
        last = alignment.last[window.start : window.end]
        has_wp = first >= 0
        n_tok = window.end - window.start
        base = p * n_labels
        for k in range(n_labels):
            r = base + k
            pre, suf = layout.prefix[k], layout.suffix[k]
            n_pre, n_ctx = len(pre), len(ctx)
            input_ids[r, :n_pre] = pre
            input_ids[r, n_pre : n_pre + n_ctx] = ctx
            input_ids[r, n_pre + n_ctx : n_pre + n_ctx + len(suf)] = suf
            attention[r, : n_pre + n_ctx + len(suf)] = 1
            types[r, :n_pre] = layout.prefix_types[k]
            types[r, n_pre : n_pre + n_ctx] = layout.context_type
            types[r, n_pre + n_ctx : n_pre + n_ctx + len(suf)] = layout.suffix_types[k]
            shift = n_pre - cum[window.start]
            start_index[r, :n_tok] = np.where(has_wp, first + shift, 0)
            end_index[r, :n_tok] = np.where(has_wp, last + shift, 0)
        token_mask[base : base + n_labels, :n_tok] = has_wp
        meta[:, base : base + n_labels] = np.array(
            [[d], [0], [window.start], [window.core_start], [window.core_end]]
        )
        meta[1, base : base + n_labels] = np.arange(n_labels)
        if with_gold:
            # boundaries inside the window are taught even when their span crosses its edge;
            # the match head learns the spans that lie wholly inside
            g = gold[d]
            starts_in = (g[:, 0] >= window.start) & (g[:, 0] < window.end)
            ends_in = (g[:, 1] > window.start) & (g[:, 1] <= window.end)
            gold_start[base + g[starts_in, 2], g[starts_in, 0] - window.start] = True
            gold_end[base + g[ends_in, 2], g[ends_in, 1] - 1 - window.start] = True
            g = g[starts_in & ends_in]
            owned = owned_by(g[:, 0], g[:, 1], window.core_start, window.core_end)
            learnable = (alignment.first[g[:, 0]] >= 0) & (alignment.first[g[:, 1] - 1] >= 0)
            unlearnable += int((owned & ~learnable).sum())
            rows = base + g[:, 2]
            i, j = g[:, 0] - window.start, g[:, 1] - 1 - window.start
            gold_pairs.append(np.stack([rows, i, j], axis=1))
    pairs = np.concatenate(gold_pairs) if gold_pairs else np.zeros((0, 3), dtype=np.int64)
    return MRCRows(
        input_ids,
        attention,
        types,
        start_index,
        end_index,
        token_mask,
        meta[0],
        meta[1],
        meta[2],
        meta[3],
        meta[4],
        gold_start,
        gold_end,
        pairs if with_gold else None,
        "token_type_ids" in tokenizer.model_input_names,
        unlearnable,
    )


def _tokenize(tokenizer: Any, docs: List[Doc]) -> List[WordpieceAlignment]:
    """Wordpieces of every doc's tokens, in one tokenizer call for the batch."""
    words = [[token.text for token in doc] for doc in docs]
    nonempty = [k for k, w in enumerate(words) if w]
    result = [align_wordpieces([], [], 0) for _ in docs]
    if not nonempty:
        return result
    encoded = tokenizer(
        [words[k] for k in nonempty],
        is_split_into_words=True,
        add_special_tokens=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )
    for n, k in enumerate(nonempty):
        result[k] = align_wordpieces(encoded["input_ids"][n], encoded.word_ids(n), len(words[k]))
    return result


def _heads_inputs(model: Model, X: Tuple[torch.Tensor, Dict[str, torch.Tensor]], is_train: bool):
    hidden, tensors = X
    hidden = hidden.detach().requires_grad_(is_train)

    def get_d_hidden(d_inputs: ArgsKwargs) -> torch.Tensor:
        return d_inputs.args[0]

    return ArgsKwargs(args=(hidden,), kwargs=tensors), get_d_hidden
