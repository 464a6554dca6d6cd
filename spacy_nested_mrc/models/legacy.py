"""The architectures of the flat configs (``MRCQuery.v1``, ``MultiNER.v1``,
``LocateAndLabel.v1``: every setting in ``[components.nested_mrc_ner.model]``), kept so that
configs and saved pipelines written before the blocks keep loading and predicting as they
did. Each takes its settings and defaults as a config naming it got them in that release,
warns that it is deprecated (NMW015) and builds its ``.v2`` architecture from the blocks the
settings belong to (``upgrade.FLAT_TO_BLOCKS``). Nothing else imports this module: deleting
it (and its entry points) drops the flat configs and nothing more.
"""

import warnings
from typing import Any, Dict, List, Optional, Sequence

from spacy.tokens import Doc
from spacy.util import SimpleFrozenDict, registry
from thinc.api import Model
from thinc.types import Floats2d

from ..errors import Warnings
from ..types import SpanBatch, SpanOutput

# the blocks and the architectures are registered by their modules
from .locate_label import blocks as ll_blocks
from .locate_label import model as _locate_label  # noqa: F401
from .mrc import blocks as mrc_blocks
from .mrc import model as _mrc  # noqa: F401
from .multi_ner import model as _multi_ner  # noqa: F401
from .upgrade import ARCHITECTURE_KEY, FLAT_TO_BLOCKS, build_in_blocks, to_blocks


def _build(name: str, settings: Dict[str, Any]) -> Model[SpanBatch, SpanOutput]:
    """Warn that the flat architecture ``name`` is deprecated, and build its successor from
    the blocks its settings belong to (each block's checks apply)."""
    successor, _, blocks = FLAT_TO_BLOCKS[name]
    warnings.warn(Warnings.NMW015.format(name=name, successor=successor,
                                         blocks=", ".join(blocks)))
    return build_in_blocks(to_blocks({ARCHITECTURE_KEY: name, **settings}))


@registry.architectures("spacy-nested-mrc.MRCQuery.v1")
def build_flat_mrc_query_model(
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2",
    query_style: str = "index",
    queries: Dict[str, str] = SimpleFrozenDict(),
    queries_path: Optional[str] = None,
    query_presets: Sequence[str] = mrc_blocks.DEFAULT_PRESETS,
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
    per_label_loss: float = 0.5,
    packed: bool = True,
    min_context: int = 64,
    separate_questions: bool = True,
    max_rows: int = 160,
    max_match_pairs: int = 65536,
    max_pass_tokens: int = 1024,
    gradient_checkpointing: bool = False,
    heads_lr_scale: float = 10.0,
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = SimpleFrozenDict(),
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(use_fast=True),
    precision: str = "fp32",
) -> Model[SpanBatch, SpanOutput]:
    """Deprecated: ``spacy-nested-mrc.MRCQuery.v2`` with the settings in blocks. The flat
    MRC query model's settings, each with the default a config naming it got in the pipe:
    the builder's own, but ``query_style``, ``packed``, ``per_label_loss`` and
    ``max_rows``, which the pipe's default model set (the packed MRC) and spaCy merged into
    such a config; ``FLAT_TO_BLOCKS`` says where each goes."""
    return _build("spacy-nested-mrc.MRCQuery.v1", dict(locals()))


@registry.architectures("spacy-nested-mrc.MultiNER.v1")
def build_flat_multi_ner_model(
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2",
    query_style: str = "natural",
    queries: Dict[str, str] = SimpleFrozenDict(),
    queries_path: Optional[str] = None,
    query_presets: Sequence[str] = mrc_blocks.DEFAULT_PRESETS,
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
    task_weights: Dict[str, float] = SimpleFrozenDict(),
    attention_heads: int = 8,
) -> Model[SpanBatch, SpanOutput]:
    """Deprecated: ``spacy-nested-mrc.MultiNER.v2`` with the settings in blocks. The flat
    Multi-NER model's settings, each with the default it had."""
    return _build("spacy-nested-mrc.MultiNER.v1", dict(locals()))


@registry.architectures("spacy-nested-mrc.LocateAndLabel.v1")
def build_flat_locate_label_model(
    tok2vec: Model[List[Doc], List[Floats2d]],
    window_sizes: Sequence[int] = ll_blocks.DEFAULT_WINDOW_SIZES,
    hidden_width: int = 768,
    dropout: float = 0.5,
    filter_iou: float = 0.7,
    classifier_iou: float = 1.0,
    negative_ratio: float = 5.0,
    hard_negative_ratio: float = 0.0,
    focal_gamma: float = 2.0,
    soft_eta: float = 1.0,
    weight_filter: float = 1.0,
    weight_regression: float = 1.0,
    weight_classifier: float = 1.0,
    filter_threshold: float = 0.5,
    nms_decay: float = 0.9,
    nms_iou: float = 0.6,
    nms_score: float = 0.45,
    use_filter: bool = True,
    use_regressor: bool = True,
    use_soft_examples: bool = True,
    use_soft_nms: bool = True,
    classifier_gold: bool = False,
    max_docs_per_pass: int = 0,
    max_span_tokens: int = 65536,
    max_proposals: int = 50000,
    seed: int = 0,
    heads_lr_scale: float = 1.0,
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = SimpleFrozenDict(),
    precision: str = "fp32",
) -> Model[SpanBatch, SpanOutput]:
    """Deprecated: ``spacy-nested-mrc.LocateAndLabel.v2`` with the settings in blocks. The
    flat Locate-and-Label model's settings, each with the default it had."""
    return _build("spacy-nested-mrc.LocateAndLabel.v1", dict(locals()))
