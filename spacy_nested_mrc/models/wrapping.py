"""Thinc glue shared by the models' PyTorchWrapper heads."""
from io import BytesIO
from typing import Any, Callable, Dict, Tuple

import torch
from thinc.api import ArgsKwargs, Model, Optimizer, PyTorchGradScaler
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.shims import PyTorchShim
from torch import nn


class HeadsShim(PyTorchShim):
    """A PyTorchShim whose parameters learn at ``lr_scale`` times the optimizer's rate:
    heads initialised at random on a pretrained encoder move little at the encoder's
    fine-tuning rate (Adam steps each parameter by about the rate)."""

    def __init__(self, model: nn.Module, *, lr_scale: float = 1.0, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.lr_scale = lr_scale

    def finish_update(self, optimizer: Optimizer) -> None:
        scale = self.lr_scale

        def scaled(key: Any, weights: Any, gradient: Any, *, lr_scale: float = 1.0) -> Any:
            return optimizer(key, weights, gradient, lr_scale=lr_scale * scale)

        super().finish_update(scaled)  # type: ignore[arg-type]


def build_heads(
    module: nn.Module,
    convert_inputs: Callable,
    *,
    mixed_precision: bool,
    grad_scaler_config: Dict[str, Any],
    lr_scale: float,
) -> Model:
    """Wrap a heads module whose outputs ``convert_heads_outputs`` reads, its parameters
    learning at ``lr_scale`` times the optimizer's rate (``HeadsShim``)."""
    scaler = PyTorchGradScaler(**{"enabled": mixed_precision, **grad_scaler_config})
    # thinc's own PyTorch layer (the forward of PyTorchWrapper.v2) over our shim: built, not
    # patched, so the layer keeps thinc's behaviour and only the optimizer step is ours
    return Model(
        "pytorch",
        pytorch_forward,
        # the torch module, where thinc's API reaches it (attrs that do not serialize are
        # not saved; loading fills the same module in place, so the reference stays valid)
        attrs={
            "convert_inputs": convert_inputs,
            "convert_outputs": convert_heads_outputs,
            "torch_module": module,
        },
        shims=[
            HeadsShim(
                module,
                lr_scale=lr_scale,
                mixed_precision=mixed_precision,
                grad_scaler=scaler,
                deserialize_model=load_heads_state,
            )
        ],
        dims={"nI": None, "nO": None},
    )


def torch_module(heads: Model) -> nn.Module:
    """RETURNS (nn.Module): the torch module of a heads layer from ``build_heads``."""
    return heads.attrs["torch_module"]


def load_heads_state(module: nn.Module, state_bytes: bytes, device: torch.device) -> nn.Module:
    """Load saved parameters into ``module``, on ``device``.

    Parameters the module lists in ``optional_state`` (names in its state dict) may be
    missing: they were added after the pipeline was saved and stay at their initial value,
    which leaves the module's outputs as they were. Any other missing or unexpected
    parameter raises, as PyTorch's strict loading does.
    """
    state = torch.load(BytesIO(state_bytes), map_location=device)
    missing, unexpected = module.load_state_dict(state, strict=False)
    missing = [name for name in missing if name not in getattr(module, "optional_state", ())]
    if missing or unexpected:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}: "
            f"missing {missing}, unexpected {list(unexpected)}"
        )
    return module.to(device)


def convert_heads_outputs(model: Model, inputs_outputs: Tuple[Any, Any], is_train: bool):
    """Outputs of a heads module that returns its loss in training and tensors otherwise.

    Training: the loss [] becomes a float, and the backprop takes a weight (the share of the
    batch this pass had) as the loss's gradient. Prediction: the tensors become numpy arrays.
    """
    _, output = inputs_outputs
    if is_train:
        loss = output

        def get_d_loss(weight: float) -> ArgsKwargs:
            grad = torch.full_like(loss, float(weight))
            return ArgsKwargs(args=(loss,), kwargs={"grad_tensors": (grad,)})

        return float(loss.detach()), get_d_loss
    return tuple(t.detach().cpu().numpy() for t in output), None
