"""The arithmetic the torch layers run in: one ``precision`` setting for the encoder and the
heads of every architecture and for the shared ``transformer``.

- ``"fp32"``: float32 throughout.
- ``"bf16"``: ``torch.autocast`` with bfloat16, on a CPU with bf16 arithmetic
  (``avx512_bf16``/AMX; its speed against fp32: docs/results.md) or a GPU that has it, with no
  gradient scaler (bf16 has fp32's range). Where the CPU lacks it: warning NMW170 and fp32;
  on a GPU without it: fp16 with the scaler.
- ``"fp16"``: ``torch.autocast`` with float16 and thinc's gradient scaler, on a GPU (the old
  ``mixed_precision = true``); on a CPU: warning NMW170 and fp32.
- ``"auto"``: bf16 where the device has bf16 arithmetic, fp32 elsewhere, without a warning
  (the MRC family's encoder block's default, so ``nlp.add_pipe("nested_mrc_ner")``'s: bf16
  trained the packed MRC on all of GENIA to the dev F1 of fp32, 79.3 against 79.2, in 0.66x
  the step time; docs/results.md). It never picks fp16, which needs the gradient scaler.

The weights stay float32 (the master weights the optimizer updates; a saved pipeline loads
on any machine). The encoder layers hand float32 outputs on, and the losses, the sigmoids
and softmaxes of the scores, Soft-NMS and the scores written to ``doc.spans`` are float32.
"""

import warnings
from contextlib import nullcontext
from functools import lru_cache
from typing import Any, ContextManager, Dict, Optional, Tuple

import torch
from spacy.util import SimpleFrozenDict
from thinc.api import get_torch_default_device

from ..errors import Warnings
from ..validation import check_bool, check_choice

# the defaults of the models' ``precision`` and ``grad_scaler_config`` settings: fp32 for the
# layers of Locate-and-Label and of the flat architectures; the MRC family's encoder block
# (``nlp.add_pipe("nested_mrc_ner")``'s model) takes bf16 wherever it runs
DEFAULT_PRECISION = "fp32"
DEFAULT_QUERY_ENCODER_PRECISION = "auto"
DEFAULT_GRAD_SCALER_CONFIG: Dict[str, Any] = SimpleFrozenDict()

PRECISIONS = ("fp32", "bf16", "fp16", "auto")
# the precisions that mean bf16 where the device has it
BF16_WHERE_IT_RUNS = ("bf16", "auto")


def resolve_precision(precision: str, mixed_precision: bool = False) -> str:
    """The precision a layer was configured with: ``precision``, or ``"fp16"`` where only
    the older ``mixed_precision = true`` asks for it (configs and saved pipelines from before
    ``precision`` keep their meaning).

    RAISES (ValueError): NME006 for an unknown precision.
    """
    check_choice("precision", precision, PRECISIONS)
    check_bool("mixed_precision", mixed_precision)
    return "fp16" if mixed_precision and precision == "fp32" else precision


@lru_cache(maxsize=None)
def cpu_has_bf16() -> bool:
    """RETURNS (bool): whether this CPU has bf16 arithmetic that oneDNN uses."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # builds without oneDNN
        return False


def compute_dtype(precision: str, device_type: str) -> Optional[torch.dtype]:
    """The dtype autocast runs in for ``precision`` on a device, None for float32.

    precision (str): "fp32", "bf16", "fp16" or "auto".
    device_type (str): "cpu" or "cuda" (others compute in float32).
    RETURNS (Optional[torch.dtype]): torch.bfloat16, torch.float16 or None.
    RAISES (ValueError): NME006 for a precision that is not one of ``PRECISIONS`` (as
        written: lower case), on every device.
    """
    check_choice("precision", precision, PRECISIONS)
    if precision == "fp32":
        return None
    if device_type == "cuda":
        if precision in BF16_WHERE_IT_RUNS and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return None if precision == "auto" else torch.float16
    if device_type == "cpu" and precision in BF16_WHERE_IT_RUNS and cpu_has_bf16():
        return torch.bfloat16
    return None


def check_precision(precision: str, device: Optional[str] = None) -> None:
    """Warn (NMW170) where ``precision`` cannot run on ``device`` ("cpu", "cuda"; default:
    the device thinc builds layers for) and fp32 runs instead.

    RAISES (ValueError): NME006 for a precision that is not one of ``PRECISIONS``.
    """
    check_choice("precision", precision, PRECISIONS)
    device = device or get_torch_default_device().type
    if precision not in ("fp32", "auto") and compute_dtype(precision, device) is None:
        why = ("this CPU has no bf16 arithmetic" if precision == "bf16"
               else "fp16 autocast is for GPUs")
        warnings.warn(Warnings.NMW170.format(precision=precision, device=device, why=why))


def shim_settings(precision: str, grad_scaler_config: Dict[str, Any]) -> Tuple[bool, Dict]:
    """The ``mixed_precision`` flag and gradient scaler settings of thinc's PyTorch shims for a
    layer of ``precision``: on a GPU, the shim's own CUDA autocast stays on (it would switch
    ours off) and the scaler runs for fp16 only; on a CPU, both stay off (our CPU autocast is
    ``autocast``'s).

    RETURNS (Tuple[bool, Dict]): the shim's ``mixed_precision`` and the scaler's settings.
    """
    device = get_torch_default_device().type
    dtype = compute_dtype(precision, device)
    on_gpu = device == "cuda" and dtype is not None
    scaler = {"enabled": on_gpu and dtype == torch.float16, **dict(grad_scaler_config)}
    return on_gpu, scaler


def autocast(precision: str, device: Optional[str] = None) -> ContextManager:
    """The autocast context of ``precision`` on ``device`` ("cpu", "cuda"; default: the
    device thinc builds layers for), none for fp32 or where it cannot run."""
    device = device or get_torch_default_device().type
    dtype = compute_dtype(precision, device)
    if dtype is None:
        return nullcontext()
    return torch.autocast(device_type=device, dtype=dtype)


def as_float32(value: Any) -> Any:
    """``value`` (a tensor, or a tuple, list or ``ModelOutput`` of them) with its low-precision
    floating tensors cast to float32 (differentiably: their gradients flow back in their own
    dtype)."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype in (torch.bfloat16, torch.float16) else value
    if isinstance(value, dict):  # ModelOutput is an OrderedDict: keep its class and keys
        for key in list(value.keys()):
            value[key] = as_float32(value[key])
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(as_float32(v) for v in value)
    return value
