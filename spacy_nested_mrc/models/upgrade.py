"""Configs of the flat architectures (``MRCQuery.v1``, ``MultiNER.v1``,
``LocateAndLabel.v1``: every setting in ``[components.nested_mrc_ner.model]``) read in the
blocks of their ``.v2`` successors: ``FLAT_TO_BLOCKS`` says where each flat setting goes,
``to_blocks`` rewrites a flat model config in blocks (``upgrade_config`` a whole config: ``python
-m spacy_nested_mrc upgrade-config``), ``config_path`` finds where a setting of a ``.v2``
config sits in either layout, and ``build_in_blocks`` builds a model config in blocks. The
flat builders themselves are in ``legacy``.
"""

import inspect
from typing import Any, Dict, Mapping, Optional, Tuple

from spacy.util import registry
from thinc.api import Config, Model

from ..errors import Errors
from ..runtime.precision import resolve_precision
from ..types import SpanBatch, SpanOutput
from .locate_label.blocks import BLOCK_FUNCTIONS as LOCATE_LABEL_BLOCKS
from .mrc.blocks import BLOCK_FUNCTIONS as QUERY_BLOCKS

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
        QUERY_BLOCKS,
    ),
    "spacy-nested-mrc.MultiNER.v1": (
        "spacy-nested-mrc.MultiNER.v2",
        {**_QUERY_FAMILY, "task_weights": (None, "task_weights"),
         "attention_heads": (None, "attention_heads")},
        QUERY_BLOCKS,
    ),
    "spacy-nested-mrc.LocateAndLabel.v1": (
        "spacy-nested-mrc.LocateAndLabel.v2",
        _LOCATE_LABEL,
        LOCATE_LABEL_BLOCKS,
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
