"""Dynamic int8 quantization of the encoder for CPU inference.

``quantize = "int8"`` (a setting of the ``nested_mrc_ner`` pipe) replaces every
``nn.Linear`` of the pipe's Hugging Face encoder by PyTorch's dynamically quantized one
(``torch.ao.quantization.quantize_dynamic``): int8 weights, activations quantized per batch
on the fly. The heads stay in float: they are a small share of the time. Training is
unchanged and refuses a quantized pipe (NME141); a quantized pipe saves its weights
dequantized to float (any spaCy or spacy-transformers version reads them) and is quantized
again when it is loaded with the setting.

PyTorch marks ``torch.ao.quantization`` deprecated in favour of torchao; it is what the
pinned torch (2.13) ships for eager-mode CPU inference without compilation, and its
deprecation warnings are not the user's to act on, so they are silenced here.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import List, Optional, Tuple

import torch
from thinc.api import Model
from torch import nn

from ..errors import Errors
from .hf import hf_layers, hf_transformers
from .onnx import use_onnxruntime

QUANTIZE_OPTIONS = (None, "int8")


def check_quantize(value: Optional[str]) -> None:
    """Raise NME006 for a value of ``quantize`` that is not one of ``QUANTIZE_OPTIONS``."""
    if value not in QUANTIZE_OPTIONS:
        raise ValueError(Errors.NME006.format(what="quantize", value=value,
                                              options=QUANTIZE_OPTIONS))


def _quantized_linear_type() -> type:
    return torch.ao.nn.quantized.dynamic.Linear


def is_quantized(model: Model) -> bool:
    """RETURNS (bool): whether the model's encoder has int8 linear layers."""
    kind = _quantized_linear_type()
    return any(
        isinstance(module, kind)
        for transformer in hf_transformers(model)
        for module in transformer.modules()
    )


def quantize_model(model: Model) -> int:
    """Quantize the linear layers of every Hugging Face encoder in ``model`` to int8, in
    place, on CPU; a quantized encoder is left as it is.

    RETURNS (int): the linear layers quantized.
    """
    count = 0
    kind = _quantized_linear_type()
    for transformer in hf_transformers(model):
        n_linear = sum(isinstance(m, nn.Linear) for m in transformer.modules())
        if not n_linear:
            continue
        quantize_module(transformer)
        count += sum(isinstance(m, kind) for m in transformer.modules())
    return count


def run_encoders_as(model: Model, quantize: Optional[str], runtime: str) -> bool:
    """Run the Hugging Face encoders of ``model`` as ``quantize`` and ``runtime`` ask:
    exported to ONNX Runtime (quantized there with ``quantize = "int8"``), or quantized by
    PyTorch, or left as they are.

    RETURNS (bool): whether the model has an encoder that now runs so (always true when
        nothing is asked).
    """
    int8 = quantize == "int8"
    if runtime == "onnxruntime":
        return use_onnxruntime(hf_layers(model), int8) > 0
    if int8:
        return quantize_model(model) > 0 or is_quantized(model)
    return True


def quantize_module(module: nn.Module) -> nn.Module:
    """Replace the ``nn.Linear`` layers of a torch module (on CPU) by dynamically quantized
    int8 ones, in place. RETURNS (nn.Module): the module."""
    if any(p.device.type != "cpu" for p in module.parameters()):
        raise ValueError(Errors.NME140)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        torch.ao.quantization.quantize_dynamic(module, {nn.Linear}, dtype=torch.qint8,
                                               inplace=True)
    return module


def _replace(root: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, child, module)


@contextmanager
def dequantized(model: Model) -> Iterator[None]:
    """Within the block, the encoder's int8 linear layers are float ``nn.Linear`` layers
    with the dequantized weights (what ``to_disk`` saves); they are quantized again after."""
    kind = _quantized_linear_type()
    swapped: List[Tuple[nn.Module, str, nn.Module]] = []
    for transformer in hf_transformers(model):
        for name, module in list(transformer.named_modules()):
            if isinstance(module, kind):
                weight = module.weight().dequantize()
                linear = nn.Linear(weight.shape[1], weight.shape[0], bias=module.bias() is not None)
                with torch.no_grad():
                    linear.weight.copy_(weight)
                    if module.bias() is not None:
                        linear.bias.copy_(module.bias())
                _replace(transformer, name, linear)
                swapped.append((transformer, name, module))
    try:
        yield
    finally:
        for transformer, name, module in swapped:
            _replace(transformer, name, module)
