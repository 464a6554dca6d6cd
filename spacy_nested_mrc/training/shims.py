"""The torch shim of the models' heads: thinc's ``PyTorchShim`` whose parameters learn at a
multiple of the optimizer's rate. Both the models (which wrap their heads in it) and the
optimizer (which steps its parameters at that multiple, ``optimizer.TorchAdam``) read it."""
from typing import Any

from thinc.api import Optimizer
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
