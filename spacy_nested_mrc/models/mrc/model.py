"""The MRC query model as a thinc ``Model[SpanBatch, SpanOutput]``, with the machinery that
Multi-NER shares with it.

For every doc, window and label one sequence ``[CLS] question [SEP] context [SEP]`` goes through
the encoder; the heads of ``torch_module.MRCHeads`` score the context tokens. Packed, one
sequence ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]`` per doc, window and label group carries
every label's question. Sequences are built per batch (never for the corpus), and at most
``max_rows_per_pass`` go through the encoder at once.
"""

import warnings
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from spacy.util import registry
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
from ...errors import Errors, Warnings
from ...types import CONTRACT, SETTINGS, ModelContract, SpanBatch, SpanOutput
from ...validation import (
    check_probability,
)
from ..wrapping import build_heads, heads_loss, needs_backprop, torch_module
from .blocks import (
    MRCDecoder,
    MRCHeadsSettings,
    QueryBlocks,
    QueryEncoder,
    QueryWindows,
    Questions,
)
from .layout import QueryLayout, query_layout
from .loss import MRCLoss
from .questions import make_questions
from .rows import MRCRows, build_rows, reads_packed, trains_packed
from .torch_module import MRCHeads, RowInputs

# the prediction settings ``tune`` searches on dev (see ``spacy_nested_mrc.types``), by
# their path in the model's config: the boundary thresholds decide which pairs the match
# head scores
DECODE_SETTINGS = {"gates": ["decoder.start_threshold", "decoder.end_threshold"],
                   "score_cuts": []}


@registry.architectures("spacy-nested-mrc.MRCQuery.v2")
def build_mrc_query_model(
    encoder: QueryEncoder,
    questions: Questions,
    windows: QueryWindows,
    heads: MRCHeadsSettings,
    loss: MRCLoss,
    decoder: MRCDecoder,
    per_label_loss: float = 0.5,
) -> Model[SpanBatch, SpanOutput]:
    """Build the MRC query model (Li et al., 2020).

    encoder (QueryEncoder): the encoder and how it runs
        (``spacy-nested-mrc.QueryEncoder.v1``).
    questions (Questions): the question of each label and their layout: packed (every
        label's question in one sequence per window) or one sequence per label (the paper)
        (``spacy-nested-mrc.Questions.v1``).
    windows (QueryWindows): how a text is cut into windows
        (``spacy-nested-mrc.QueryWindows.v1``).
    heads (MRCHeadsSettings): the start, end and match heads
        (``spacy-nested-mrc.MRCHeads.v1``).
    loss (MRCLoss): their loss (``spacy-nested-mrc.MRCLoss.v1``).
    decoder (MRCDecoder): from scores to spans (``spacy-nested-mrc.MRCDecoder.v1``).
    per_label_loss (float): in [0, 1], the share of each head's loss taken per label (each
        label's loss over its own rows, averaged over the labels, as Multi-NER's tasks); the
        rest is pooled over all rows of a pass. Pooled, a dice loss is a ratio of sums that
        the frequent labels dominate: a rare label (GENIA's RNA) can go
        unpredicted at no cost. Per label only (1), every label weighs alike and the
        frequent ones lose (measured in docs/results.md).
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    check_probability("per_label_loss", per_label_loss)
    # every label's task at weight 1 when part of the loss is taken per label
    attrs = {"task_weights": {}} if per_label_loss > 0 else None
    blocks = QueryBlocks(encoder, questions, windows, heads,
                         replace(loss, per_label=per_label_loss), decoder)
    return build_query_model("mrc_query", blocks, attrs=attrs)


def build_query_model(
    name: str,
    blocks: QueryBlocks,
    *,
    typed: bool = False,
    mixer: Optional[nn.Module] = None,
    attrs: Optional[Dict[str, Any]] = None,
) -> Model[SpanBatch, SpanOutput]:
    """Compose the model of an MRC-style architecture from its blocks.

    name (str): the model's name.
    blocks (QueryBlocks): the parts of every block, kept by the model as they are; the
        loss with its share taken per label (``MRCLoss.per_label``) set.
    typed (bool): one set of head parameters per label (see ``MRCHeads``).
    mixer (Optional[nn.Module]): mixes the label rows of each window before the heads.
    attrs (Optional[Dict[str, Any]]): further attrs of the model.
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    enc_settings, questions = blocks.encoder, blocks.questions
    heads_settings, decoder = blocks.heads, blocks.decoder
    precision = enc_settings.precision
    enc = build_encoder(
        precision=precision,
        grad_scaler_config=enc_settings.grad_scaler_config,
        gradient_checkpointing=enc_settings.gradient_checkpointing,
        max_pass_tokens=enc_settings.max_pass_tokens,
        attention=enc_settings.attention,
        freeze_word_embeddings=enc_settings.freeze_word_embeddings,
    )
    heads_module = MRCHeads(
        heads_settings,
        decoder=decoder,
        loss=blocks.loss,
        typed=typed,
        packed=questions.packed,
        mixer=mixer,
    )
    heads = build_heads(
        heads_module,
        _heads_inputs,
        precision=precision,
        grad_scaler_config=enc_settings.grad_scaler_config,
        lr_scale=heads_settings.lr_scale,
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
            "docs_per_pass": enc_settings.max_rows_per_pass,
            CONTRACT: ModelContract(
                set_labels=set_labels,
                get_loss=heads_loss,
                decode_settings=DECODE_SETTINGS,
                after_load=after_load,
                set_longest_entity=set_longest_entity,
                relabel=None if typed else relabel,
                ask=ask,
            ),
            SETTINGS: blocks,
            "query_settings": {
                "style": questions.style,
                "queries": dict(questions.queries),
                "queries_path": questions.queries_path,
                "presets": list(questions.presets),
            },
            "typed": typed,
            # learned at initialization: the longest training entity (the pipe gives it,
            # ``set_longest_entity``) and the span length limit it gives with
            # max_span_length = 0
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
    per_window = 1 if _blocks(model).questions.packed else max(1, len(labels))
    model.attrs["docs_per_pass"] = max(1, _blocks(model).encoder.max_rows_per_pass // per_window)


def ask(model: Model, label: str, question: str) -> None:
    """Give ``label`` its question, over the config's ``queries`` and the presets, before
    initialization (``set_labels`` reads it)."""
    model.attrs["query_settings"]["queries"][label] = question


def relabel(model: Model, labels: Sequence[str], questions: Dict[str, str]) -> None:
    """Give a trained model a new label set (its heads are shared by every label): each
    label keeps the question it had, unless ``questions`` gives one (or, with index
    questions, takes its new position); a new label needs a question from ``questions``,
    the config's ``queries`` or a preset (NME002)."""
    settings = dict(model.attrs["query_settings"])
    queries = dict(settings["queries"])
    if settings["style"] != "index":
        queries = {**model.attrs["questions"], **queries}
    settings["queries"] = {**queries, **questions}
    kept = {key: model.attrs[key]
            for key in ("query_settings", "labels", "questions", "docs_per_pass")}
    model.attrs["query_settings"] = settings
    try:
        set_labels(model, labels)
        plan_passes(model)  # fails when the questions leave no room
    except ValueError:
        for key, value in kept.items():
            model.attrs[key] = value
        raise


def init(model: Model, X: Optional[SpanBatch] = None, Y: Any = None) -> Model:
    """Load the encoder's weights, size the heads and, with labels, plan the sequences."""
    encoder = model.get_ref("encoder")
    if not encoder_has_weights(encoder):
        settings = _blocks(model).encoder
        encoder = load_encoder(model, settings.name, settings.tokenizer_config)
    heads_module = torch_module(model.get_ref("heads"))
    n_labels = len(model.attrs["labels"])
    heads_module.materialize(get_hidden_size(encoder), get_torch_default_device(), max(1, n_labels))
    learned = _blocks(model).decoder.learned_limit(int(model.attrs["longest_entity"]))
    if learned > 0:
        model.attrs["span_limit"] = learned
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
                    min_context=_blocks(model).windows.min_context_wordpieces,
                    groups=len(layout.groups),
                    details=details,
                )
            )
    return model


def set_longest_entity(model: Model, longest: int) -> None:
    """Keep the longest training entity (tokens), from which ``init`` sets the span limit
    (``ModelContract.set_longest_entity``)."""
    model.attrs["longest_entity"] = int(longest)


def set_span_limit(model: Model) -> None:
    """Give the heads the span length limit: the decoder's ``max_span_length`` if set, else
    the one learned at initialization (``span_limit``; 0: none)."""
    heads = torch_module(model.get_ref("heads"))
    heads.max_span_length = heads.decoder.span_limit(int(model.attrs.get("span_limit", 0)))


def after_load(model: Model) -> None:
    """Derive what depends on the settings given at load: the passes and the span limit."""
    plan_passes(model)
    set_span_limit(model)


def plan_passes(model: Model) -> QueryLayout:
    """Set ``docs_per_pass`` from ``max_rows_per_pass`` and the label groups of the current
    settings.
    RETURNS (QueryLayout): the layout of the sequences."""
    layout = layout_of(model)
    per_pass = _blocks(model).encoder.max_rows_per_pass
    model.attrs["docs_per_pass"] = max(1, per_pass // len(layout.groups))
    return layout


def _blocks(model: Model) -> QueryBlocks:
    """RETURNS (QueryBlocks): the parts the model was built from (its config's)."""
    return model.attrs[SETTINGS]


def check_initialized(model: Model) -> None:
    """Raise NME001 unless the model has its labels and its encoder's weights."""
    if not model.attrs["labels"] or not encoder_has_weights(model.get_ref("encoder")):
        raise ValueError(Errors.NME001.format(name=model.name))


def forward(model: Model, batch: SpanBatch, is_train: bool):
    """Training: the heads' scores of the batch and their gold (``SpanOutput.scored``), the
    backprop taking the loss's gradient with respect to them (``heads_loss``); prediction:
    scored spans, ``max_rows_per_pass`` at a time."""
    check_initialized(model)
    if is_train:
        rows = build_rows(
            model, layout_of(model), batch.docs, batch.gold, batch.unannotated, batch.starts(),
            label_mask=batch.label_mask, layout_for=partial(layout_of, model),
            pack_sentences=trains_packed(model),
        )
        if rows.unlearnable:
            n = rows.unlearnable
            warnings.warn(Warnings.NMW010.format(count=n, plural="" if n == 1 else "s"))
        if rows.n_rows == 0:
            return SpanOutput(), lambda d_scores: None
        # the encoder layer runs the rows by length in calls of its max_pass_tokens
        hidden, backprop_encoder = model.get_ref("encoder")(rows.encoder_inputs(), is_train)
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
    pass is padding); a group's rows go through the encoder at most ``max_rows_per_pass``
    sequences at a time, in whole windows where the heads need all label rows of a window
    together (typed heads, packed sequences). Where the model ``reads_packed``, several
    sentences share a sequence, each read as alone (``build_rows``).

    batch (SpanBatch): the docs and the sentences each is read by.
    heads_pass (Optional[Callable]): what runs on each pass's encoder output and rows, given
        the heads layer (default: its ``predict``, the pairs and their probabilities).
    YIELDS (Tuple): per group, the doc indices, the group's rows and its passes, each as
        (first row, the pass's rows, the heads' outputs).
    """
    layout = layout_of(model)
    pack = reads_packed(model)
    per_pass = _sequences_per_pass(model, layout, pack)
    docs, starts = batch.docs, batch.starts()
    by_length = sorted(range(len(docs)), key=lambda k: len(docs[k]))
    for begin in range(0, len(by_length), model.attrs["docs_per_pass"]):
        chosen = by_length[begin : begin + model.attrs["docs_per_pass"]]
        rows = build_rows(
            model, layout, [docs[k] for k in chosen], None, starts=[starts[k] for k in chosen],
            pack_sentences=pack,
        )
        passes = []
        for low, high in rows.pass_bounds(per_pass):  # a long doc has many rows
            part = rows.select(slice(low, high))
            hidden = model.get_ref("encoder").predict(part.encoder_inputs())
            inputs = head_inputs(model, part, False)
            heads = model.get_ref("heads")
            output = (heads_pass(heads, hidden, inputs) if heads_pass is not None
                      else heads.predict((hidden, inputs)))
            passes.append((low, part, output))
        yield chosen, rows, passes


def _sequences_per_pass(model: Model, layout: QueryLayout, pack: bool) -> int:
    """Sequences per prediction pass: ``max_rows_per_pass``, in whole windows where the
    heads need a window's label rows together (typed heads, packed questions: a window has
    one sequence per label group) unless sentences are packed (``reads_packed``: the heads
    are not typed, and a window's rows may span sequences)."""
    per_pass = _blocks(model).encoder.max_rows_per_pass
    if pack or not (model.attrs["typed"] or layout.packed):
        return per_pass
    return max(1, per_pass // len(layout.groups)) * len(layout.groups)


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


def layout_of(model: Model, asked: Optional[Sequence[int]] = None) -> QueryLayout:
    """The layout of the sequences for the model's labels and current settings, or for some
    of them only.

    asked (Optional[Sequence[int]]): label ids, ascending: the layout of their questions only
        (those a text annotates), leaving the context the room of the full layout; None:
        every label.
    RETURNS (QueryLayout): the layout.
    """
    encoder = model.get_ref("encoder")
    tokenizer = get_tokenizer(encoder)
    windows, questions = _blocks(model).windows, _blocks(model).questions
    max_length = min(windows.window_wordpieces, get_max_positions(encoder))
    labels = model.attrs["labels"]
    room, label_ids = None, None
    if asked is not None:
        room, label_ids = layout_of(model).room, list(asked)
        labels = [labels[k] for k in label_ids]
    return query_layout(
        tokenizer,
        [model.attrs["questions"][label] for label in labels],
        labels,
        max_length,
        min_context=windows.min_context_wordpieces if questions.packed else None,
        separate=questions.separate,
        room=room,
        label_ids=label_ids,
    )


def _heads_inputs(model: Model, X: Tuple[torch.Tensor, RowInputs], is_train: bool):
    hidden, rows = X
    hidden = hidden.detach().requires_grad_(is_train)

    def get_d_hidden(d_inputs: ArgsKwargs) -> torch.Tensor:
        return d_inputs.args[0]

    return ArgsKwargs(args=(hidden, rows), kwargs={}), get_d_hidden
