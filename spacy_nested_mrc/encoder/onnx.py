"""ONNX Runtime as the encoder's runtime in CPU inference.

``runtime = "onnxruntime"`` (a setting of the ``nested_mrc_ner`` pipe, and ``--runtime`` of
the commands) exports each Hugging Face encoder of the pipeline to ONNX when the pipeline is
loaded and runs its prediction passes with ONNX Runtime on CPU; with ``quantize = "int8"``
the exported graph is quantized by ONNX Runtime's own dynamic quantization (int8 weights)
instead of PyTorch's. Its speed and accuracy against PyTorch's, in float32 and int8, are in
docs/results.md.

The torch weights stay as they are (the pipeline saves them in float as ever), training
refuses a pipe whose encoder runs in ONNX Runtime (NME142: the graph would not follow the
weights), and each process builds its own ONNX Runtime session on first use; sessions close
before a fork, so a pipeline used before ``nlp.pipe(..., n_process=N)`` forks its workers
works in each of them.
Needs the ``onnx`` extra: ``pip install "spacy-nested-mrc[onnx]"``.
"""
from __future__ import annotations

import logging
import os
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from thinc.api import Model
from torch import nn

from ..errors import Errors

RUNTIME_OPTIONS = ("torch", "onnxruntime")
# the encoder inputs a layer may receive, in the order the exported graph takes them
ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
ONNX_OPSET = 17
# the layer attr holding an encoder's ``OnnxEncoder`` (thinc does not serialize it)
ONNX_ATTR = "onnx_encoder"


def check_runtime(value: str) -> None:
    """Raise NME006 for a value of ``runtime`` that is not one of ``RUNTIME_OPTIONS``."""
    if value not in RUNTIME_OPTIONS:
        raise ValueError(Errors.NME006.format(what="runtime", value=value,
                                              options=RUNTIME_OPTIONS))


class _ByName(nn.Module):
    """A Hugging Face encoder called with positional tensors named by ``names``; returns its
    last hidden states [B, L, H] (what the exported graph computes)."""

    def __init__(self, transformer: nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        self.transformer = transformer
        self.names = list(names)

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.transformer(**dict(zip(self.names, tensors))).last_hidden_state


def encoder_input_names(transformer: nn.Module) -> List[str]:
    """RETURNS (List[str]): those of ``ENCODER_INPUTS`` that the encoder's forward takes."""
    import inspect

    accepted = inspect.signature(transformer.forward).parameters
    return [name for name in ENCODER_INPUTS if name in accepted]


def export_encoder(transformer: nn.Module, int8: bool) -> bytes:
    """The encoder as an ONNX graph (inputs ``encoder_input_names``, each [B, L] int64;
    output ``last_hidden_state`` [B, L, H] float32), batch and length dynamic; with ``int8``
    quantized by ONNX Runtime's ``quantize_dynamic`` (QInt8 weights, one scale per output
    channel).

    RETURNS (bytes): the serialized graph.
    """
    if any(p.device.type != "cpu" for p in transformer.parameters()):
        raise ValueError(Errors.NME143)
    if any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in transformer.modules()):
        raise ValueError(Errors.NME145)
    config = getattr(transformer, "config", None)
    if any(getattr(config, flag, False) for flag in ("output_hidden_states", "output_attentions")):
        raise ValueError(Errors.NME144)
    names = encoder_input_names(transformer)
    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "length"} for name in [*names, "last_hidden_state"]}
    was_training = transformer.training
    transformer.eval()
    try:
        with tempfile.TemporaryDirectory() as tmp, torch.no_grad(), warnings.catch_warnings():
            # the tracer's notes on constants in the HF attention mask code are not the user's
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            path = Path(tmp) / "encoder.onnx"
            torch.onnx.export(
                _ByName(transformer, names), example, str(path), input_names=names,
                output_names=["last_hidden_state"], dynamic_axes=axes,
                opset_version=ONNX_OPSET, dynamo=False,
            )
            if int8:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                quantized = Path(tmp) / "encoder_int8.onnx"
                logging.disable(logging.WARNING)  # its advice to pre-process the graph
                try:
                    # per output channel: closer to float than per tensor (measured in
                    # docs/results.md)
                    quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8,
                                     per_channel=True)
                finally:
                    logging.disable(logging.NOTSET)
                path = quantized
            return path.read_bytes()
    finally:
        transformer.train(was_training)


class OnnxEncoder:
    """An exported encoder run by ONNX Runtime on CPU: called like the prediction of the
    spacy-transformers HF layer it stands in for (its ``convert_inputs`` and
    ``convert_outputs`` attrs give the inputs and shape the output).

    graph (bytes): from ``export_encoder``; names (Sequence[str]): its inputs; int8 (bool):
        whether the graph is quantized.
    """

    def __init__(self, graph: bytes, names: Sequence[str], int8: bool) -> None:
        self.graph = graph
        self.names = list(names)
        self.int8 = int8
        self._session: Any = None
        self._pid: Optional[int] = None
        _LIVE.add(self)

    def release(self) -> None:
        """Close the session (its threads end); the next use makes a new one."""
        self._session = None
        self._pid = None

    @property
    def session(self) -> Any:
        """The process's ONNX Runtime session, made on first use in each process, with
        torch's number of threads. Sessions are closed before every fork
        (``_release_sessions``): ONNX Runtime is not fork-safe, and a worker forked while
        the parent's session lived hung making its own."""
        if self._session is None or self._pid != os.getpid():
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = torch.get_num_threads()
            self._session = ort.InferenceSession(
                self.graph, options, providers=["CPUExecutionProvider"]
            )
            self._pid = os.getpid()
        return self._session

    def __getstate__(self) -> Dict[str, Any]:  # sessions do not pickle; each process makes one
        return {**self.__dict__, "_session": None, "_pid": None}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        _LIVE.add(self)

    def predict(self, layer: Model, X: Any) -> Any:
        """The output of the HF layer ``layer`` for its input ``X`` (a ``WordpieceBatch``
        or the ``ArgsKwargs`` of the encoder's inputs, tensors [B, L])."""
        from transformers.modeling_outputs import BaseModelOutput

        inputs, _ = layer.attrs["convert_inputs"](layer, X, False)
        given: Dict[str, torch.Tensor] = inputs.kwargs
        shape = given["input_ids"].shape
        feed = {
            name: (given[name].detach().cpu().numpy() if given.get(name) is not None
                   else np.zeros(shape, dtype=np.int64)).astype(np.int64)
            for name in self.names  # token types default to 0, as in the HF models
        }
        hidden = self.session.run(["last_hidden_state"], feed)[0]
        output = BaseModelOutput(last_hidden_state=torch.from_numpy(hidden))
        return layer.attrs["convert_outputs"](layer, (inputs, output), False)[0]


# the encoders of this process, whose sessions close before a fork
_LIVE: "weakref.WeakSet[OnnxEncoder]" = weakref.WeakSet()


def _release_sessions() -> None:
    for encoder in list(_LIVE):
        encoder.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_release_sessions)



def use_onnxruntime(layers: List[Tuple[Model, nn.Module]], int8: bool) -> int:
    """Export each loaded Hugging Face encoder layer that runs in torch and let ONNX Runtime
    run its prediction (the layer's ``"onnx_encoder"`` attr, which thinc does not
    serialize); an encoder already in ONNX Runtime with the same ``int8`` is left as it is.

    layers (List[Tuple[Model, nn.Module]]): each layer with its transformer
        (``encoder.hf_layers`` of a model).
    int8 (bool): quantize the exported graph to int8.
    RETURNS (int): the encoder layers that run in ONNX Runtime.
    """
    count = 0
    for layer, transformer in layers:
        current = onnx_encoder(layer)
        if current is None or current.int8 != int8:
            graph = export_encoder(transformer, int8)
            layer.attrs[ONNX_ATTR] = OnnxEncoder(graph, encoder_input_names(transformer), int8)
        count += 1
    return count


def uses_onnxruntime(model: Model) -> bool:
    """RETURNS (bool): whether an encoder layer of ``model`` runs in ONNX Runtime."""
    return any(onnx_encoder(node) is not None for node in model.walk())


def onnx_encoder(layer: Model) -> Optional[OnnxEncoder]:
    """RETURNS: the ONNX Runtime encoder of an HF layer, if it has one."""
    return layer.attrs.get(ONNX_ATTR)

