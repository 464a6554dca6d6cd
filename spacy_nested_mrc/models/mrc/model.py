"""The MRC query model as a thinc ``Model[SpanBatch, SpanOutput]``, with the machinery that
Multi-NER shares with it.

For every doc, window and label one sequence ``[CLS] question [SEP] context [SEP]`` goes through
the encoder; the heads of ``torch_module.MRCHeads`` score the context tokens. Packed, one
sequence ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]`` per doc, window and label group carries
every label's question. Sequences are built per batch (never for the corpus), and at most
``max_rows`` go through the encoder at once.
"""

import warnings
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from spacy.util import SimpleFrozenDict, registry
from thinc.api import (
    ArgsKwargs,
    Model,
    get_torch_default_device,
)
from torch import nn

from ...encoder.build import build_encoder, load_encoder
from ...encoder.hf import (
    encoder_has_weights,
    get_hidden_size,
    get_max_positions,
    get_tokenizer,
    to_device,
)
from ...encoder.passes import encode_by_length
from ...errors import Errors, Warnings
from ...runtime.precision import check_precision, resolve_precision
from ...types import CONTRACT, SETTINGS, ModelContract, SpanBatch, SpanOutput
from ...validation import (
    check_bool,
    check_choice,
    check_non_negative,
    check_positive,
    check_probability,
)
from ..wrapping import build_heads, heads_loss, needs_backprop, torch_module
from .decode import MATCH_CANDIDATES
from .layout import QueryLayout, query_layout
from .loss import LOSSES, MRCLoss
from .questions import QUERY_STYLES, make_questions
from .rows import MRCRows, build_rows
from .torch_module import MRCHeads, RowInputs

DEFAULT_PRESETS = ("genia", "ace2005", "conll03", "ontonotes")




@dataclass(frozen=True)
class Settings:
    """The settings the config governs even for a loaded pipeline (``attrs["settings"]``,
    never serialized: see ``spacy_nested_mrc.types``), so that ``spacy.load(path,
    config=...)`` can change them: the windows of a long doc, the rows of a pass, the span
    length limit. Each is the ``build_mrc_query_model`` argument of the same name."""

    max_length: int
    window_overlap: int
    context: int
    max_rows: int
    min_context: int
    max_span_length: int
    span_length_margin: int
    max_pass_tokens: int


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
    context: int = 0,
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
    max_match_pairs: int = 65536,
    max_pass_tokens: int = 1024,
    gradient_checkpointing: bool = False,
    heads_lr_scale: float = 10.0,
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = SimpleFrozenDict(),
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(use_fast=True),
    precision: str = "fp32",
) -> Model[SpanBatch, SpanOutput]:
    """Build the MRC query model (Li et al., 2020).

    encoder (str): a Hugging Face model: local folder or hub name (embedded copies are used
        when a package carries one, as for all-MiniLM-L6-v2).
    query_style (str): "natural", "pseudo" (label name) or "index" (label position).
    queries (Dict[str, str]): label -> question, over the built-in ones.
    queries_path (Optional[str]): a JSON file label -> question.
    query_presets (List[str]): built-in question sets searched in order.
    max_length (int): wordpieces per encoder sequence (capped at the encoder's limit).
    window_overlap (int): tokens shared by consecutive windows of a long doc (``context``
        0).
    context (int): wordpieces of the surrounding text the encoder reads on each side of
        the tokens it labels (``windows.plan_context_windows``). Each window labels whole
        sentences (the doc's own, or those the pipe finds: its ``split_sentences``) and
        reads up to ``context`` wordpieces beyond them, where nothing is learned or
        predicted; a doc read as one text gets windows labelling runs of about
        ``max_length - 2 * context`` wordpieces that overlap by the context, a span kept
        from the window that holds its centre. At most a quarter of the window is context.
        0: each sentence read alone, as a model trained on sentences saw its data (a doc
        read as one text: windows of the whole ``max_length`` that overlap by
        ``window_overlap`` tokens, whatever the sentences; docs/results.md, "Documents
        and context", measures what each reading costs).
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
    loss (str): "bce" or "dice" (Li et al.'s answer to the imbalance of boundary tokens);
        taken per encoder pass (``max_rows``): bce is then exactly the batch's, dice a ratio
        of sums per pass.
    dice_smooth (float): the smoothing term gamma of the dice loss.
    weight_start, weight_end, weight_match (float): per-head loss weights.
    per_label_loss (float): in [0, 1], the share of each head's loss taken per label (each
        label's loss over its own rows, averaged over the labels, as Multi-NER's tasks); the
        rest is pooled over all rows of a pass. Pooled, a dice loss is a ratio of sums that
        the frequent labels dominate: a rare label (GENIA's RNA) can go
        unpredicted at no cost. Per label only (1), every label weighs alike and the
        frequent ones lose (measured in docs/results.md).
    packed (bool): every label's question and the context in one sequence per window,
        ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]``; each label's heads read the context
        tokens modulated by the mean vector of its own question's wordpieces (FiLM). The
        encoder then runs once per (doc, window, label group), whatever the number of labels.
    min_context (int): packed: the fewest context wordpieces a window keeps beside the
        questions. Labels whose questions do not fit together with it are split into as few
        groups as fit (greedy, in label order), one sequence per window each (NMW012).
    separate_questions (bool): packed: the tokenizer's separator after every question; false
        puts one after the last only (``[CLS] q1 q2 ... qK [SEP] context [SEP]``), K - 1 fewer
        wordpieces a sequence.
    max_rows (int): most sequences per encoder pass; training batches are split to fit.
    max_match_pairs (int): in prediction, the most start-end pairs whose match vectors are
        computed at once (memory only: the scores are the same); a pass whose start and end
        heads let many pairs through (an untrained model, a long text) is scored in chunks.
        0: all at once.
    max_pass_tokens (int): in training, the most padded wordpieces (sequences x the longest
        of them) in one encoder call: a pass's sequences, sorted by length, go through the
        encoder in calls that fit, so one long sentence does not pad a whole batch to its
        length. The gradient is the same (the heads and the loss see the whole pass); what
        changes is memory and time (less padding computed). In prediction too: a pass's
        sequences go through the encoder sorted by length in calls of this many padded
        wordpieces, each cut to its longest sequence (``encoder.passes``), with the
        predictions of one call. 0: one call a pass.
    gradient_checkpointing (bool): in training, the encoder keeps only each layer's input for
        the backward pass and recomputes the rest there: the same gradient, for less memory
        (the activations of every row of a pass are alive until its backward pass; a
        per-label model has a row per label) and more time.
    heads_lr_scale (float): the heads (and FiLM, type attention) learn at this multiple of
        the training learn rate; the encoder at the rate itself.
    mixed_precision (bool): the older name of ``precision = "fp16"``: true means fp16 on a
        GPU where ``precision`` is left at "fp32".
    grad_scaler_config (dict): settings of the gradient scaler of fp16.
    tokenizer_config (dict): settings for the tokenizer's from_pretrained.
    precision (str): the arithmetic of the encoder and the heads, in training and
        prediction: "fp32", "bf16" (autocast; CPUs with bf16 arithmetic and GPUs) or "fp16"
        (GPU, with the gradient scaler); weights, losses and scores stay float32
        (``runtime.precision``).
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
    for setting in ("window_overlap", "context", "max_span_length", "match_widths",
                    "span_length_margin", "max_match_pairs", "max_pass_tokens"):
        check_positive(setting, settings[setting], allow_zero=True)
    check_bool("packed", settings["packed"])
    check_bool("separate_questions", settings["separate_questions"])
    check_non_negative("heads_lr_scale", settings["heads_lr_scale"])
    precision = resolve_precision(settings["precision"], settings["mixed_precision"])
    check_precision(precision)
    enc = build_encoder(
        precision=precision,
        grad_scaler_config=settings["grad_scaler_config"],
        gradient_checkpointing=settings["gradient_checkpointing"],
        max_pass_tokens=settings["max_pass_tokens"],
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
        max_match_pairs=settings["max_match_pairs"],
    )
    heads = build_heads(
        heads_module,
        _heads_inputs,
        precision=precision,
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
            CONTRACT: ModelContract(
                set_labels=set_labels,
                get_loss=heads_loss,
                decode_settings=DECODE_SETTINGS,
                after_load=after_load,
                learns_longest_entity=True,
            ),
            SETTINGS: Settings(**{f.name: settings[f.name] for f in fields(Settings)}),
            "encoder_name": settings["encoder"],
            "tokenizer_config": dict(settings["tokenizer_config"]),
            "query_settings": {
                "style": settings["query_style"],
                "queries": dict(settings["queries"]),
                "queries_path": settings["queries_path"],
                "presets": list(settings["query_presets"]),
            },
            "packed": settings["packed"],
            "separate_questions": settings["separate_questions"],
            "typed": typed,
            # learned at initialization: the longest training entity (set by the pipe) and
            # the span length limit it gives with max_span_length = 0
            "longest_entity": 0,
            "span_limit": 0,
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
    model.attrs["docs_per_pass"] = max(1, model.attrs[SETTINGS].max_rows // per_window)


def init(model: Model, X: Optional[SpanBatch] = None, Y: Any = None) -> Model:
    """Load the encoder's weights, size the heads and, with labels, plan the sequences."""
    encoder = model.get_ref("encoder")
    if not encoder_has_weights(encoder):
        encoder = load_encoder(model, model.attrs["encoder_name"], model.attrs["tokenizer_config"])
    heads_module = torch_module(model.get_ref("heads"))
    n_labels = len(model.attrs["labels"])
    heads_module.materialize(get_hidden_size(encoder), get_torch_default_device(), max(1, n_labels))
    longest = int(model.attrs["longest_entity"])
    if longest > 0:
        model.attrs["span_limit"] = longest + int(model.attrs[SETTINGS].span_length_margin)
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
                    min_context=model.attrs[SETTINGS].min_context,
                    groups=len(layout.groups),
                    details=details,
                )
            )
    return model


def set_span_limit(model: Model) -> None:
    """Give the heads the span length limit: ``max_span_length`` if set, else the one
    learned at initialization (``span_limit``; 0: none)."""
    limit = int(model.attrs[SETTINGS].max_span_length) or int(model.attrs.get("span_limit", 0))
    torch_module(model.get_ref("heads")).max_span_length = limit


def after_load(model: Model) -> None:
    """Derive what depends on the settings given at load: the passes and the span limit."""
    plan_passes(model)
    set_span_limit(model)


def plan_passes(model: Model) -> QueryLayout:
    """Set ``docs_per_pass`` from ``max_rows`` and the label groups of the current settings.
    RETURNS (QueryLayout): the layout of the sequences."""
    layout = layout_of(model)
    model.attrs["docs_per_pass"] = max(1, model.attrs[SETTINGS].max_rows // len(layout.groups))
    return layout


def check_initialized(model: Model) -> None:
    """Raise NME001 unless the model has its labels and its encoder's weights."""
    if not model.attrs["labels"] or not encoder_has_weights(model.get_ref("encoder")):
        raise ValueError(Errors.NME001.format(name=model.name))


def forward(model: Model, batch: SpanBatch, is_train: bool):
    """Training: the heads' scores of the batch and their gold (``SpanOutput.scored``), the
    backprop taking the loss's gradient with respect to them (``heads_loss``); prediction:
    scored spans, ``max_rows`` at a time."""
    check_initialized(model)
    if is_train:
        rows = build_rows(
            model, layout_of(model), batch.docs, batch.gold, batch.unannotated, batch.starts()
        )
        if rows.unlearnable:
            n = rows.unlearnable
            warnings.warn(Warnings.NMW010.format(count=n, plural="" if n == 1 else "s"))
        if rows.n_rows == 0:
            return SpanOutput(), lambda d_scores: None
        hidden, backprop_encoder = encode_by_length(
            partial(model.get_ref("encoder"), is_train=True),
            rows.encoder_inputs(),
            model.attrs[SETTINGS].max_pass_tokens,
        )
        scored, backprop_heads = model.get_ref("heads")(
            (hidden, head_inputs(model, rows, True)), is_train
        )

        def backprop(d_scores: Tuple[torch.Tensor, ...]) -> None:
            if needs_backprop(scored):
                backprop_encoder(backprop_heads(d_scores))

        return SpanOutput(scored=scored), backprop
    output = SpanOutput(spans=[None] * len(batch.docs), scores=[None] * len(batch.docs))
    for chosen, rows, passes in predict_passes(model, batch):
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
    return output, lambda d_scores: None


def predict_passes(
    model: Model,
    batch: SpanBatch,
    heads_pass: Optional[Callable[[Model, torch.Tensor, RowInputs], Any]] = None,
) -> Iterator[Tuple[List[int], MRCRows, List[Tuple[int, MRCRows, Tuple[np.ndarray, ...]]]]]:
    """The encoder and heads passes of prediction.

    Docs of similar length share a group of at most ``docs_per_pass`` docs (so little of each
    pass is padding); a group's rows go through the encoder at most ``max_rows`` sequences at
    a time, in whole windows where the heads need all label rows of a window together
    (typed heads, packed sequences).

    batch (SpanBatch): the docs and the sentences each is read by.
    heads_pass (Optional[Callable]): what runs on each pass's encoder output and rows, given
        the heads layer (default: its ``predict``, the pairs and their probabilities).
    YIELDS (Tuple): per group, the doc indices, the group's rows and its passes, each as
        (first row, the pass's rows, the heads' outputs).
    """
    layout = layout_of(model)
    step = _rows_per_pass(model, layout)
    docs, starts = batch.docs, batch.starts()
    by_length = sorted(range(len(docs)), key=lambda k: len(docs[k]))
    for begin in range(0, len(by_length), model.attrs["docs_per_pass"]):
        chosen = by_length[begin : begin + model.attrs["docs_per_pass"]]
        rows = build_rows(
            model, layout, [docs[k] for k in chosen], None, starts=[starts[k] for k in chosen]
        )
        passes = []
        for low in range(0, rows.n_rows, step):  # a long doc has many rows
            part = rows.select(slice(low, low + step))
            hidden = model.get_ref("encoder").predict(part.encoder_inputs())
            inputs = head_inputs(model, part, False)
            heads = model.get_ref("heads")
            output = (heads_pass(heads, hidden, inputs) if heads_pass is not None
                      else heads.predict((hidden, inputs)))
            passes.append((low, part, output))
        yield chosen, rows, passes


def _rows_per_pass(model: Model, layout: QueryLayout) -> int:
    """Rows per prediction pass: ``max_rows`` sequences, in whole windows if need be."""
    if not (model.attrs["typed"] or layout.packed):
        return model.attrs[SETTINGS].max_rows
    windows = max(1, model.attrs[SETTINGS].max_rows // len(layout.groups))
    return windows * len(model.attrs["labels"])


def head_inputs(model: Model, rows: MRCRows, with_gold: bool) -> RowInputs:
    """What the heads read of some rows: their tensors, the number of labels and, in
    training a model with task weights, the weight of each label's task."""
    inputs = rows.head_inputs(with_gold)
    labels = model.attrs["labels"]
    inputs = inputs._replace(n_types=len(labels))
    weights = model.attrs.get("task_weights")
    if weights is not None and inputs.targets is not None:  # training: targets are given
        table = np.asarray([weights.get(label, 1.0) for label in labels], dtype=np.float32)
        inputs = inputs._replace(targets=inputs.targets._replace(
            row_label=to_device(rows.label), task_weights=to_device(table, torch.float32)))
    return inputs


def layout_of(model: Model) -> QueryLayout:
    """The layout of the sequences for the model's labels and current settings."""
    encoder = model.get_ref("encoder")
    tokenizer = get_tokenizer(encoder)
    max_length = min(model.attrs[SETTINGS].max_length, get_max_positions(encoder))
    labels = model.attrs["labels"]
    return query_layout(
        tokenizer,
        [model.attrs["questions"][label] for label in labels],
        labels,
        max_length,
        min_context=model.attrs[SETTINGS].min_context if model.attrs["packed"] else None,
        separate=model.attrs["separate_questions"],
    )


def _heads_inputs(model: Model, X: Tuple[torch.Tensor, RowInputs], is_train: bool):
    hidden, rows = X
    hidden = hidden.detach().requires_grad_(is_train)

    def get_d_hidden(d_inputs: ArgsKwargs) -> torch.Tensor:
        return d_inputs.args[0]

    return ArgsKwargs(args=(hidden, rows), kwargs={}), get_d_hidden
