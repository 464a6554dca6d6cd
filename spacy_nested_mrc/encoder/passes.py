"""How encoder layers are called: prediction in passes of bounded size written into one output,
training in calls of sequences of similar length, gradient checkpointing."""

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, List, Tuple

import numpy as np
import torch
from spacy_transformers.data_classes import WordpieceBatch
from thinc.api import ArgsKwargs, Model
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from transformers.utils import ModelOutput

from ..errors import Errors
from ..runtime.dropout import cheap_dropout
from ..runtime.precision import as_float32, autocast
from ..types import SETTINGS
from ..validation import check_bool
from .hf import hf_objects
from .onnx import onnx_encoder
from .quantization import is_quantized

# the defaults of the encoders' ``max_pass_tokens`` and ``gradient_checkpointing`` settings
# (the MRC family's QueryEncoder.v1 and the shared TransformerModel.v1)
DEFAULT_MAX_PASS_TOKENS = 1024
DEFAULT_GRADIENT_CHECKPOINTING = False
DEFAULT_FREEZE_WORD_EMBEDDINGS = False


@dataclass(frozen=True)
class PassSettings:
    """How a ``prediction_layer`` calls its encoder (``attrs["settings"]``, never serialized,
    so a loaded layer follows its config: see ``spacy_nested_mrc.types``).

    max_rows (int): the most windows a prediction pass; 0: no limit.
    max_tokens (int): the most padded wordpieces a pass (``encode_by_length``); 0: no budget.
    checkpointing (bool): gradient checkpointing in training.
    precision (str): the arithmetic (``runtime.precision``).
    freeze_word_embeddings (bool): in training, the word-embedding matrix gets no gradient
        and no update (``freeze_word_embeddings``).
    """

    max_rows: int
    max_tokens: int = 0
    checkpointing: bool = False
    precision: str = "fp32"
    freeze_word_embeddings: bool = False


def prediction_layer(
    hf_layer: Model,
    max_rows: int,
    max_tokens: int = 0,
    checkpointing: bool = False,
    precision: str = "fp32",
    freeze_word_embeddings: bool = False,
) -> Model:
    """A layer in place of spacy-transformers' HF layer ``hf_layer`` (input: a
    ``WordpieceBatch`` of R windows, or the ``ArgsKwargs`` of the encoder's inputs; output:
    what its ``convert_outputs`` makes of the HF model's output, tensors [R, ...]), composed
    of its shim, attrs and dims, with ``_prediction_forward`` (at most ``max_rows`` windows
    per prediction pass; in training, calls of at most ``max_tokens`` padded wordpieces,
    ``encode_by_length``, with gradient checkpointing if ``checkpointing`` and the word
    embeddings frozen if ``freeze_word_embeddings``), computing in ``precision``
    (``runtime.precision``; the outputs are float32 whatever it is). Same name,
    shims and serialized attrs as ``hf_layer``, so pipelines serialize as they did; the
    forward is a module-level function, so the layer pickles."""
    check_bool("gradient_checkpointing", checkpointing)
    check_bool("freeze_word_embeddings", freeze_word_embeddings)
    settings = PassSettings(max_rows, max_tokens, checkpointing, precision,
                            freeze_word_embeddings)
    return Model(
        hf_layer.name,
        _prediction_forward,
        attrs={**hf_layer.attrs, SETTINGS: settings},
        shims=list(hf_layer.shims),
        dims={name: hf_layer.maybe_get_dim(name) for name in hf_layer.dim_names},
    )


def _prediction_forward(model: Model, inputs: Any, is_train: bool):
    """In ``precision`` (autocast; the output cast to float32, its gradient flowing back in
    the encoder's dtype), ``_forward_passes``. An encoder quantized to int8 or run by ONNX
    Runtime keeps its own arithmetic: they take float32 inputs, so no autocast there."""
    settings: PassSettings = model.attrs[SETTINGS]
    precision = settings.precision
    if precision != "fp32" and (onnx_encoder(model) is not None or is_quantized(model)):
        precision = "fp32"
    with autocast(precision):
        output, backprop = _forward_passes(model, inputs, is_train, settings)
    return as_float32(output), backprop


def _forward_passes(model: Model, inputs: Any, is_train: bool, settings: PassSettings):
    """Training runs thinc's PyTorch forward, as spacy-transformers' HF layer does, in calls
    of at most ``max_tokens`` padded wordpieces (``encode_by_length``; one call where the
    encoder is asked for more than its last hidden state and pooled output).
    Prediction sorts the windows by length and runs them in passes of similar length, each
    cut to its longest window, of at most ``max_tokens`` padded wordpieces (0: no budget)
    and ``max_rows`` windows (0: no limit) (``prediction_passes``): padding is not
    computed, and the output is the batch's as one call gives it (zeros past each window's
    end). Each pass runs through ONNX Runtime where the layer has an ``"onnx_encoder"``
    (``encoder.onnx``), else through thinc's PyTorch forward, and is written into one
    preallocated output as it comes, so one copy of the outputs is alive."""
    max_rows, max_tokens = settings.max_rows, settings.max_tokens
    if is_train:
        set_gradient_checkpointing(model, settings.checkpointing)
        freeze_word_embeddings(model, settings.freeze_word_embeddings)
        cheap_dropout(hf_objects(model).transformer)
        if max_tokens and not _extra_outputs(model):
            return encode_by_length(
                partial(pytorch_forward, model, is_train=True), inputs, max_tokens
            )
        return pytorch_forward(model, inputs, is_train=True)
    lengths = _lengths(inputs)
    passes = prediction_passes(lengths, max_rows, max_tokens)
    width = _padded_width(inputs)
    if _extra_outputs(model) or (len(passes) == 1 and int(lengths.max(initial=0)) == width):
        return _predict_pass(model, inputs), _no_backprop  # one pass, no padding to drop
    merged = None
    for rows in passes:
        out = _predict_pass(model, _select(inputs, rows, max(1, int(lengths[rows].max()))))
        if merged is None:
            merged = _allocate(out, len(lengths), width)
        _write(merged, out, rows)
        del out
    return merged, _no_backprop


def prediction_passes(lengths: np.ndarray, max_rows: int, max_tokens: int) -> List[np.ndarray]:
    """The windows of a prediction batch in passes of similar length: sorted by length, cut
    where a pass would exceed ``max_tokens`` padded wordpieces (``length_groups``) or
    ``max_rows`` windows.

    lengths (np.ndarray): [R] wordpieces of each window.
    max_rows (int): the most windows a pass; 0: no limit.
    max_tokens (int): the most padded wordpieces a pass; 0: no budget.
    RETURNS (List[np.ndarray]): the passes' window indices, shortest windows first.
    """
    passes = []
    for group in length_groups(lengths, max_tokens):
        step = max_rows or max(1, len(group))
        passes.extend(group[begin : begin + step] for begin in range(0, len(group), step))
    return passes


def set_gradient_checkpointing(layer: Model, wanted: bool) -> None:
    """Switch Hugging Face's activation checkpointing of an encoder layer's model on or off
    (non-reentrant: the backward pass recomputes each transformer layer from its input,
    with the random state of the forward pass, so dropout masks and gradients are those of
    a run without it). Called before each training forward with the setting of the config.

    RAISES (ValueError): NME155 when it is asked of a model that cannot do it.
    """
    transformer = hf_objects(layer).transformer
    if transformer is None or wanted == transformer.is_gradient_checkpointing:
        return
    if not wanted:
        transformer.gradient_checkpointing_disable()
    elif not transformer.supports_gradient_checkpointing:
        name = getattr(transformer.config, "_name_or_path", "") or transformer.config.model_type
        raise ValueError(Errors.NME155.format(name=name, cls=type(transformer).__name__))
    else:
        transformer.gradient_checkpointing_enable({"use_reentrant": False})


def freeze_word_embeddings(layer: Model, frozen: bool) -> None:
    """Freeze (or thaw) the word-embedding matrix of an encoder layer's model: frozen, it
    takes no gradient (its backward, a scatter into a dense matrix of vocabulary x width,
    is skipped) and no optimizer update (thinc's optimizers and ``TorchAdam`` step only
    parameters with a gradient); the position and token-type embeddings, the layers and the
    heads learn as before. Called before each training forward with the setting of the
    config. For MiniLM the matrix is half of the encoder's weights (30,522 x 384)."""
    transformer = hf_objects(layer).transformer
    if transformer is None:
        return
    weight = transformer.get_input_embeddings().weight
    if weight.requires_grad == frozen:
        weight.requires_grad_(not frozen)
        weight.grad = None  # no stale gradient for an optimizer to step with


def _extra_outputs(layer: Model) -> bool:
    """Whether the HF model of a layer returns its hidden states or attentions too."""
    transformer = hf_objects(layer).transformer
    config = getattr(transformer, "config", None)
    extra = ("output_hidden_states", "output_attentions")
    return any(getattr(config, name, False) for name in extra)


def _predict_pass(model: Model, inputs: Any) -> Any:
    """One prediction pass of an HF layer: in ONNX Runtime if it has an encoder there."""
    runtime = onnx_encoder(model)
    if runtime is not None:
        return runtime.predict(model, inputs)
    return pytorch_forward(model, inputs, is_train=False)[0]


def _allocate(value: Any, rows: int, width: int) -> Any:
    """Zeros shaped like an output (a tensor [N, ...], or a tuple or ``ModelOutput`` of
    them) with ``rows`` rows and, per position, ``width`` columns."""
    if isinstance(value, ModelOutput):
        return type(value)(**{key: _allocate(part, rows, width) for key, part in value.items()})
    if isinstance(value, tuple):
        return tuple(_allocate(part, rows, width) for part in value)
    if value.dim() == 3:
        return value.new_zeros((rows, width, *value.shape[2:]))
    return value.new_zeros((rows, *value.shape[1:]))


def _write(target: Any, value: Any, rows: np.ndarray) -> None:
    """Copy an output of some rows (per position cut to their width) into those rows of
    ``target`` (``_allocate``'s)."""
    if isinstance(value, ModelOutput):
        for key, part in value.items():
            _write(target[key], part, rows)
        return
    if isinstance(value, tuple):
        for target_part, part in zip(target, value):
            _write(target_part, part, rows)
        return
    index = torch.as_tensor(rows, device=target.device)
    with torch.no_grad():
        if value.dim() == 3:
            target[index, : value.shape[1]] = value
        else:
            target[index] = value


def _no_backprop(d_output: Any) -> Any:
    raise ValueError(Errors.NME019)


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
    lengths = _lengths(inputs)
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


def _lengths(inputs: Any) -> np.ndarray:
    """[S] the real length of each sequence of a batch (its attention mask [S, L], or [S, L,
    L] for rows packed with several sequences: the positions some position attends to)."""
    if isinstance(inputs, ArgsKwargs):
        mask = inputs.kwargs["attention_mask"]
        if mask.dim() == 3:
            mask = mask.any(dim=1)
        return mask.sum(dim=1).cpu().numpy()
    return np.asarray(inputs.lengths)


def _padded_width(inputs: Any) -> int:
    if isinstance(inputs, ArgsKwargs):
        return int(inputs.kwargs["attention_mask"].shape[1])
    return int(inputs.input_ids.shape[1])


def _select(inputs: Any, rows: np.ndarray, width: int) -> Any:
    """Some sequences of a batch, cut to ``width`` columns (a [S, L, L] attention mask to
    ``width`` x ``width``)."""
    if isinstance(inputs, ArgsKwargs):
        index = torch.as_tensor(rows, device=inputs.kwargs["attention_mask"].device)
        kwargs = {key: value[index, :width, :width] if value.dim() == 3 else value[index, :width]
                  for key, value in inputs.kwargs.items()}
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
    merged = _allocate(parts[0][2], n_rows, n_columns)
    for rows, _, output in parts:
        _write(merged, output, rows)
    return merged
