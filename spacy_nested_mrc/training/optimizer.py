"""thinc's Adam (``Adam.v1``) with one step over all of a model's torch parameters at once.

thinc's ``Optimizer`` updates one parameter per call, in numpy: a torch shim hands it each
tensor's weights and gradient in turn (a hundred tensors for MiniLM, the word-embedding matrix
among them), and each call walks its arrays several times. ``TorchAdam`` is that optimizer
(its settings, schedules, state and per-parameter calls are thinc's) whose arithmetic runs in
torch's fused Adam kernel: ``finish_update(model)`` steps the parameters of the model's torch
shims in a few multi-tensor operations, grouped by what their step shares (learn rate scale
and update count); a per-parameter call (a shim or layer this does not reach, such as the
``transformer`` component Locate-and-Label listens to) steps its one tensor the same way.
What it matches, per parameter, as thinc does it (``thinc/optimizers.py``,
``thinc/shims/pytorch.py``):

- a parameter is updated when its gradient exists, unless the shim's gradient scaler found an
  overflow in this step (its gradients are then zeroed, no state moves, and the scaler
  updates); its update count is its own (``nr_update[key]``, the key ``(shim.id, name)``);
- ``L2`` with ``L2_is_weight_decay = false`` adds ``L2 * weights`` to the gradient first;
- ``grad_clip`` rescales each tensor's gradient by its own norm when the norm reaches it;
- Adam with the bias correction on the rate, ``lr = learn_rate * sqrt(1 - b2^t) / (1 - b1^t)``,
  and ``eps`` added to ``sqrt(mom2)``: ``w -= lr * lr_scale * mom1 / (sqrt(mom2) + eps)``;
- ``L2_is_weight_decay = true`` then takes ``lr_scale * learn_rate * L2 * w`` off the weights
  (the rate without the bias correction, after the Adam step);
- ``use_averages`` keeps thinc's moving average of each parameter (``averages[key]``);
- the gradients are zeroed.

The moments and averages live in thinc's dicts (``mom1``, ``mom2``, ``averages``) as numpy
arrays that share memory with the torch tensors the step works on, so a parameter may go
through either path and keeps its state. thinc's moments take the betas in float32; torch's
kernel corrects the bias in its own place (its eps after it): it is handed the float32 betas
and a rate and eps that undo its correction, so its step is thinc's. The results agree with
thinc's to float32 rounding (tests/runtime/test_optimizer.py).
"""

import math
from collections import defaultdict
from typing import Any, Dict, Iterator, List, NamedTuple, Tuple

import numpy as np
import torch
from spacy.util import registry
from thinc.api import Model, Optimizer
from thinc.optimizers import ADAM_DEFAULTS, FloatOrSeq, KeyT
from thinc.shims import PyTorchShim
from thinc.util import torch2xp, xp2torch

from ..errors import Errors
from .shims import HeadsShim

# the shims whose finish_update is thinc's (HeadsShim: thinc's, at its lr_scale), so that
# stepping their parameters here is what their own finish_update would do
STEPPED_SHIMS = (PyTorchShim.finish_update, HeadsShim.finish_update)


class _Entry(NamedTuple):
    """A torch parameter to step: its optimizer key, tensor, gradient and rate scale."""

    key: KeyT
    param: torch.Tensor
    grad: torch.Tensor
    lr_scale: float


class TorchAdam(Optimizer):
    """thinc's Adam optimizer whose ``finish_update(model)`` steps every torch parameter of
    ``model`` at once (see the module's docstring); called per parameter, as thinc's
    layers call it, it is thinc's ``Optimizer``."""

    # the parent locks its attributes with __slots__: so does this class (adding none)
    __slots__: List[str] = []

    def __init__(self, learn_rate: FloatOrSeq, **settings: Any) -> None:
        """learn_rate (FloatOrSeq): the rate, or a schedule of rates (one value a step).
        settings (Any): thinc's Adam settings, by keyword (``create_torch_adam`` names them
            with their defaults).
        """
        super().__init__(learn_rate, use_radam=False, **settings)
        self._check_settings()

    def _check_settings(self) -> None:
        """Raise NME230 for a setting (a schedule's first value) that Adam does not take."""
        problems = []
        for name, value in (("beta1", self.b1), ("beta2", self.b2)):
            if not 0.0 < value < 1.0:
                problems.append(f"{name} = {value} (must be in (0, 1))")
        for name, value in (("learn_rate", self.learn_rate), ("L2", self.L2),
                            ("eps", self.eps), ("grad_clip", self.grad_clip)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                problems.append(f"{name} = {value!r} (must be a number >= 0)")
        if problems:
            raise ValueError(Errors.NME230.format(problems="; ".join(problems)))

    def __call__(
        self, key: KeyT, weights: Any, gradient: Any, *, lr_scale: float = 1.0
    ) -> Tuple[Any, Any]:
        """One parameter's step, as thinc's call takes it (a shim or layer that updates its
        parameters one by one): float32 numpy arrays are stepped in place by the same torch
        arithmetic as ``finish_update``; anything else by thinc's own code.

        RETURNS (Tuple[Any, Any]): the weights and the zeroed gradient.
        """
        if not _steppable_arrays(weights, gradient):
            return super().__call__(key, weights, gradient, lr_scale=lr_scale)
        self._step([_Entry(key, torch.from_numpy(weights), torch.from_numpy(gradient),
                           lr_scale)])
        return weights, gradient

    def finish_update(self, model: Model) -> None:
        """Update ``model`` from its gradients, as ``model.finish_update(self)`` does: the
        parameters of its torch shims in one step, every other parameter (its thinc layers',
        a shim's that updates in its own way) through the per-parameter call.

        model (Model): the model whose gradients to apply.
        """
        entries: List[_Entry] = []
        for node in model.walk():
            for shim in node.shims:
                if _steps_here(shim):
                    entries.extend(self._collect(shim))
                else:
                    shim.finish_update(self)
        if entries:
            self._step(entries)
        for node in model.walk():
            for name in node.param_names:
                if node.has_grad(name):
                    param, _ = self((node.id, name), node.get_param(name), node.get_grad(name))
                    node.set_param(name, param)

    def _collect(self, shim: PyTorchShim) -> Iterator[_Entry]:
        """The shim's parameters to step now, with its lr_scale; the rest of what its own
        ``finish_update`` does (a parameter this step does not take goes through the
        per-parameter call; gradients zeroed without a step on an overflow; the scaler's
        update) is done here."""
        scaler = shim._grad_scaler
        lr_scale = float(shim.lr_scale) if isinstance(shim, HeadsShim) else 1.0
        skip = scaler.found_inf
        for name, param in shim._model.named_parameters():
            grad = param.grad
            if grad is None:
                continue
            if skip:
                grad.zero_()
            elif _steppable(param, grad):
                yield _Entry((shim.id, name), param.data, grad, lr_scale)
            else:
                weights, _ = self((shim.id, name), torch2xp(param.data), torch2xp(grad),
                                  lr_scale=lr_scale)
                param.data = xp2torch(weights, requires_grad=True, device=param.device)
                grad.zero_()
        scaler.update()

    def _step(self, entries: List[_Entry]) -> None:
        """One Adam step of thinc's arithmetic over ``entries``, in place."""
        grads = [e.grad for e in entries]
        if self.L2 != 0 and not self.L2_is_weight_decay:
            torch._foreach_add_(grads, [e.param for e in entries], alpha=self.L2)
        if self.grad_clip:
            self._clip_each(grads)
        groups: Dict[Tuple[float, int], List[_Entry]] = defaultdict(list)
        for entry in entries:
            self.nr_update[entry.key] += 1
            groups[(entry.lr_scale, self.nr_update[entry.key])].append(entry)
        for (lr_scale, step), group in groups.items():
            self._fused_step(group, lr_scale, step)
        torch._foreach_zero_(grads)

    def _clip_each(self, grads: List[torch.Tensor]) -> None:
        """Scale each gradient whose norm reaches ``grad_clip`` down to it."""
        norms = torch.stack(torch._foreach_norm(grads))
        over = (norms >= self.grad_clip).nonzero().flatten().tolist()
        if over:
            factors = (self.grad_clip / norms[over]).tolist()
            torch._foreach_mul_([grads[i] for i in over], factors)

    def _fused_step(self, group: List[_Entry], lr_scale: float, step: int) -> None:
        """Adam, weight decay and averages for parameters at the same step and scale."""
        params = [e.param for e in group]
        mom1, mom2 = zip(*(self._moments(e) for e in group))
        # thinc's moments take float32 betas (and 1 - beta in float32); its rate takes the
        # bias correction from the betas as given. torch's kernel takes one beta for both,
        # corrects the rate by 1 - b1^t and sqrt(mom2) by sqrt(1 - b2^t) before its eps: given
        # the float32 betas, a rate and an eps undoing its correction give thinc's step
        beta1, beta2 = float(np.float32(self.b1)), float(np.float32(self.b2))
        lr = self.learn_rate * math.sqrt(1.0 - self.b2**step) / (1.0 - self.b1**step)
        fix1, fix2 = 1.0 - beta1**step, math.sqrt(1.0 - beta2**step)
        torch._fused_adam_(
            params,
            [e.grad for e in group],
            list(mom1),
            list(mom2),
            [],
            list(torch.full((len(group),), float(step)).unbind()),
            lr=lr * lr_scale * fix1 / fix2,
            beta1=beta1,
            beta2=beta2,
            weight_decay=0.0,
            eps=self.eps / fix2,
            amsgrad=False,
            maximize=False,
        )
        if self.L2 != 0 and self.L2_is_weight_decay:
            torch._foreach_add_(params, params, alpha=-(lr_scale * self.learn_rate * self.L2))
        if self.averages is not None:
            decay = min((1.0 + step) / (10.0 + step), 0.9999)
            torch._foreach_lerp_([self._average(e) for e in group], params, 1.0 - decay)

    def _moments(self, entry: _Entry) -> Tuple[torch.Tensor, torch.Tensor]:
        """The parameter's moments as tensors of its shape, sharing memory with thinc's
        ``mom1``/``mom2`` arrays (made at zero for a new key)."""
        key, shape = entry.key, entry.param.shape
        if key not in self.mom1:
            self.mom1[key] = np.zeros((entry.param.numel(),), dtype="float32")
            self.mom2[key] = np.zeros((entry.param.numel(),), dtype="float32")
        return (torch.from_numpy(self.mom1[key]).view(shape),
                torch.from_numpy(self.mom2[key]).view(shape))

    def _average(self, entry: _Entry) -> torch.Tensor:
        """The parameter's moving average, sharing memory with ``averages[key]``."""
        assert self.averages is not None
        if entry.key not in self.averages:
            self.averages[entry.key] = np.zeros(tuple(entry.param.shape), dtype="float32")
        return torch.from_numpy(self.averages[entry.key])


def _steps_here(shim: Any) -> bool:
    """Whether ``TorchAdam`` steps the shim's parameters (its finish_update is thinc's)."""
    return isinstance(shim, PyTorchShim) and type(shim).finish_update in STEPPED_SHIMS


def _steppable(param: torch.Tensor, grad: torch.Tensor) -> bool:
    """Whether the fused step takes the parameter: a dense float32 CPU tensor with a
    gradient alike, not empty (thinc skips an empty one)."""
    return (param.dtype == torch.float32 and grad.dtype == torch.float32
            and param.device.type == "cpu" and grad.device.type == "cpu"
            and grad.layout == torch.strided and param.is_contiguous() and grad.is_contiguous()
            and param.dim() > 0 and param.shape[0] > 0)


def _steppable_arrays(weights: Any, gradient: Any) -> bool:
    """Whether the torch step takes a parameter handed over as arrays: float32 numpy
    arrays of one shape, contiguous and writable, not empty (thinc skips an empty one)."""
    return (isinstance(weights, np.ndarray) and isinstance(gradient, np.ndarray)
            and weights.dtype == np.float32 and gradient.dtype == np.float32
            and weights.shape == gradient.shape and weights.ndim > 0 and len(weights) > 0
            and weights.flags.c_contiguous and gradient.flags.c_contiguous
            and weights.flags.writeable and gradient.flags.writeable)


@registry.optimizers("spacy-nested-mrc.TorchAdam.v1")
def create_torch_adam(
    learn_rate: FloatOrSeq = ADAM_DEFAULTS["learn_rate"],
    *,
    L2: FloatOrSeq = ADAM_DEFAULTS["L2"],
    beta1: FloatOrSeq = ADAM_DEFAULTS["beta1"],
    beta2: FloatOrSeq = ADAM_DEFAULTS["beta2"],
    eps: FloatOrSeq = ADAM_DEFAULTS["eps"],
    grad_clip: FloatOrSeq = ADAM_DEFAULTS["grad_clip"],
    L2_is_weight_decay: bool = True,
    use_averages: bool = True,
) -> TorchAdam:
    """thinc's ``Adam.v1``, its arguments and defaults, stepping the torch parameters of a
    ``nested_mrc_ner`` pipe at once (``TorchAdam``).

    RETURNS (TorchAdam): the optimizer.
    """
    return TorchAdam(learn_rate, L2=L2, beta1=beta1, beta2=beta2, eps=eps,
                     grad_clip=grad_clip, L2_is_weight_decay=L2_is_weight_decay,
                     use_averages=use_averages)
