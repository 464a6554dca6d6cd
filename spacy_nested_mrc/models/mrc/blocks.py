"""The blocks of the MRC family's configs (``MRCQuery.v2``, ``MultiNER.v2``): each block is a
registered function (``@misc``) that checks its settings and returns the part they make: the
window planner (``QueryWindows``: how a doc is cut into windows), the loss (``loss.MRCLoss``),
the decoder (``MRCDecoder``: thresholds and span limit), and the records of the encoder, the
questions and the heads, which the architectures build their layers from. The model keeps
the parts themselves (``QueryBlocks``, its ``attrs["settings"]``), never a copy of their
fields, so a config that names another registered function for a block (returning an object
of the same interface) changes the model. A setting's default is the one in its block's
signature, and nowhere else.

    [components.nested_mrc_ner.model.encoder]      what reads the sequences, and how
    [components.nested_mrc_ner.model.questions]    the question of each label, their layout
    [components.nested_mrc_ner.model.windows]      the windows of a long text
    [components.nested_mrc_ner.model.heads]        the start, end and match heads
    [components.nested_mrc_ner.model.loss]         their training loss
    [components.nested_mrc_ner.model.decoder]      from the heads' scores to spans
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.util import SimpleFrozenDict, registry

from ...encoder.hf import ATTENTIONS, DEFAULT_ATTENTION
from ...encoder.passes import (
    DEFAULT_FREEZE_WORD_EMBEDDINGS,
    DEFAULT_GRADIENT_CHECKPOINTING,
    DEFAULT_MAX_PASS_TOKENS,
)
from ...runtime.precision import (
    DEFAULT_GRAD_SCALER_CONFIG,
    DEFAULT_QUERY_ENCODER_PRECISION,
    check_precision,
)
from ...validation import (
    check_bool,
    check_choice,
    check_non_negative,
    check_parts,
    check_positive,
    check_probability,
    check_string,
)
from ...windows import Window, plan_context_windows, sentence_by_sentence
from .decode import MATCH_CANDIDATES, MRCDecoder
from .loss import LOSSES, MRCLoss
from .questions import QUERY_STYLES, check_preset

DEFAULT_PRESETS = ("genia", "ace2005", "conll03", "ontonotes")
# each block of the MRC family and the registered function that makes its part
BLOCK_FUNCTIONS: Dict[str, str] = {
    "encoder": "spacy-nested-mrc.QueryEncoder.v1",
    "questions": "spacy-nested-mrc.Questions.v1",
    "windows": "spacy-nested-mrc.QueryWindows.v1",
    "heads": "spacy-nested-mrc.MRCHeads.v1",
    "loss": "spacy-nested-mrc.MRCLoss.v1",
    "decoder": "spacy-nested-mrc.MRCDecoder.v1",
}


@dataclass(frozen=True)
class QueryEncoder:
    """The settings of ``spacy-nested-mrc.QueryEncoder.v1``."""

    name: str
    tokenizer_config: Dict[str, Any]
    max_rows_per_pass: int
    max_pass_tokens: int
    gradient_checkpointing: bool
    precision: str
    grad_scaler_config: Dict[str, Any]
    attention: str
    freeze_word_embeddings: bool


@registry.misc("spacy-nested-mrc.QueryEncoder.v1")
def configure_query_encoder(
    name: str = "sentence-transformers/all-MiniLM-L6-v2",
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(use_fast=True),
    max_rows_per_pass: int = 160,
    max_pass_tokens: int = DEFAULT_MAX_PASS_TOKENS,
    gradient_checkpointing: bool = DEFAULT_GRADIENT_CHECKPOINTING,
    precision: str = DEFAULT_QUERY_ENCODER_PRECISION,
    grad_scaler_config: Dict[str, Any] = DEFAULT_GRAD_SCALER_CONFIG,
    attention: str = DEFAULT_ATTENTION,
    freeze_word_embeddings: bool = DEFAULT_FREEZE_WORD_EMBEDDINGS,
) -> QueryEncoder:
    """The encoder of the MRC family and how it runs.

    name (str): a Hugging Face model: local folder or hub name (embedded copies are used
        when a package carries one, as for all-MiniLM-L6-v2).
    tokenizer_config (dict): settings for the tokenizer's from_pretrained.
    max_rows_per_pass (int): most sequences per encoder pass; training batches are split to
        fit. Where the heads need every row of a window together (Multi-NER's typed heads;
        packed questions read one window a sequence) a pass holds whole windows.
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
    precision (str): the arithmetic of the encoder and the heads, in training and
        prediction: "fp32", "bf16" (autocast; CPUs with bf16 arithmetic and GPUs), "fp16"
        (GPU, with the gradient scaler) or "auto" (bf16 where the device has it, else fp32:
        the factory's default); weights, losses and scores stay float32
        (``runtime.precision``).
    grad_scaler_config (dict): settings of the gradient scaler of fp16.
    attention (str): how the encoder computes its self-attention: "eager", "sdpa" (torch's
        scaled_dot_product_attention) or "auto" (eager on a CPU, where it is the faster, the
        model's own default on a GPU); the same numbers to rounding
        (``encoder.hf.attention_implementation``).
    freeze_word_embeddings (bool): in training, the encoder's word-embedding matrix is
        frozen: no gradient, no update (``encoder.passes.freeze_word_embeddings``), a
        cheaper step (for MiniLM half of the weights are that matrix); the rest of the
        encoder learns.
    RETURNS (QueryEncoder): the settings.
    """
    check_string("name", name)
    check_positive("max_rows_per_pass", max_rows_per_pass)
    check_positive("max_pass_tokens", max_pass_tokens, allow_zero=True)
    check_bool("gradient_checkpointing", gradient_checkpointing)
    check_precision(precision)
    check_choice("attention", attention, ATTENTIONS)
    check_bool("freeze_word_embeddings", freeze_word_embeddings)
    return QueryEncoder(name, dict(tokenizer_config), max_rows_per_pass, max_pass_tokens,
                        gradient_checkpointing, precision, dict(grad_scaler_config), attention,
                        freeze_word_embeddings)


@dataclass(frozen=True)
class Questions:
    """The settings of ``spacy-nested-mrc.Questions.v1``."""

    style: str
    queries: Dict[str, str]
    queries_path: Optional[str]
    presets: Tuple[str, ...]
    packed: bool
    separate: bool
    attend_to_text: bool = True


@registry.misc("spacy-nested-mrc.Questions.v1")
def configure_questions(
    style: str = "index",
    queries: Dict[str, str] = SimpleFrozenDict(),
    queries_path: Optional[str] = None,
    presets: Sequence[str] = DEFAULT_PRESETS,
    packed: bool = True,
    separate: bool = False,
    attend_to_text: bool = True,
) -> Questions:
    """The question of each label, and how the questions meet the text.

    style (str): "natural", "pseudo" (label name) or "index" (label position).
    queries (Dict[str, str]): label -> question, over the built-in ones.
    queries_path (Optional[str]): a JSON file label -> question.
    presets (List[str]): built-in question sets searched in order.
    packed (bool): every label's question and the context in one sequence per window,
        ``[CLS] q1 [SEP] ... qK [SEP] context [SEP]``; each label's heads read the context
        tokens modulated by the mean vector of its own question's wordpieces (FiLM). The
        encoder then runs once per (doc, window, label group), whatever the number of
        labels. False: one ``[CLS] question [SEP] context [SEP]`` per label (the paper).
    separate (bool): packed: the tokenizer's separator after every question
        (``[CLS] q1 [SEP] ... qK [SEP] context [SEP]``); false puts one after the last only
        (``[CLS] q1 q2 ... qK [SEP] context [SEP]``), K - 1 fewer wordpieces a sequence: with
        GENIA's five index questions, the same F1 on all of GENIA in one paired run
        (docs/results.md, "Index questions joined"). The natural-question configs keep the
        separators (not measured joined).
    attend_to_text (bool): whether the questions' wordpieces (and the separators around
        them) attend to the text, as in the paper; the text attends to the questions either
        way. False: the questions are read on their own, the same whatever the text, so one
        copy of them serves every sentence of a sequence (``windows.pack_wordpieces``, then
        also in training): sentence-by-sentence reading costs about what windows of several
        sentences cost, where each sentence otherwise carries its own copy of the questions
        (the cost of the long natural questions and of the per-label model; on MPNet, whose
        attention bias reads columns, each keeps its copy). It changes the model: a
        pipeline is trained and predicts with the same value (docs/results.md, "Questions
        read apart from the text", measures both). Needs an encoder that takes a mask per
        wordpiece (BERT, RoBERTa, XLM-R, MPNet, in PyTorch; NME025).
    RETURNS (Questions): the settings.
    """
    check_choice("style", style, QUERY_STYLES)
    for preset in presets:  # read in the natural style only, checked in every style
        check_preset(preset)
    check_bool("packed", packed)
    check_bool("separate", separate)
    check_bool("attend_to_text", attend_to_text)
    return Questions(style, dict(queries), queries_path, tuple(presets), packed, separate,
                     attend_to_text)


@dataclass(frozen=True)
class QueryWindows:
    """The window planner of ``spacy-nested-mrc.QueryWindows.v1``: how long an encoder
    sequence is, how a doc is cut into windows (``plan``), how many sentences share a
    sequence in prediction. A replacement needs these fields and ``plan``."""

    window_wordpieces: int
    overlap_tokens: int
    context_wordpieces: int
    min_context_wordpieces: int
    pack_wordpieces: int

    def plan(self, counts: np.ndarray, starts: Optional[np.ndarray], room: int) -> List[Window]:
        """The windows of one doc: each sentence alone (``context_wordpieces`` 0; a sentence
        longer than ``room`` in windows overlapping by ``overlap_tokens``) or with up to
        ``context_wordpieces`` of the text around it (``windows.plan_context_windows``).

        counts (np.ndarray): [N] wordpieces per token.
        starts (Optional[np.ndarray]): [S] the first token of each sentence; None: the doc
            as one text.
        room (int): wordpieces of text one sequence holds beside the questions.
        RETURNS (List[Window]): the windows in order.
        """
        if self.context_wordpieces > 0:
            return plan_context_windows(counts, starts, room, self.context_wordpieces)
        return sentence_by_sentence(counts, starts, room, self.overlap_tokens)


@registry.misc("spacy-nested-mrc.QueryWindows.v1")
def configure_query_windows(
    window_wordpieces: int = 256,
    overlap_tokens: int = 32,
    context_wordpieces: int = 0,
    min_context_wordpieces: int = 64,
    pack_wordpieces: int = 0,
) -> QueryWindows:
    """The windows a text is read in (``spacy_nested_mrc.windows``).

    window_wordpieces (int): wordpieces per encoder sequence, questions and separators
        included (capped at the encoder's limit).
    overlap_tokens (int): tokens shared by consecutive windows of a long text
        (``context_wordpieces`` 0).
    context_wordpieces (int): wordpieces of the surrounding text the encoder reads on each
        side of the tokens it labels (``windows.plan_context_windows``). Each window labels
        whole sentences (the doc's own, or those the pipe finds: its ``split_sentences``)
        and reads up to this many wordpieces beyond them, where nothing is learned or
        predicted; a doc read as one text gets windows labelling runs of about
        ``window_wordpieces - 2 * context_wordpieces`` wordpieces that overlap by the
        context, a span kept from the window that holds its centre. At most a quarter of
        the window is context. 0: each sentence read alone, as a model trained on sentences
        saw its data (a doc read as one text: windows of the whole room that overlap by
        ``overlap_tokens``, whatever the sentences; docs/results.md, "Documents and
        context", measures what each reading costs).
    min_context_wordpieces (int): packed questions: the fewest wordpieces of text a window
        keeps beside the questions. Labels whose questions do not fit together with it are
        split into as few groups as fit (greedy, in label order), one sequence per window
        each (NMW012).
    pack_wordpieces (int): where each sentence is read alone (``context_wordpieces`` 0),
        several sentences share one encoder sequence of up to this many wordpieces (at most
        ``window_wordpieces``; whole sentences, in order), each attending only to its
        questions and itself, its positions and token types restarting: the same spans and
        scores as one sentence a sequence (to float rounding), in fewer sequences. Each
        sentence carries its own copy of the questions, in prediction only; where the
        questions are read apart from the text (``questions.attend_to_text = false``), the
        sentences of a sequence share one copy of them, in training and prediction. The
        encoder computes attention across the whole sequence (masked), so a longer one
        costs more per wordpiece (bench/sentence_packing.py measures the trade). It applies
        to the MRC model whose encoder reads such rows (BERT, RoBERTa, XLM-R, MPNet; not
        through ONNX Runtime); Multi-NER and windows with context read one window a
        sequence. 0: one sentence (window) a sequence, the default: with a copy of the
        questions each, packing measured no faster than sentences alone in length-sorted
        passes on a CPU (docs/results.md).
    RETURNS (QueryWindows): the window planner.
    """
    check_positive("window_wordpieces", window_wordpieces)
    check_positive("overlap_tokens", overlap_tokens, allow_zero=True)
    check_positive("context_wordpieces", context_wordpieces, allow_zero=True)
    check_positive("min_context_wordpieces", min_context_wordpieces)
    check_positive("pack_wordpieces", pack_wordpieces, allow_zero=True)
    return QueryWindows(window_wordpieces, overlap_tokens, context_wordpieces,
                        min_context_wordpieces, pack_wordpieces)


@dataclass(frozen=True)
class MRCHeadsSettings:
    """The settings of ``spacy-nested-mrc.MRCHeads.v1``."""

    match_hidden: int
    match_widths: int
    match_candidates: str
    dropout: float
    boundary_prior: float
    lr_scale: float


@registry.misc("spacy-nested-mrc.MRCHeads.v1")
def configure_mrc_heads(
    match_hidden: int = 256,
    match_widths: int = 16,
    match_candidates: str = "pred_and_gold",
    dropout: float = 0.1,
    boundary_prior: float = 0.02,
    lr_scale: float = 10.0,
) -> MRCHeadsSettings:
    """The start, end and match heads (``torch_module.MRCHeads``).

    match_hidden (int): hidden width of the match classifier.
    match_widths (int): N > 0: the match classifier also reads a learned vector of the
        span's width (1 .. N tokens, wider spans share the last), so it can learn which
        widths are entities; 0: start and end vectors only (the paper). Pipelines saved
        before the setting existed load with their width vectors at zero, which leaves
        their predictions unchanged.
    match_candidates (str): training pairs of the match head: all | gold | pred_and_gold.
    dropout (float): dropout in the heads (and in Multi-NER's type attention).
    boundary_prior (float): in [0, 1), the start and end heads' initial probability of a
        boundary (bias at its log-odds: untrained heads then propose few spans, and the
        rare positives do not start drowned in the negatives); 0: PyTorch's default init.
    lr_scale (float): the heads (and FiLM, type attention) learn at this multiple of the
        training learn rate; the encoder at the rate itself.
    RETURNS (MRCHeadsSettings): the settings.
    """
    check_positive("match_hidden", match_hidden)
    check_positive("match_widths", match_widths, allow_zero=True)
    check_choice("match_candidates", match_candidates, MATCH_CANDIDATES)
    check_probability("dropout", dropout)
    check_probability("boundary_prior", boundary_prior, allow_one=False)
    check_non_negative("lr_scale", lr_scale)
    return MRCHeadsSettings(match_hidden, match_widths, match_candidates, dropout,
                            boundary_prior, lr_scale)


@registry.misc("spacy-nested-mrc.MRCLoss.v1")
def configure_mrc_loss(
    kind: str = "dice",
    dice_smooth: float = 1.0,
    weight_start: float = 1.0,
    weight_end: float = 1.0,
    weight_match: float = 1.0,
) -> MRCLoss:
    """The heads' training loss.

    kind (str): "bce", "dice" (Li et al.'s answer to the imbalance of boundary tokens) or
        "dice_bce" (their sum: bce keeps a gradient where dice's vanishes, at boundary
        probabilities near 0, ``loss.MRCLoss``); taken per encoder pass
        (``max_rows_per_pass``): bce is then exactly the batch's, dice a ratio of sums per
        pass.
    dice_smooth (float): the smoothing term gamma of the dice loss.
    weight_start, weight_end, weight_match (float): per-head loss weights.
    RETURNS (MRCLoss): the loss; its share taken per label is the architecture's
        ``per_label_loss``, which also decides the model's task weights.
    """
    check_choice("kind", kind, LOSSES)
    for setting, value in (("dice_smooth", dice_smooth), ("weight_start", weight_start),
                           ("weight_end", weight_end), ("weight_match", weight_match)):
        check_non_negative(setting, value)
    return MRCLoss(kind, dice_smooth, weight_start, weight_end, weight_match)


@registry.misc("spacy-nested-mrc.MRCDecoder.v1")
def configure_mrc_decoder(
    start_threshold: float = 0.5,
    end_threshold: float = 0.5,
    max_span_length: int = 0,
    span_length_margin: int = 2,
    max_match_pairs: int = 65536,
) -> MRCDecoder:
    """From the heads' scores to spans (``decode``).

    start_threshold, end_threshold (float): boundary probabilities that open/close a span;
        only pairs of an opening and a closing token are scored by the match head.
    max_span_length (int): the most tokens a predicted span may have; 0: set at
        initialization to the longest training entity (in the pipeline's tokens) plus
        ``span_length_margin``, so that no span longer than any seen in training is
        predicted (saved with the model; pipelines saved before this setting have none).
    span_length_margin (int): tokens added to the longest training entity for the limit.
    max_match_pairs (int): in prediction, the most start-end pairs whose match vectors are
        computed at once (memory only: the scores are the same); a pass whose start and end
        heads let many pairs through (an untrained model, a long text) is scored in chunks.
        0: all at once.
    RETURNS (MRCDecoder): the decoder.
    """
    check_probability("start_threshold", start_threshold)
    check_probability("end_threshold", end_threshold)
    check_positive("max_span_length", max_span_length, allow_zero=True)
    check_positive("span_length_margin", span_length_margin, allow_zero=True)
    check_positive("max_match_pairs", max_match_pairs, allow_zero=True)
    return MRCDecoder(start_threshold, end_threshold, max_span_length, span_length_margin,
                      max_match_pairs)


@dataclass(frozen=True)
class QueryBlocks:
    """The blocks of an MRC-family architecture, as its builder takes them and its model
    keeps them (``attrs["settings"]``, never serialized: a loaded pipeline follows its
    config, see ``spacy_nested_mrc.types``)."""

    encoder: QueryEncoder
    questions: Questions
    windows: QueryWindows
    heads: MRCHeadsSettings
    loss: MRCLoss
    decoder: MRCDecoder

    def __post_init__(self) -> None:
        check_parts(self, BLOCK_FUNCTIONS)  # NME023 for a block that gave something else
