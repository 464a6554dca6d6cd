"""The encoder layers built for a config: the MRC family's own encoder, and the shared
``transformer`` component's model (with its listener-free form for ``nlp.replace_listeners``)."""

from functools import partial
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch
from spacy.tokens import Doc, Span
from spacy.util import SimpleFrozenDict, registry
from spacy_transformers.architectures import create_TransformerModel_v3
from spacy_transformers.data_classes import HFObjects
from spacy_transformers.layers import split_trf_batch, trfs2arrays
from spacy_transformers.layers.hf_wrapper import HFWrapper
from spacy_transformers.layers.transformer_model import huggingface_from_pretrained
from thinc.api import ArgsKwargs, Model, chain, get_torch_default_device
from thinc.types import Floats2d, Ragged

from ..errors import Errors
from ..runtime.precision import (
    DEFAULT_GRAD_SCALER_CONFIG,
    DEFAULT_PRECISION,
    check_precision,
    resolve_precision,
    shim_settings,
)
from ..runtime.threads import locked_forward
from ..validation import check_choice, check_positive
from .hf import (
    ATTENTIONS,
    DEFAULT_ATTENTION,
    attention_implementation,
    convert_inputs,
    convert_outputs,
    resolve_encoder,
    safe_loading,
)
from .passes import (
    DEFAULT_FREEZE_WORD_EMBEDDINGS,
    DEFAULT_GRADIENT_CHECKPOINTING,
    DEFAULT_MAX_PASS_TOKENS,
    prediction_layer,
)
from .span_getters import fit_to_encoder


@registry.architectures("spacy-nested-mrc.TransformerModel.v1")
def build_transformer_model(
    name: str,
    get_spans: Callable,
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(),
    transformer_config: Dict[str, Any] = SimpleFrozenDict(),
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = DEFAULT_GRAD_SCALER_CONFIG,
    max_windows_per_pass: int = 64,
    max_pass_tokens: int = DEFAULT_MAX_PASS_TOKENS,
    gradient_checkpointing: bool = DEFAULT_GRADIENT_CHECKPOINTING,
    token_vectors: str = "all_windows",
    precision: str = DEFAULT_PRECISION,
    attention: str = DEFAULT_ATTENTION,
    freeze_word_embeddings: bool = DEFAULT_FREEZE_WORD_EMBEDDINGS,
) -> Model:
    """spacy-transformers' TransformerModel.v3 for a ``transformer`` component, with ``name``
    resolved like our own encoders (``resolve_encoder``): a package's embedded copy (as for
    the default all-MiniLM-L6-v2) is loaded offline instead of asking the hub. The settings
    of spacy-transformers.TransformerModel.v3:

    name (str): the encoder: a hub name (an embedded copy where a package carries one) or a
        local folder.
    get_spans (Callable): the span getter: the windows of each doc the encoder reads.
    tokenizer_config (dict): settings for the tokenizer's from_pretrained.
    transformer_config (dict): settings for the model's from_pretrained.
    mixed_precision (bool): the older name of ``precision = "fp16"``: true means fp16 on a
        GPU where ``precision`` is left at "fp32".
    grad_scaler_config (dict): settings of the gradient scaler of fp16.

    and ours:

    max_windows_per_pass (int): in prediction, the most windows (``get_spans`` spans) that go
        through the encoder at once; a batch with more runs in several passes and their
        outputs are concatenated, so the peak memory of a long doc no longer grows with its
        number of windows (TransformerModel.v3 sends all windows of a batch in one pass).
        0: no limit. Training is unchanged. The encoder layer is a ``prediction_layer``, so
        it can also predict in ONNX Runtime (``onnx_runtime``).
    max_pass_tokens (int): in training, the most padded wordpieces (windows x the longest of
        them) in one encoder call: a batch's windows, sorted by length, go through the
        encoder in calls that fit (``encode_by_length``; the output and gradient are those
        of one call), so one long sentence does not pad the whole batch. In prediction too:
        a batch's windows sorted by length, in calls of this many padded wordpieces (and at
        most ``max_windows_per_pass`` windows), with the output of one call. 0: one call.
    gradient_checkpointing (bool): in training, keep only each encoder layer's input for the
        backward pass and recompute the rest there (``set_gradient_checkpointing``): less
        memory for more time, the same gradient.
    token_vectors (str): where a token in several windows takes its vector from:
        "all_windows", the mean over every window that holds it (spacy-transformers' own
        way), or "own_window", only the window that owns it: of two overlapping windows,
        each owns its side of the middle of their overlap (``own_window_alignment``). With
        ``context_windows.v2`` that is the window whose core holds the token, so each
        sentence is read with the context on both sides of it.
    precision (str): the arithmetic of the encoder, in training and prediction: "fp32",
        "bf16" (autocast; CPUs with bf16 arithmetic and GPUs), "fp16" (GPU, with the
        gradient scaler) or "auto" (bf16 where the device has it, else fp32); weights and
        outputs stay float32 (``runtime.precision``).
    attention (str): how the encoder computes its self-attention: "eager", "sdpa" (torch's
        scaled_dot_product_attention) or "auto" (eager on a CPU, where it is the faster, the
        model's own default on a GPU); the same numbers to rounding
        (``encoder.hf.attention_implementation``). It replaces an ``attn_implementation`` in
        ``transformer_config``.
    freeze_word_embeddings (bool): in training, the encoder's word-embedding matrix is
        frozen: no gradient, no update (``passes.freeze_word_embeddings``), a cheaper step
        (for MiniLM half of the weights are that matrix); the rest of the encoder learns.

    A window (``get_spans`` span) with more wordpieces than the encoder takes is split in
    halves until each fits, where spacy-transformers would drop the wordpieces past the limit
    without a word; a single token with too many keeps its first ones (warning NMW013).
    """
    check_positive("max_windows_per_pass", max_windows_per_pass, allow_zero=True)
    check_positive("max_pass_tokens", max_pass_tokens, allow_zero=True)
    check_choice("token_vectors", token_vectors, TOKEN_VECTORS)
    check_choice("attention", attention, ATTENTIONS)
    precision = resolve_precision(precision, mixed_precision)
    check_precision(precision)
    shim_mixed, scaler = shim_settings(precision, grad_scaler_config)
    model = create_TransformerModel_v3(
        resolve_encoder(name),
        get_spans,
        dict(tokenizer_config),
        _with_attention(transformer_config, attention),
        shim_mixed,
        scaler,
    )
    hf_layer = safe_loading(model.layers[0], attention)
    layer = prediction_layer(
        hf_layer, max_windows_per_pass, max_pass_tokens, gradient_checkpointing, precision,
        freeze_word_embeddings,
    )
    model.replace_node(hf_layer, layer)
    model.attrs["get_spans"] = fit_to_encoder(get_spans, model)
    if token_vectors == "own_window":
        model._func = partial(_own_window_forward, inner=model._func)
    # the component's calls, from any number of threads, one at a time (``runtime.threads``)
    model._func = partial(locked_forward, inner=model._func)
    model.attrs["replace_listener_cfg"] = _replace_listener_cfg
    return model


@registry.architectures("spacy-nested-mrc.Tok2VecTransformer.v1")
def build_tok2vec_transformer(
    transformer: Model, pooling: Model[Ragged, Floats2d], grad_factor: float = 1.0
) -> Model[List[Doc], List[Floats2d]]:
    """A ``TransformerModel.v1`` as a component's own token vectors: what
    ``nlp.replace_listeners`` writes in place of a listener of a ``transformer`` component
    built with ``TransformerModel.v1``, so the rewritten pipeline saves and loads with the
    transformer's settings intact. The layers are those the in-memory rewrite gives
    (the transformer and spacy-transformers' batch split, then the listener's pooling).

    transformer (Model): a ``spacy-nested-mrc.TransformerModel.v1``.
    pooling (Model[Ragged, Floats2d]): each token's vector from its wordpieces' vectors.
    grad_factor (float): scales the gradient that reaches the transformer.
    """
    return chain(chain(transformer, split_trf_batch()), trfs2arrays(pooling, grad_factor))


def _replace_listener_cfg(transformer_cfg: Dict[str, Any], listener_cfg: Dict[str, Any]
                          ) -> Dict[str, Any]:
    """The config ``nlp.replace_listeners`` writes where a listener of a ``TransformerModel.v1``
    was (spaCy reads this function from the transformer model's ``replace_listener_cfg``
    attribute): a ``Tok2VecTransformer.v1`` holding the transformer's config unchanged and
    the listener's pooling and gradient factor."""
    new_cfg: Dict[str, Any] = {"@architectures": "spacy-nested-mrc.Tok2VecTransformer.v1",
                               "transformer": dict(transformer_cfg)}
    for key in ("pooling", "grad_factor"):
        if key in listener_cfg:
            new_cfg[key] = listener_cfg[key]
    return new_cfg


# where a token in several windows takes its vector from (``build_transformer_model``)
TOKEN_VECTORS = ("all_windows", "own_window")


def _own_window_forward(model: Model, docs: List[Doc], is_train: bool, *, inner: Callable):
    """spacy-transformers' forward (``inner``) with each token aligned to the wordpieces of
    its own window only (``own_window_alignment``), in the output and so in its backprop."""
    output, backprop = inner(model, docs, is_train)
    output.align = own_window_alignment(output.spans, output.align,
                                        int(output.wordpieces.input_ids.shape[1]))
    return output, backprop


def own_window_alignment(spans: List[List[Span]], align: Ragged, width: int) -> Ragged:
    """Keep, of each token's wordpieces (spacy-transformers' alignment: per token of the
    docs, in order, indices into the windows' padded wordpieces flattened), those of the
    window that owns it. Consecutive windows of a doc (in order, covering it) split their
    overlap in the middle, as ``plan_windows`` cuts cores: with ``plan_context_windows``'s
    windows, that is the core that holds the token.

    spans (List[List[Span]]): per doc, its windows in order.
    align (Ragged): [T] tokens, each a run of wordpiece indices.
    width (int): wordpieces per padded window.
    RETURNS (Ragged): the same tokens, each with its own window's wordpieces.
    """
    owners, row = [], 0
    for windows in spans:
        if not windows:
            continue
        starts = np.asarray([w.start for w in windows])
        ends = np.asarray([w.end for w in windows])
        bounds = (starts[1:] + ends[:-1]) // 2
        n_tokens = len(windows[0].doc)
        owners.append(row + np.searchsorted(bounds, np.arange(n_tokens), side="right"))
        row += len(windows)
    if not owners:
        return align
    data, lengths = np.asarray(align.dataXd).ravel(), np.asarray(align.lengths)
    token = np.repeat(np.arange(len(lengths)), lengths)
    keep = data // width == np.concatenate(owners)[token]
    kept = np.bincount(token[keep], minlength=len(lengths)).astype(lengths.dtype)
    return Ragged(data[keep], kept)


def _with_attention(transformer_config: Dict[str, Any], attention: str) -> Dict[str, Any]:
    """``transformer_config`` (settings of the model's from_pretrained) asking for the
    attention implementation of ``attention`` on the current device, where there is one
    to ask for."""
    config = {k: v for k, v in transformer_config.items() if k != "attn_implementation"}
    implementation = attention_implementation(attention, get_torch_default_device().type)
    if implementation is not None:
        config["attn_implementation"] = implementation
    return config


# ``build_encoder``'s settings, which its layer keeps in its attrs for ``load_encoder`` (at
# initialization, when they are the config's), and their defaults
ENCODER_SETTINGS: Dict[str, Any] = SimpleFrozenDict(
    precision="fp32", grad_scaler_config=SimpleFrozenDict(), gradient_checkpointing=False,
    max_pass_tokens=0, attention=DEFAULT_ATTENTION, freeze_word_embeddings=False,
)


def build_encoder(
    *,
    precision: str,
    grad_scaler_config: Optional[dict],
    gradient_checkpointing: bool,
    max_pass_tokens: int,
    attention: str,
    freeze_word_embeddings: bool = DEFAULT_FREEZE_WORD_EMBEDDINGS,
) -> Model[ArgsKwargs, torch.Tensor]:
    """An encoder layer without weights: ``load_encoder`` puts a loaded one in its place at
    initialization. ``precision``: its arithmetic (``runtime.precision``, resolved);
    ``gradient_checkpointing``: see ``set_gradient_checkpointing``; ``max_pass_tokens``: the
    most padded wordpieces of one encoder call (``passes``); ``attention``: how it computes
    its self-attention (``hf.attention_implementation``); ``freeze_word_embeddings``: no
    training of its word-embedding matrix (``passes.freeze_word_embeddings``).

    Input: ArgsKwargs for the HF model's forward; output: last hidden states [R, L, H],
    float32.
    """
    settings = {
        "precision": precision,
        "grad_scaler_config": grad_scaler_config,
        "gradient_checkpointing": gradient_checkpointing,
        "max_pass_tokens": max_pass_tokens,
        "attention": attention,
        "freeze_word_embeddings": freeze_word_embeddings,
    }
    return _hf_encoder(HFObjects(None, None, None, {}, {}), settings)


def _hf_encoder(hf: HFObjects, settings: Dict[str, Any]) -> Model[ArgsKwargs, torch.Tensor]:
    """spacy-transformers' ``HFWrapper`` around ``hf`` as a ``prediction_layer`` (the model
    sizes its passes; the layer runs a pass's sequences by length in calls of at most
    ``max_pass_tokens`` padded wordpieces), with the settings it was built with
    (``build_encoder``'s) kept in its attrs for ``load_encoder``."""
    settings = {**settings, "grad_scaler_config": dict(settings["grad_scaler_config"] or {})}
    shim_mixed, scaler = shim_settings(settings["precision"], settings["grad_scaler_config"])
    layer = safe_loading(HFWrapper(
        hf,
        convert_inputs=convert_inputs,
        convert_outputs=convert_outputs,
        mixed_precision=shim_mixed,
        grad_scaler_config=scaler,
    ), settings["attention"])
    layer.attrs.update(settings)
    return prediction_layer(layer, 0, settings.get("max_pass_tokens", 0),
                            settings["gradient_checkpointing"], settings["precision"],
                            settings.get("freeze_word_embeddings", False))


def load_encoder(model: Model, name: str, tokenizer_config: Dict[str, Any]) -> Model:
    """Load pretrained weights and tokenizer for the encoder of ``model`` (its ``"encoder"``
    ref, from ``build_encoder``): a new ``HFWrapper`` around the loaded objects, with the
    same settings, replaces the empty one everywhere in ``model`` (thinc's
    ``Model.replace_node``).

    RETURNS (Model): the loaded encoder layer.
    """
    source = resolve_encoder(name)
    empty = model.get_ref("encoder")
    # layers of pipelines saved before a setting existed lack its attr
    settings = {key: empty.attrs.get(key, default) for key, default in ENCODER_SETTINGS.items()}
    try:
        hf = huggingface_from_pretrained(source, dict(tokenizer_config),
                                         _with_attention({}, settings["attention"]))
    except OSError as err:
        raise OSError(Errors.NME007.format(name=name, error=err)) from err
    except ValueError as err:
        if "attention" not in str(err):
            raise
        raise ValueError(Errors.NME231.format(name=name, attention=settings["attention"],
                                              error=err)) from err
    if not getattr(hf.tokenizer, "is_fast", False):
        raise ValueError(Errors.NME009.format(name=name))
    loaded = _hf_encoder(hf, settings)
    model.replace_node(empty, loaded)
    return loaded
