"""Losses of the MRC heads: binary cross-entropy or dice, weighted per head."""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...errors import Errors

LOSSES = ("bce", "dice")


@dataclass
class MRCLoss:
    """The joint loss ``w_start * L_start + w_end * L_end + w_match * L_match`` (Li et al., 2020).

    kind (str): "bce" or "dice".
    dice_smooth (float): the smoothing term gamma of the dice loss.
    weight_start, weight_end, weight_match (float): the per-head weights.
    """

    kind: str = "bce"
    dice_smooth: float = 1.0
    weight_start: float = 1.0
    weight_end: float = 1.0
    weight_match: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in LOSSES:
            raise ValueError(Errors.NME006.format(what="loss", value=self.kind, options=LOSSES))

    def binary(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The loss of one head.

        logits (torch.Tensor): [P] the logits at the positions that count.
        targets (torch.Tensor): [P] 0/1 targets.
        RETURNS (torch.Tensor): [] the loss; 0 with a gradient path when P == 0.
        """
        logits = logits.float()
        targets = targets.float()
        if logits.numel() == 0:
            return logits.sum()
        if self.kind == "bce":
            return F.binary_cross_entropy_with_logits(logits, targets)
        probs = torch.sigmoid(logits)
        numerator = 2 * (probs * targets).sum() + self.dice_smooth
        denominator = (probs * probs).sum() + (targets * targets).sum() + self.dice_smooth
        return 1 - numerator / denominator

    def __call__(
        self,
        start_logits: torch.Tensor,
        end_logits: torch.Tensor,
        gold_start: torch.Tensor,
        gold_end: torch.Tensor,
        match_logits: torch.Tensor,
        match_targets: torch.Tensor,
    ) -> torch.Tensor:
        """The joint loss.

        start_logits, end_logits, gold_start, gold_end (torch.Tensor): [K] over the K context
            tokens of the batch.
        match_logits, match_targets (torch.Tensor): [P] over the P candidate pairs.
        RETURNS (torch.Tensor): [] the loss.
        """
        return (
            self.weight_start * self.binary(start_logits, gold_start)
            + self.weight_end * self.binary(end_logits, gold_end)
            + self.weight_match * self.binary(match_logits, match_targets)
        )
