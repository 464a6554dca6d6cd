"""The MRC query model as a thinc ``Model[SpanBatch, SpanOutput]``, with the machinery that
Multi-NER shares with it.

For every doc, window and label one sequence ``[CLS] question [SEP] context [SEP]`` goes through
the encoder; the heads of ``torch_module.MRCHeads`` score the context tokens. Packed, one
sequence ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]`` per doc, window and label group carries
every label's question. Sequences are built per batch (never for the corpus), and at most
``max_rows`` go through the encoder at once.
"""

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from spacy.tokens import Doc
from spacy.util import SimpleFrozenDict, registry
from thinc.api import (
    ArgsKwargs,
    Model,
    get_torch_default_device,
)
from torch import nn

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
from ...validation import (
    check_bool,
    check_choice,
    check_non_negative,
    check_positive,
    check_probability,
)
from ..wrapping import build_heads
from .decode import MATCH_CANDIDATES
from .loss import LOSSES, MRCLoss
from .questions import QUERY_STYLES, make_questions
from .torch_module import MRCHeads

DEFAULT_PRESETS = ("genia", "ace2005", "conll03", "ontonotes")


# the model's attrs that come from the config even when a saved model is loaded, so that
# ``spacy.load(path, config=...)`` can change them (the windows of a long doc, the rows of a
# pass); everything else in attrs (labels, questions) is learned and restored
CONFIG_ATTRS = (
    "max_length", "window_overlap", "max_rows", "min_context", "max_span_length",
    "span_length_margin",
)
# the prediction settings ``tune`` searches on dev (see ``spacy_nested_mrc.types``): the
# boundary thresholds decide which pairs the match head scores
DECODE_SETTINGS = {"gates": ["start_threshold", "end_threshold"], "score_cuts": []}


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
    match_widths: int = 16,
    dropout: float = 0.1,
    max_span_length: int = 0,
    span_length_margin: int = 2,
    start_threshold: float = 0.5,
    end_threshold: float = 0.5,
    boundary_prior: float = 0.02,
    loss: str = "dice",
    dice_smooth: float = 1.0,
    weight_start: float = 1.0,
    weight_end: float = 1.0,
    weight_match: float = 1.0,
    per_label_loss: float = 0.0,
    packed: bool = False,
    min_context: int = 64,
    separate_questions: bool = True,
    max_rows: int = 64,
    heads_lr_scale: float = 10.0,
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
    match_widths (int): N > 0: the match classifier also reads a learned vector of the
        span's width (1 .. N tokens, wider spans share the last), so it can learn which
        widths are entities; 0: start and end vectors only (the paper). Pipelines saved
        before the setting existed load with their width vectors at zero, which leaves
        their predictions unchanged.
    dropout (float): dropout in the heads.
    max_span_length (int): the most tokens a predicted span may have; 0: set at
        initialization to the longest training entity (in the pipeline's tokens) plus
        ``span_length_margin``, so that no span longer than any seen in training is
        predicted (saved with the model; pipelines saved before this setting have none).
    span_length_margin (int): tokens added to the longest training entity for the limit.
    start_threshold, end_threshold (float): boundary probabilities that open/close a span.
    boundary_prior (float): in [0, 1), the start and end heads' initial probability of a
        boundary (bias at its log-odds: untrained heads then propose few spans, and the
        rare positives do not start drowned in the negatives); 0: PyTorch's default init.
    loss (str): "bce" or "dice"; dice_smooth (float) is dice's smoothing.
    weight_start, weight_end, weight_match (float): per-head loss weights.
    per_label_loss (float): in [0, 1], the share of each head's loss taken per label (each
        label's loss over its own rows, averaged over the labels, as Multi-NER's tasks); the
        rest is pooled over all rows of a pass. Pooled, a dice loss is a ratio of sums that
        the frequent labels dominate: a rare label (GENIA's RNA, 3% of entities) can go
        unpredicted at no cost. Per label only (1), every label weighs alike and the
        frequent ones lose (bench/results/genia_full_cpu_minilm.md).
    packed (bool): every label's question and the context in one sequence per window,
        ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]``; each label's heads read the context
        tokens modulated by the mean vector of its own question's wordpieces (FiLM). The
        encoder then runs once per (doc, window, label group), whatever the number of labels.
    min_context (int): packed: the fewest context wordpieces a window keeps beside the
        questions. Labels whose questions do not fit together with it are split into as few
        groups as fit (greedy, in label order), one sequence per window each (NMW012).
    max_rows (int): most sequences per encoder pass; training batches are split to fit.
    heads_lr_scale (float): the heads (and FiLM, type attention) learn at this multiple of
        the training learn rate; the encoder at the rate itself.
    mixed_precision (bool): fp16 autocast on GPU; grad_scaler_config (dict) its scaler.
    tokenizer_config (dict): settings for the tokenizer's from_pretrained.
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    settings = dict(locals())
    check_probability("per_label_loss", settings["per_label_loss"])
    # every label's task at weight 1 when part of the loss is taken per label
    attrs = {"task_weights": {}} if settings["per_label_loss"] > 0 else None
    return build_query_model("mrc_query", settings, attrs=attrs)


def build_query_model(
    name: str,
    settings: Dict[str, Any],
    *,
    typed: bool = False,
    mixer: Optional[nn.Module] = None,
    attrs: Optional[Dict[str, Any]] = None,
) -> Model[SpanBatch, SpanOutput]:
    """Check the settings of an MRC-style architecture and build its model.

    name (str): the model's name.
    settings (Dict[str, Any]): every argument of ``build_mrc_query_model``, by name.
    typed (bool): one set of head parameters per label (see ``MRCHeads``).
    mixer (Optional[nn.Module]): mixes the label rows of each window before the heads.
    attrs (Optional[Dict[str, Any]]): further attrs of the model.
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    check_choice("query_style", settings["query_style"], QUERY_STYLES)
    check_choice("match_candidates", settings["match_candidates"], MATCH_CANDIDATES)
    check_choice("loss", settings["loss"], LOSSES)
    for setting in ("start_threshold", "end_threshold", "dropout"):
        check_probability(setting, settings[setting])
    check_probability("boundary_prior", settings["boundary_prior"], allow_one=False)
    for setting in ("max_length", "match_hidden", "max_rows", "min_context"):
        check_positive(setting, settings[setting])
    for setting in ("window_overlap", "max_span_length", "match_widths", "span_length_margin"):
        check_positive(setting, settings[setting], allow_zero=True)
    check_bool("packed", settings["packed"])
    check_bool("separate_questions", settings["separate_questions"])
    check_non_negative("heads_lr_scale", settings["heads_lr_scale"])
    mixed_precision = settings["mixed_precision"]
    enc = build_encoder(
        mixed_precision=mixed_precision, grad_scaler_config=settings["grad_scaler_config"]
    )
    heads_module = MRCHeads(
        match_hidden=settings["match_hidden"],
        dropout=settings["dropout"],
        candidates=settings["match_candidates"],
        max_span_length=settings["max_span_length"],
        start_threshold=settings["start_threshold"],
        end_threshold=settings["end_threshold"],
        boundary_prior=settings["boundary_prior"],
        match_widths=settings["match_widths"],
        loss=MRCLoss(
            settings["loss"],
            settings["dice_smooth"],
            settings["weight_start"],
            settings["weight_end"],
            settings["weight_match"],
            settings.get("per_label_loss", 1.0),
        ),
        typed=typed,
        packed=settings["packed"],
        mixer=mixer,
    )
    heads = build_heads(
        heads_module,
        _heads_inputs,
        mixed_precision=mixed_precision,
        grad_scaler_config=settings["grad_scaler_config"],
        lr_scale=settings["heads_lr_scale"],
    )
    return Model(
        name,
        forward,
        init=init,
        layers=[enc, heads],
        refs={"encoder": enc, "heads": heads},
        attrs={
            "labels": [],
            "questions": {},
            "docs_per_pass": settings["max_rows"],
            "set_labels": set_labels,
            "encoder_name": settings["encoder"],
            "tokenizer_config": dict(settings["tokenizer_config"]),
            "query_settings": {
                "style": settings["query_style"],
                "queries": dict(settings["queries"]),
                "queries_path": settings["queries_path"],
                "presets": list(settings["query_presets"]),
            },
            "max_length": settings["max_length"],
            "window_overlap": settings["window_overlap"],
            "max_rows": settings["max_rows"],
            "packed": settings["packed"],
            "min_context": settings["min_context"],
            "separate_questions": settings["separate_questions"],
            "typed": typed,
            "decode_settings": DECODE_SETTINGS,
            # runtime settings the config governs, not restored from a saved model
            "max_span_length": settings["max_span_length"],
            "span_length_margin": settings["span_length_margin"],
            # learned at initialization: the longest training entity (set by the pipe) and
            # the span length limit it gives with max_span_length = 0
            "longest_entity": 0,
            "span_limit": 0,
            "config_attrs": CONFIG_ATTRS,
            "after_load": after_load,
            **(attrs or {}),
        },
    )


def set_labels(model: Model, labels: Sequence[str]) -> None:
    """Fix the labels and their questions; raises NME002 for a label without a question and
    NME031 for task weights of unknown labels."""
    questions = make_questions(list(labels), **model.attrs["query_settings"])
    unknown = sorted(set(model.attrs.get("task_weights", {})) - set(labels))
    if unknown:
        plural = "" if len(unknown) == 1 else "s"
        raise ValueError(Errors.NME031.format(plural=plural, unknown=unknown, labels=list(labels)))
    model.attrs["labels"] = list(labels)
    model.attrs["questions"] = questions
    # packed: one sequence per window until init knows the label groups
    per_window = 1 if model.attrs["packed"] else max(1, len(labels))
    model.attrs["docs_per_pass"] = max(1, model.attrs["max_rows"] // per_window)


def init(model: Model, X: Optional[SpanBatch] = None, Y: Any = None) -> Model:
    """Load the encoder's weights, size the heads and, with labels, plan the sequences."""
    encoder = model.get_ref("encoder")
    if not encoder_has_weights(encoder):
        load_encoder(encoder, model.attrs["encoder_name"], model.attrs["tokenizer_config"])
    heads_module = model.get_ref("heads").shims[0]._model
    n_labels = len(model.attrs["labels"])
    heads_module.materialize(get_hidden_size(encoder), get_torch_default_device(), max(1, n_labels))
    longest = int(model.attrs["longest_entity"])
    if longest > 0:
        model.attrs["span_limit"] = longest + int(model.attrs["span_length_margin"])
    set_span_limit(model)
    if n_labels:
        layout = plan_passes(model)  # fails early when the questions leave no room
        if layout.packed and len(layout.groups) > 1:
            labels = model.attrs["labels"]
            details = "; ".join(
                f"group {g + 1}: {[labels[k] for k in group]}"
                for g, group in enumerate(layout.groups)
            )
            warnings.warn(
                Warnings.NMW012.format(
                    count=n_labels,
                    max_length=layout.max_length,
                    min_context=model.attrs["min_context"],
                    groups=len(layout.groups),
                    details=details,
                )
            )
    return model


def set_span_limit(model: Model) -> None:
    """Give the heads the span length limit: ``max_span_length`` if set, else the one
    learned at initialization (``span_limit``; 0: none)."""
    limit = int(model.attrs["max_span_length"]) or int(model.attrs.get("span_limit", 0))
    model.get_ref("heads").shims[0]._model.max_span_length = limit


def after_load(model: Model) -> None:
    """Derive what depends on the settings given at load: the passes and the span limit."""
    plan_passes(model)
    set_span_limit(model)


def plan_passes(model: Model) -> "QueryLayout":
    """Set ``docs_per_pass`` from ``max_rows`` and the label groups of the current settings.
    RETURNS (QueryLayout): the layout of the sequences."""
    layout = _layout(model)
    model.attrs["docs_per_pass"] = max(1, model.attrs["max_rows"] // len(layout.groups))
    return layout


def check_initialized(model: Model) -> None:
    """Raise NME001 unless the model has its labels and its encoder's weights."""
    if not model.attrs["labels"] or not encoder_has_weights(model.get_ref("encoder")):
        raise ValueError(Errors.NME001.format(name=model.name))


def forward(model: Model, batch: SpanBatch, is_train: bool):
    """Training: the loss of the batch; prediction: scored spans, ``max_rows`` at a time."""
    check_initialized(model)
    if is_train:
        rows = build_rows(model, _layout(model), batch.docs, batch.gold)
        if rows.unlearnable:
            n = rows.unlearnable
            warnings.warn(Warnings.NMW010.format(count=n, plural="" if n == 1 else "s"))
        if rows.n_rows == 0:
            return SpanOutput(loss=0.0), lambda d_loss: None
        hidden, backprop_encoder = model.get_ref("encoder")(rows.encoder_inputs(), is_train)
        loss, backprop_heads = model.get_ref("heads")(
            (hidden, head_inputs(model, rows, True)), is_train
        )

        def backprop(d_loss: float) -> None:
            backprop_encoder(backprop_heads(d_loss))

        return SpanOutput(loss=loss), backprop
    output = SpanOutput(spans=[None] * len(batch.docs), scores=[None] * len(batch.docs))
    for chosen, rows, passes in predict_passes(model, batch.docs):
        found_pairs, found_scores = [np.zeros((0, 3), dtype=np.int64)], [np.zeros(0, np.float32)]
        for low, _, (pairs, prob, _, _) in passes:
            pairs[:, 0] += low
            found_pairs.append(pairs)
            found_scores.append(prob)
        spans, scores = rows.to_doc_spans(
            np.concatenate(found_pairs), np.concatenate(found_scores), len(chosen)
        )
        for n, k in enumerate(chosen):
            output.spans[k], output.scores[k] = spans[n], scores[n]
    return output, lambda d_loss: None


def predict_passes(
    model: Model, docs: List[Doc], **options: Any
) -> Iterator[Tuple[List[int], "MRCRows", List[Tuple[int, "MRCRows", Tuple[np.ndarray, ...]]]]]:
    """The encoder and heads passes of prediction.

    Docs of similar length share a group of at most ``docs_per_pass`` docs (so little of each
    pass is padding); a group's rows go through the encoder at most ``max_rows`` sequences at
    a time, in whole windows where the heads need all label rows of a window together
    (typed heads, packed sequences).

    docs (List[Doc]): the docs.
    options: further keyword inputs of the heads (e.g. ``return_attention=True``).
    YIELDS (Tuple): per group, the doc indices, the group's rows and its passes, each as
        (first row, the pass's rows, the heads' outputs).
    """
    layout = _layout(model)
    step = _rows_per_pass(model, layout)
    by_length = sorted(range(len(docs)), key=lambda k: len(docs[k]))
    for begin in range(0, len(by_length), model.attrs["docs_per_pass"]):
        chosen = by_length[begin : begin + model.attrs["docs_per_pass"]]
        rows = build_rows(model, layout, [docs[k] for k in chosen], None)
        passes = []
        for low in range(0, rows.n_rows, step):  # a long doc has many rows
            part = rows.select(slice(low, low + step))
            hidden = model.get_ref("encoder").predict(part.encoder_inputs())
            inputs = {**head_inputs(model, part, False), **options}
            passes.append((low, part, model.get_ref("heads").predict((hidden, inputs))))
        yield chosen, rows, passes


def _rows_per_pass(model: Model, layout: "QueryLayout") -> int:
    """Rows per prediction pass: ``max_rows`` sequences, in whole windows if need be."""
    if not (model.attrs["typed"] or layout.packed):
        return model.attrs["max_rows"]
    windows = max(1, model.attrs["max_rows"] // len(layout.groups))
    return windows * len(model.attrs["labels"])


def head_inputs(model: Model, rows: "MRCRows", with_gold: bool) -> Dict[str, Any]:
    """The keyword inputs of the heads for some rows: their tensors, the number of labels
    and, in training a model with task weights, the weight of each label's task."""
    inputs: Dict[str, Any] = rows.head_inputs(with_gold)
    labels = model.attrs["labels"]
    inputs["n_types"] = len(labels)
    weights = model.attrs.get("task_weights")
    if with_gold and weights is not None:
        table = np.asarray([weights.get(label, 1.0) for label in labels], dtype=np.float32)
        inputs["task_weights"] = to_device(table, torch.float32)
        inputs["row_label"] = to_device(rows.label)
    return inputs


@dataclass
class QueryLayout:
    """How the sequences are laid out around the context: one sequence kind per label
    (``[CLS] question [SEP] context [SEP]``), or packed, one per label group
    (``[CLS] q1 [SEP] ... qk [SEP] context [SEP]``).

    prefix (List[np.ndarray]): per kind, the ids before the context.
    suffix (List[np.ndarray]): per kind, the ids after it ([SEP]).
    prefix_types, suffix_types (List[np.ndarray]): their token type ids.
    context_type (int): the token type id of the context.
    room (int): context wordpieces that fit in one window with the longest prefix and suffix.
    groups (List[List[int]]): per kind, its label ids (contiguous, in label order).
    question_spans (List[np.ndarray]): per kind, [n, 2] the wordpiece range [start, end) of
        each of its questions in the prefix.
    packed (bool): whether the sequences are packed.
    max_length (int): wordpieces per sequence.
    """

    prefix: List[np.ndarray]
    suffix: List[np.ndarray]
    prefix_types: List[np.ndarray]
    suffix_types: List[np.ndarray]
    context_type: int
    room: int
    groups: List[List[int]] = field(default_factory=list)
    question_spans: List[np.ndarray] = field(default_factory=list)
    packed: bool = False
    max_length: int = 0


def _layout(model: Model) -> QueryLayout:
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    max_length = min(model.attrs["max_length"], get_max_positions(model.get_ref("encoder")))
    labels = model.attrs["labels"]
    return query_layout(
        tokenizer,
        [model.attrs["questions"][label] for label in labels],
        labels,
        max_length,
        min_context=model.attrs["min_context"] if model.attrs["packed"] else None,
        separate=model.attrs["separate_questions"],
    )


@dataclass
class PairTemplate:
    """The special tokens a tokenizer puts around a pair of sequences (A, B):
    ``head A middle B tail``, with their token type ids and those of A and B."""

    head: List[int]
    middle: List[int]
    tail: List[int]
    head_types: List[int]
    middle_types: List[int]
    tail_types: List[int]
    first_type: int
    second_type: int

    @classmethod
    def of(cls, tokenizer: Any) -> "PairTemplate":
        """The tokenizer's own pair template, read with two sentinel ids."""
        first, second = -7, -8
        seq = tokenizer.build_inputs_with_special_tokens([first], [second])
        types = tokenizer.create_token_type_ids_from_sequences([first], [second])
        i, j = seq.index(first), seq.index(second)
        return cls(
            head=seq[:i],
            middle=seq[i + 1 : j],
            tail=seq[j + 1 :],
            head_types=types[:i],
            middle_types=types[i + 1 : j],
            tail_types=types[j + 1 :],
            first_type=types[i],
            second_type=types[j],
        )

    def prefix(
        self, questions: List[List[int]], separate: bool = True
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids before the context for some questions, ``head q1 middle ... qk middle``
        (one question: the tokenizer's own pair; more: joined by its pair separator), or
        without ``separate`` ``head q1 ... qk middle``.

        RETURNS (Tuple[np.ndarray, np.ndarray, np.ndarray]): ids, token type ids, and [k, 2]
            the range [start, end) of each question.
        """
        ids, types, spans = list(self.head), list(self.head_types), []
        for n, question in enumerate(questions, 1):
            spans.append((len(ids), len(ids) + len(question)))
            ids += question
            types += [self.first_type] * len(question)
            if separate or n == len(questions):
                ids += self.middle
                types += self.middle_types
        spans_array = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        return np.asarray(ids, np.int64), np.asarray(types, np.int64), spans_array


def query_layout(
    tokenizer: Any,
    questions: List[str],
    labels: List[str],
    max_length: int,
    min_context: Optional[int] = None,
    separate: bool = True,
) -> QueryLayout:
    """Lay out the sequences for any tokenizer's special tokens: ``[CLS] question [SEP] context
    [SEP]`` per label, or with ``min_context`` packed, ``[CLS] q1 [SEP] ... qk [SEP] context
    [SEP]`` per group of labels.

    Packed, labels join the current group (in label order) while its questions leave at least
    ``min_context`` wordpieces for the context; a label whose question alone leaves less gets
    a group of its own. Without ``separate``, a group's questions follow each other with no
    separator between them (``[CLS] q1 ... qk [SEP] context [SEP]``).
    RETURNS (QueryLayout): the layout; raises NME008 when a prefix leaves no room at all.
    """
    template = PairTemplate.of(tokenizer)
    q_ids = [tokenizer(question, add_special_tokens=False)["input_ids"] for question in questions]
    extra = len(template.tail)
    groups: List[List[int]] = [[k] for k in range(len(questions))]
    if min_context is not None and questions:
        groups = [[0]]
        for k in range(1, len(questions)):
            together = [q_ids[i] for i in groups[-1]] + [q_ids[k]]
            if len(template.prefix(together, separate)[0]) + extra + min_context <= max_length:
                groups[-1].append(k)
            else:
                groups.append([k])
    layout = QueryLayout(
        [], [], [], [], template.second_type, 0, groups, [], min_context is not None, max_length
    )
    overhead, longest = 0, []
    for group in groups:
        ids, types, spans = template.prefix([q_ids[k] for k in group], separate)
        layout.prefix.append(ids)
        layout.prefix_types.append(types)
        layout.question_spans.append(spans)
        layout.suffix.append(np.asarray(template.tail, dtype=np.int64))
        layout.suffix_types.append(np.asarray(template.tail_types, dtype=np.int64))
        if len(ids) + extra > overhead:
            overhead, longest = len(ids) + extra, [labels[k] for k in group]
    layout.room = max_length - overhead
    if layout.room < 1:
        raise ValueError(
            Errors.NME008.format(labels=longest, needed=overhead, max_length=max_length)
        )
    return layout


@dataclass
class MRCRows:
    """The encoder sequences of a batch and the rows the heads score: one row per (doc,
    window, label). Unpacked, row r is sequence r; packed, the rows of a (doc, window, label
    group) share one sequence.

    input_ids, attention_mask, token_type_ids (np.ndarray): [S, L], the sequences.
    start_index, end_index (np.ndarray): [R, T] wordpiece of each window token's start/end,
        in the row's sequence.
    token_mask (np.ndarray): [R, T] bool, tokens that exist and have wordpieces.
    doc, label, offset, core_start, core_end (np.ndarray): [R] where each row comes from.
    gold_start, gold_end (Optional[np.ndarray]): [R, T] bool; gold_pairs [G, 3] (row, i, j).
    use_token_types (bool): whether the encoder takes token type ids.
    unlearnable (int): gold spans starting or ending on a token without wordpieces.
    sequence (Optional[np.ndarray]): [R] the sequence of each row (packed; else None).
    slot (Optional[np.ndarray]): [R] the position of the row's question in its sequence.
    question_start, question_end (Optional[np.ndarray]): [S, Q] the wordpiece range of each
        question of a sequence (packed).
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
    sequence: Optional[np.ndarray] = None
    slot: Optional[np.ndarray] = None
    question_start: Optional[np.ndarray] = None
    question_end: Optional[np.ndarray] = None

    @property
    def n_rows(self) -> int:
        return len(self.doc)

    @property
    def n_sequences(self) -> int:
        return len(self.input_ids)

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
        if self.sequence is not None:
            assert self.question_start is not None and self.question_end is not None
            positions = np.arange(self.input_ids.shape[1])
            inside = (positions >= self.question_start[:, :, None]) & (
                positions < self.question_end[:, :, None]
            )  # [S, Q, L]
            pool = inside / np.maximum(inside.sum(axis=-1, keepdims=True), 1)
            tensors["sequence"] = to_device(self.sequence)
            tensors["slot"] = to_device(self.slot)
            tensors["question_pool"] = to_device(pool, torch.float32)
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
        """The rows of a slice with their sequences, without the padding columns they do not
        need (prediction). Packed, the slice must hold whole sequences' rows."""
        sequence = slot = q_start = q_end = None
        if self.sequence is None:
            seqs = rows
        else:
            used = self.sequence[rows]
            first = int(used.min()) if len(used) else 0
            seqs = slice(first, int(used.max(initial=first - 1)) + 1)
            sequence, slot = used - first, self.slot[rows]
            q_start, q_end = self.question_start[seqs], self.question_end[seqs]
        length = max(1, int(self.attention_mask[seqs].sum(axis=1).max(initial=0)))
        return MRCRows(
            self.input_ids[seqs, :length],
            self.attention_mask[seqs, :length],
            self.token_type_ids[seqs, :length],
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
            0,
            sequence,
            slot,
            q_start,
            q_end,
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
    """Tokenize the docs once and expand them into sequences per (doc, window, sequence kind)
    and rows per (doc, window, label), label-minor."""
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    n_labels = len(model.attrs["labels"])
    n_kinds = len(layout.groups)
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
    n_seqs, n_rows = len(plans) * n_kinds, len(plans) * n_labels
    max_ctx = max((cum[w.end] - cum[w.start] for _, _, w, cum in plans), default=0)
    max_tokens = max((w.end - w.start for _, _, w, _ in plans), default=0)
    max_extra = max((len(p) + len(s) for p, s in zip(layout.prefix, layout.suffix)), default=0)
    length = int(max_ctx + max_extra)
    input_ids = np.full((n_seqs, length), tokenizer.pad_token_id or 0, dtype=np.int64)
    attention = np.zeros((n_seqs, length), dtype=np.int64)
    types = np.zeros((n_seqs, length), dtype=np.int64)
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
        for g, group in enumerate(layout.groups):
            s = p * n_kinds + g
            pre, suf = layout.prefix[g], layout.suffix[g]
            n_pre, n_ctx = len(pre), len(ctx)
            input_ids[s, :n_pre] = pre
            input_ids[s, n_pre : n_pre + n_ctx] = ctx
            input_ids[s, n_pre + n_ctx : n_pre + n_ctx + len(suf)] = suf
            attention[s, : n_pre + n_ctx + len(suf)] = 1
            types[s, :n_pre] = layout.prefix_types[g]
            types[s, n_pre : n_pre + n_ctx] = layout.context_type
            types[s, n_pre + n_ctx : n_pre + n_ctx + len(suf)] = layout.suffix_types[g]
            shift = n_pre - cum[window.start]
            rows = base + np.asarray(group)
            start_index[rows, :n_tok] = np.where(has_wp, first + shift, 0)
            end_index[rows, :n_tok] = np.where(has_wp, last + shift, 0)
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
    result = MRCRows(
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
    if layout.packed:
        _add_packing(result, layout, len(plans))
    return result


def _add_packing(rows: MRCRows, layout: QueryLayout, n_windows: int) -> None:
    """Point the rows of packed sequences to their sequence and question slot."""
    kind = np.concatenate([np.full(len(group), g) for g, group in enumerate(layout.groups)])
    slot = np.concatenate([np.arange(len(group)) for group in layout.groups])
    rows.sequence = (np.arange(n_windows)[:, None] * len(layout.groups) + kind).reshape(-1)
    rows.slot = np.tile(slot, n_windows)
    n_slots = max(len(group) for group in layout.groups)
    spans = np.zeros((len(layout.groups), n_slots, 2), dtype=np.int64)
    for g, question_spans in enumerate(layout.question_spans):
        spans[g, : len(question_spans)] = question_spans
    rows.question_start = np.tile(spans[:, :, 0], (n_windows, 1))
    rows.question_end = np.tile(spans[:, :, 1], (n_windows, 1))


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


def _heads_inputs(model: Model, X: Tuple[torch.Tensor, Dict[str, Any]], is_train: bool):
    hidden, tensors = X
    hidden = hidden.detach().requires_grad_(is_train)

    def get_d_hidden(d_inputs: ArgsKwargs) -> torch.Tensor:
        return d_inputs.args[0]

    return ArgsKwargs(args=(hidden,), kwargs=tensors), get_d_hidden
