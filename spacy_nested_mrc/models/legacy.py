"""The architectures of the flat configs (``MRCQuery.v1``, ``MultiNER.v1``,
``LocateAndLabel.v1``: every setting in ``[components.nested_mrc_ner.model]``), kept so that
configs and saved pipelines written before the blocks keep loading and predicting as they
did. Each takes its settings and defaults as a config naming it got them in that release,
warns that it is deprecated (NMW015) and builds its ``.v2`` architecture from the blocks the
settings belong to (``FLAT_TO_BLOCKS``). ``to_blocks`` rewrites a flat model config as the
blocks of ``.v2`` (``python -m spacy_nested_mrc upgrade-config``); ``config_path`` finds where
a setting of a ``.v2`` config sits in either layout.
"""

import inspect
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from spacy.tokens import Doc
from spacy.util import SimpleFrozenDict, registry
from thinc.api import Config, Model
from thinc.types import Floats2d

from ..errors import Errors, Warnings
from ..runtime.precision import resolve_precision
from ..types import SpanBatch, SpanOutput

# the blocks and the architectures are registered by their modules
from .locate_label import blocks as ll_blocks
from .locate_label import model as _locate_label  # noqa: F401
from .mrc import blocks as mrc_blocks
from .mrc import model as _mrc  # noqa: F401
from .multi_ner import model as _multi_ner  # noqa: F401

# each flat setting of the MRC family's v1 architectures: (block, name in the block); the
# block None: a setting of the architecture itself
_QUERY_FAMILY: Dict[str, Tuple[Optional[str], str]] = {
    "encoder": ("encoder", "name"),
    "tokenizer_config": ("encoder", "tokenizer_config"),
    "max_rows": ("encoder", "max_rows_per_pass"),
    "max_pass_tokens": ("encoder", "max_pass_tokens"),
    "gradient_checkpointing": ("encoder", "gradient_checkpointing"),
    "precision": ("encoder", "precision"),
    "grad_scaler_config": ("encoder", "grad_scaler_config"),
    "query_style": ("questions", "style"),
    "queries": ("questions", "queries"),
    "queries_path": ("questions", "queries_path"),
    "query_presets": ("questions", "presets"),
    "packed": ("questions", "packed"),
    "separate_questions": ("questions", "separate"),
    "max_length": ("windows", "window_wordpieces"),
    "window_overlap": ("windows", "overlap_tokens"),
    "context": ("windows", "context_wordpieces"),
    "min_context": ("windows", "min_context_wordpieces"),
    "match_hidden": ("heads", "match_hidden"),
    "match_widths": ("heads", "match_widths"),
    "match_candidates": ("heads", "match_candidates"),
    "dropout": ("heads", "dropout"),
    "boundary_prior": ("heads", "boundary_prior"),
    "heads_lr_scale": ("heads", "lr_scale"),
    "loss": ("loss", "kind"),
    "dice_smooth": ("loss", "dice_smooth"),
    "weight_start": ("loss", "weight_start"),
    "weight_end": ("loss", "weight_end"),
    "weight_match": ("loss", "weight_match"),
    "start_threshold": ("decoder", "start_threshold"),
    "end_threshold": ("decoder", "end_threshold"),
    "max_span_length": ("decoder", "max_span_length"),
    "span_length_margin": ("decoder", "span_length_margin"),
    "max_match_pairs": ("decoder", "max_match_pairs"),
}
_LOCATE_LABEL: Dict[str, Tuple[Optional[str], str]] = {
    "tok2vec": (None, "tok2vec"),
    "max_docs_per_pass": (None, "max_docs_per_pass"),
    **{name: ("seeds", name) for name in (
        "window_sizes", "filter_iou", "classifier_iou", "negative_ratio", "hard_negative_ratio",
        "soft_eta", "use_soft_examples", "classifier_gold", "seed")},
    **{name: ("heads", name) for name in (
        "hidden_width", "dropout", "use_filter", "use_regressor", "max_span_tokens",
        "precision", "grad_scaler_config")},
    "heads_lr_scale": ("heads", "lr_scale"),
    **{name: ("loss", name) for name in (
        "focal_gamma", "weight_filter", "weight_regression", "weight_classifier")},
    **{name: ("decoder", name) for name in (
        "filter_threshold", "max_proposals", "use_soft_nms", "nms_decay", "nms_iou",
        "nms_score")},
}
# per flat architecture: its successor, where each of its settings goes, and the registered
# block of each block
FLAT_TO_BLOCKS: Dict[str, Tuple[str, Dict[str, Tuple[Optional[str], str]], Dict[str, str]]] = {
    "spacy-nested-mrc.MRCQuery.v1": (
        "spacy-nested-mrc.MRCQuery.v2",
        {**_QUERY_FAMILY, "per_label_loss": (None, "per_label_loss")},
        {"encoder": "spacy-nested-mrc.QueryEncoder.v1",
         "questions": "spacy-nested-mrc.Questions.v1",
         "windows": "spacy-nested-mrc.QueryWindows.v1",
         "heads": "spacy-nested-mrc.MRCHeads.v1",
         "loss": "spacy-nested-mrc.MRCLoss.v1",
         "decoder": "spacy-nested-mrc.MRCDecoder.v1"},
    ),
    "spacy-nested-mrc.MultiNER.v1": (
        "spacy-nested-mrc.MultiNER.v2",
        {**_QUERY_FAMILY, "task_weights": (None, "task_weights"),
         "attention_heads": (None, "attention_heads")},
        {"encoder": "spacy-nested-mrc.QueryEncoder.v1",
         "questions": "spacy-nested-mrc.Questions.v1",
         "windows": "spacy-nested-mrc.QueryWindows.v1",
         "heads": "spacy-nested-mrc.MRCHeads.v1",
         "loss": "spacy-nested-mrc.MRCLoss.v1",
         "decoder": "spacy-nested-mrc.MRCDecoder.v1"},
    ),
    "spacy-nested-mrc.LocateAndLabel.v1": (
        "spacy-nested-mrc.LocateAndLabel.v2",
        _LOCATE_LABEL,
        {"seeds": "spacy-nested-mrc.SeedSpans.v1",
         "heads": "spacy-nested-mrc.LocateLabelHeads.v1",
         "loss": "spacy-nested-mrc.LocateLabelLoss.v1",
         "decoder": "spacy-nested-mrc.SoftNMSDecoder.v1"},
    ),
}
ARCHITECTURE_KEY = "@architectures"


def to_blocks(config: Mapping[str, Any]) -> Dict[str, Any]:
    """A model config of a flat architecture as the config of its successor in blocks (any
    other config as it is). ``mixed_precision = true`` becomes ``precision = "fp16"`` where
    the precision was left at fp32, as the flat architectures read it.

    config (Mapping[str, Any]): the model's config (``[components.NAME.model]``).
    RETURNS (Dict[str, Any]): the config in blocks, with only the settings it gave.
    """
    name = config.get(ARCHITECTURE_KEY)
    if name not in FLAT_TO_BLOCKS:
        return dict(config)
    successor, where, registered = FLAT_TO_BLOCKS[name]
    settings = {k: v for k, v in config.items() if k != ARCHITECTURE_KEY}
    mixed = settings.pop("mixed_precision", False)
    if mixed:
        settings["precision"] = resolve_precision(settings.get("precision", "fp32"), mixed)
    new: Dict[str, Any] = {ARCHITECTURE_KEY: successor}
    for block, ref in registered.items():
        new[block] = {"@misc": ref}
    for key, value in settings.items():
        if key not in where:
            raise ValueError(Errors.NME016.format(setting=key, name=name))
        block, setting = where[key]
        # a plain copy of a mapping (a signature's default is a frozen one)
        value = dict(value) if isinstance(value, Mapping) else value
        (new if block is None else new[block])[setting] = value
    return new


def upgrade_config(config: Config) -> Config:
    """``config`` with the model of every component in a flat architecture rewritten in
    blocks (``to_blocks``), with the flat default of each setting it leaves out whose block
    has another default, so that it builds the same model; read it without interpolation to
    keep its ``${...}`` references.

    config (Config): a pipeline's config.
    RETURNS (Config): the same config, its models in blocks.
    """
    components = {
        name: {**dict(component), "model": to_blocks(
            {**_defaults_that_differ(component["model"].get(ARCHITECTURE_KEY)),
             **component["model"]})}
        if isinstance(component, Mapping) and isinstance(component.get("model"), Mapping)
        else component
        for name, component in config.get("components", {}).items()
    }
    return Config({**config, "components": components}, section_order=config.section_order)


def _defaults_that_differ(name: Optional[str]) -> Dict[str, Any]:
    """The settings of the flat architecture ``name`` whose default differs from that of
    the setting it becomes (MultiNER.v1's questions, packing and rows per pass), with the
    flat default; none for another architecture."""
    if name not in FLAT_TO_BLOCKS:
        return {}
    successor, where, blocks = FLAT_TO_BLOCKS[name]
    flat = inspect.signature(registry.architectures.get(name)).parameters
    differ = {}
    for key, (block, setting) in where.items():
        function = (registry.architectures.get(successor) if block is None
                    else registry.misc.get(blocks[block]))
        new = inspect.signature(function).parameters[setting].default
        old = flat[key].default
        if old is not inspect.Parameter.empty and _plain(old) != _plain(new):
            differ[key] = _plain(old)
    return differ


def _plain(value: Any) -> Any:
    """A default as a config holds it: a list for a tuple, a dict for a frozen dict."""
    if isinstance(value, tuple):
        return list(value)
    return dict(value) if isinstance(value, Mapping) else value


def config_path(config: Mapping[str, Any], path: str) -> str:
    """Where a setting of a model config in blocks (``"decoder.start_threshold"``) sits in
    ``config``, which may be flat (``"start_threshold"``).

    config (Mapping[str, Any]): the model's config.
    path (str): the setting's path in the config in blocks, relative to the model.
    RETURNS (str): its path in ``config``, relative to the model.
    """
    name = config.get(ARCHITECTURE_KEY)
    if name not in FLAT_TO_BLOCKS:
        return path
    block, _, setting = path.rpartition(".")
    for flat, place in FLAT_TO_BLOCKS[name][1].items():
        if place == ((block or None), setting):
            return flat
    return path


def build_in_blocks(config: Mapping[str, Any]) -> Model[SpanBatch, SpanOutput]:
    """Build the model of a config in blocks whose values are resolved already (no
    ``${...}``; a sub-layer such as ``tok2vec`` given as a model), calling each block's
    registered function and then the architecture's, as confection would but without its
    type checks: each value meets the builders' own checks.

    config (Mapping[str, Any]): the model config in blocks (``to_blocks``'s output).
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    settings = dict(config)
    builder = registry.architectures.get(settings.pop(ARCHITECTURE_KEY))
    for key, value in settings.items():
        if isinstance(value, Mapping) and "@misc" in value:
            section = dict(value)
            settings[key] = registry.misc.get(section.pop("@misc"))(**section)
    return builder(**settings)


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
