"""The torch shims of the package's layers and what they share.

- ``HeadsShim``: the models' heads, thinc's ``PyTorchShim`` whose parameters learn at a
  multiple of the optimizer's rate. Both the models (which wrap their heads in it) and the
  optimizer (which steps its parameters at that multiple, ``optimizer.TorchAdam``) read it.
- ``use_averages``: a torch shim's parameters set to the optimizer's moving averages for a
  while (``nlp.use_params(optimizer.averages)``: ``spacy train`` evaluates and saves the
  averages when ``[training.optimizer] use_averages = true``). thinc's optimizers, and
  ``TorchAdam``, keep a torch parameter's average under the key ``(shim.id, name)``, while
  thinc's ``PyTorchShim.use_params`` reads keys ``"pytorch_{shim.id}_{name}"`` only, so that
  on its own the averages of torch layers are never used: every torch shim here (the heads',
  the encoders' ``SafeHFShim``) uses them through this function.
"""
import contextlib
from typing import Any, Dict, Iterator, List, Tuple

import torch
from thinc.api import Optimizer
from thinc.shims import PyTorchShim
from thinc.util import xp2torch
from torch import nn


@contextlib.contextmanager
def use_averages(shim: PyTorchShim, params: Dict[Any, Any]) -> Iterator[None]:
    """Within the context, each parameter of the shim's torch module that ``params`` holds
    (keyed ``(shim.id, name)``, as thinc's optimizers keep it) computes with that array,
    shared, not copied; parameters it does not hold (a frozen one) keep theirs. Restored on
    exit.

    shim (PyTorchShim): the shim whose module's parameters to set.
    params (Dict[Any, Any]): arrays of the parameters' shapes, by key (the optimizer's
        ``averages``).
    """
    swapped: List[Tuple[nn.Parameter, torch.Tensor]] = []
    try:
        for name, param in shim._model.named_parameters():
            value = params.get((shim.id, name))
            if value is None:
                continue
            swapped.append((param, param.data))
            param.data = xp2torch(value, device=param.device).view(param.shape)
        yield
    finally:
        for param, data in reversed(swapped):
            param.data = data


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

    def use_params(self, params: Dict[Any, Any]) -> Any:
        """The parameters set to ``params`` (the optimizer's averages) for a while
        (``use_averages``)."""
        return use_averages(self, params)
