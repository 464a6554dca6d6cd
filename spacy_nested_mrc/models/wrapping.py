"""Thinc glue shared by the models' PyTorchWrapper heads, and their loss."""
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import torch
from thinc.api import ArgsKwargs, Model, PyTorchGradScaler
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from torch import nn

from ..runtime.dropout import cheap_dropout
from ..runtime.precision import autocast, shim_settings
from ..training.shims import HeadsShim
from ..types import SETTINGS


@dataclass(frozen=True)
class HeadsSettings:
    """A heads layer's config-governed settings (``attrs["settings"]``, never serialized:
    see ``spacy_nested_mrc.types``): its arithmetic, resolved (``runtime.precision``)."""

    precision: str


def build_heads(
    module: nn.Module,
    convert_inputs: Callable,
    *,
    precision: str,
    grad_scaler_config: Dict[str, Any],
    lr_scale: float,
) -> Model:
    """Wrap a heads module whose outputs ``convert_heads_outputs`` reads, its parameters
    learning at ``lr_scale`` times the optimizer's rate (``HeadsShim``), computing in
    ``precision`` (resolved; ``runtime.precision``), its dropout with cheaper masks on a CPU
    (``runtime.dropout``)."""
    mixed_precision, scaler_config = shim_settings(precision, grad_scaler_config)
    scaler = PyTorchGradScaler(**scaler_config)
    cheap_dropout(module)
    # thinc's own PyTorch layer (the forward of PyTorchWrapper.v2) over our shim, run in the
    # precision's autocast: built, not patched, so the layer keeps thinc's behaviour and only
    # the arithmetic and the optimizer step are ours
    return Model(
        "pytorch",
        _heads_forward,
        # the torch module, where thinc's API reaches it (attrs that do not serialize are
        # not saved; loading fills the same module in place, so the reference stays valid)
        attrs={
            "convert_inputs": convert_inputs,
            "convert_outputs": convert_heads_outputs,
            "torch_module": module,
            SETTINGS: HeadsSettings(precision),
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


def _heads_forward(model: Model, inputs: Any, is_train: bool):
    """thinc's PyTorch forward in the autocast of the layer's ``precision`` (the backward
    runs outside it, as autocast asks)."""
    with autocast(model.attrs[SETTINGS].precision):
        return pytorch_forward(model, inputs, is_train)


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
    # tensors and containers only: a crafted pipeline folder cannot run code at load
    state = torch.load(BytesIO(state_bytes), map_location=device, weights_only=True)
    missing, unexpected = module.load_state_dict(state, strict=False)
    missing = [name for name in missing if name not in getattr(module, "optional_state", ())]
    if missing or unexpected:
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}: "
            f"missing {missing}, unexpected {list(unexpected)}"
        )
    return module.to(device)


class Scored(NamedTuple):
    """What a heads module returns in training: its scores and what the loss compares them
    with, so that the loss is taken outside the module (``heads_loss``), as spaCy's trainable
    pipes take theirs in ``get_loss``.

    scores (Tuple[torch.Tensor, ...]): the heads' differentiable outputs (logits, offsets);
        one that does not require a gradient (a part switched off) gets none.
    targets (Tuple[Any, ...]): the gold the loss reads, in the order the module's
        ``loss_of`` takes it; no gradient.
    """

    scores: Tuple[torch.Tensor, ...]
    targets: Tuple[Any, ...]


def convert_heads_outputs(model: Model, inputs_outputs: Tuple[Any, Any], is_train: bool):
    """Outputs of a heads module that returns ``Scored`` in training and tensors otherwise.

    Training: the ``Scored`` as it is, its backprop taking the gradient of the loss with
    respect to each of its scores (``heads_loss``). Prediction: the tensors become numpy
    arrays.
    """
    _, output = inputs_outputs
    if is_train:
        scored: Scored = output

        def get_d_scores(d_scores: Tuple[torch.Tensor, ...]) -> ArgsKwargs:
            pairs = [(s, d) for s, d in zip(scored.scores, d_scores) if s.requires_grad]
            return ArgsKwargs(
                args=([s for s, _ in pairs],), kwargs={"grad_tensors": [d for _, d in pairs]}
            )

        return scored, get_d_scores
    return tuple(t.detach().cpu().numpy() for t in output), None


def needs_backprop(scored: Optional[Scored]) -> bool:
    """RETURNS (bool): whether any score of a training pass takes a gradient."""
    return scored is not None and any(s.requires_grad for s in scored.scores)


def heads_loss(model: Model, scored: Optional[Scored]) -> Tuple[float, Tuple[torch.Tensor, ...]]:
    """The loss of a training pass and its gradient with respect to each score, from the
    ``loss_of`` of the model's heads module: ``(loss, d_scores)``, what a trainable pipe's
    ``get_loss`` returns. The scores are taken as leaves, so the heads' graph is untouched
    until the backprop; the loss is taken in float32 and each gradient has its score's dtype;
    a score without a gradient gets zeros.

    model (Model): a model with a ``heads`` layer from ``build_heads``.
    scored (Optional[Scored]): the training output of the heads; None for an empty pass.
    RETURNS (Tuple[float, Tuple[torch.Tensor, ...]]): the loss and d(loss)/d(score) for each
        score, of the score's shape.
    """
    if scored is None:
        return 0.0, ()
    # in float32 whatever the heads ran in (mixed precision): the loss is a sum over a batch
    leaves = tuple(s.detach().float().requires_grad_(s.requires_grad) for s in scored.scores)
    with torch.enable_grad():
        loss = torch_module(model.get_ref("heads")).loss_of(Scored(leaves, scored.targets))
    wanted = [x for x in leaves if x.requires_grad]
    grads = iter(
        torch.autograd.grad(loss, wanted, allow_unused=True) if loss.requires_grad else []
    )
    d_scores = []
    for score, leaf in zip(scored.scores, leaves):
        grad = next(grads, None) if leaf.requires_grad else None
        d_scores.append(torch.zeros_like(score) if grad is None else grad.to(score.dtype))
    return float(loss.detach()), tuple(d_scores)
