"""Dropout with cheaper masks on a CPU. torch's CPU dropout draws one Bernoulli sample per
element through its generator and multiplies twice, a visible share of a bf16 training
step (docs/training.md). Here each element takes 16
random bits of a 64-bit draw (one generator call per four elements) and the mask is applied
in one ``where``: the same distribution (an element is dropped with probability
round(p * 65536) / 65536, within 1e-5 of p), kept elements scaled by 1 / (1 - p) as torch
does, the same gradient (the saved mask, scaled). The generator is torch's own, so seeds,
and the replayed forward of gradient checkpointing, give the same masks. On a GPU torch's
fused dropout is kept.

``cheap_dropout(module)`` switches every ``nn.Dropout`` inside a module (the encoder's, the
heads') to this one; prediction is unchanged (dropout is off there).
"""

import torch
from torch import nn

# the values of 16 random bits: an element is dropped with probability round(p * _LEVELS) / _LEVELS
_LEVELS = 1 << 16
# set on a module whose dropout is switched, so a training call does not walk it again
_SWITCHED = "_cheap_dropout_switched"


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> torch.Tensor:
    """A mask of ``shape`` that keeps each element with probability 1 - p.

    RETURNS (torch.Tensor): bool [*shape].
    """
    n = 1
    for size in shape:
        n *= int(size)
    # the whole int64 range: random_() alone draws [0, 2**63), whose top bit is always 0
    bits = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), None)
    threshold = int(round(p * _LEVELS)) - _LEVELS // 2
    return (bits.view(torch.int16)[:n] >= threshold).view(shape)


class _MaskedDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:  # type: ignore[override]
        keep = keep_mask(x.shape, p, x.device)
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return torch.where(keep, x * ctx.scale, 0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        (keep,) = ctx.saved_tensors
        return torch.where(keep, grad * ctx.scale, 0), None


def masked_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``nn.functional.dropout(x, p, training)`` with ``keep_mask``'s masks on a CPU.

    x (torch.Tensor): [*] any shape, any float dtype.
    RETURNS (torch.Tensor): [*] the same shape and dtype.
    """
    if not training or p == 0.0 or x.device.type != "cpu" or p >= 1.0:
        return nn.functional.dropout(x, p, training)
    return _MaskedDropout.apply(x, p)


class CheapDropout(nn.Dropout):
    """``nn.Dropout`` whose training forward is ``masked_dropout`` (same ``p``, same
    state: a module's class is switched in place by ``cheap_dropout``)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return super().forward(input)
        return masked_dropout(input, self.p, self.training)


def cheap_dropout(module: nn.Module) -> nn.Module:
    """Switch every ``nn.Dropout`` in ``module`` (itself included) to ``CheapDropout``, in
    place, once (the encoder's training forward calls it every pass; a module built anew, as a
    loaded encoder is, is walked anew); subclasses of ``nn.Dropout`` are left as they are.

    RETURNS (nn.Module): ``module``.
    """
    if getattr(module, _SWITCHED, False):
        return module
    for sub in module.modules():
        if type(sub) is nn.Dropout:
            sub.__class__ = CheapDropout
    setattr(module, _SWITCHED, True)
    return module
