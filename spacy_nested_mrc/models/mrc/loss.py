"""Losses of the MRC heads: binary cross-entropy, dice or both, weighted per head and, for
multi-task models, per task (label)."""

from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from ...errors import Errors

LOSSES = ("bce", "dice", "dice_bce")

# per element of the token heads and of the match candidates, the task (label id) it belongs
# to; and the weight of each task [K]
Tasks = Tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class MRCLoss:
    """The joint loss ``w_start * L_start + w_end * L_end + w_match * L_match`` (Li et al., 2020).

    kind (str): "bce", "dice" or "dice_bce" (their sum). Each is taken over the positions of
        one encoder pass: when ``max_rows_per_pass`` splits a batch into passes, bce (a mean)
        gives exactly the batch's gradient, while dice (a ratio of sums) treats each pass as a
        mini-batch of its own. Dice's gradient reaches a logit through the sigmoid, scaled by
        p (1 - p): where a label's probabilities have gone to 0 (a rare label in passes that
        lack it, or heads started at a small ``boundary_prior``) its gold tokens barely pull
        them back; bce's gradient (p - t) does not vanish there.
    dice_smooth (float): the smoothing term gamma of the dice loss.
    weight_start, weight_end, weight_match (float): the per-head weights.
    per_label (float): with tasks, the share of the per-task mean in each head's loss, the
        rest being the loss pooled over all its positions: 1 (Multi-NER) weighs every task
        alike, 0 weighs each by its number of positions.
    """

    kind: str = "bce"
    dice_smooth: float = 1.0
    weight_start: float = 1.0
    weight_end: float = 1.0
    weight_match: float = 1.0
    per_label: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in LOSSES:
            raise ValueError(Errors.NME006.format(what="loss", value=self.kind, options=LOSSES))

    def binary(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The loss of one head.

        logits (torch.Tensor): [P] the logits at the positions that count.
        targets (torch.Tensor): [P] 0/1 targets.
        RETURNS (torch.Tensor): [] the loss; 0 with a gradient path when P == 0.
        """
        tasks = torch.zeros(len(logits), dtype=torch.long, device=logits.device)
        return self.per_task(logits, targets, tasks, 1)[0]

    def per_task(
        self, logits: torch.Tensor, targets: torch.Tensor, tasks: torch.Tensor, n_tasks: int
    ) -> torch.Tensor:
        """The loss of one head for each task, over the task's own positions.

        logits (torch.Tensor): [P] the logits at the positions that count.
        targets (torch.Tensor): [P] 0/1 targets.
        tasks (torch.Tensor): [P] long, the task of each position, in [0, n_tasks).
        n_tasks (int): K.
        RETURNS (torch.Tensor): [K] the losses; 0 (with a gradient path) for a task without
            positions.
        """
        logits = logits.float()
        targets = targets.float()
        zeros = logits.new_zeros(n_tasks)
        counts = torch.bincount(tasks, minlength=n_tasks)
        total = zeros
        if self.kind in ("bce", "dice_bce"):
            losses = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
            total = total + zeros.index_add(0, tasks, losses) / counts.clamp(min=1)
        if self.kind in ("dice", "dice_bce"):
            probs = torch.sigmoid(logits)
            numerator = 2 * zeros.index_add(0, tasks, probs * targets) + self.dice_smooth
            squares = zeros.index_add(0, tasks, probs * probs + targets * targets)
            denominator = torch.where(counts > 0, squares + self.dice_smooth, 1.0)
            total = total + torch.where(counts > 0, 1 - numerator / denominator, zeros)
        return total

    def __call__(
        self,
        start_logits: torch.Tensor,
        end_logits: torch.Tensor,
        gold_start: torch.Tensor,
        gold_end: torch.Tensor,
        match_logits: torch.Tensor,
        match_targets: torch.Tensor,
        tasks: Optional[Tasks] = None,
    ) -> torch.Tensor:
        """The joint loss.

        start_logits, end_logits, gold_start, gold_end (torch.Tensor): [N] over the N context
            tokens of the batch.
        match_logits, match_targets (torch.Tensor): [P] over the P candidate pairs.
        tasks (Optional[Tasks]): for a multi-task loss, the task of each token [N] and of
            each pair [P] and the task weights lambda [K]: each head's loss is then
            ``per_label * mean_k(lambda_k * L_k) + (1 - per_label) * L``, L_k over task k's
            own tokens or pairs and L over all of them. The mean is over the tasks asked in
            the pass (those with tokens): a text that annotates some labels only asks only
            theirs, and each weighs as it would among all.
        RETURNS (torch.Tensor): [] the loss.
        """
        n_asked = None
        if tasks is not None:
            n_asked = (torch.bincount(tasks[0], minlength=len(tasks[2])) > 0).sum().clamp(min=1)

        def head(logits: torch.Tensor, targets: torch.Tensor, part: int) -> torch.Tensor:
            if tasks is None or self.per_label == 0:
                return self.binary(logits, targets)
            weights = tasks[2]
            per_task = (weights * self.per_task(logits, targets, tasks[part], len(weights)))
            if self.per_label == 1:
                return per_task.sum() / n_asked
            return self.per_label * per_task.sum() / n_asked + (1 - self.per_label) * self.binary(
                logits, targets
            )

        return (
            self.weight_start * head(start_logits, gold_start, 0)
            + self.weight_end * head(end_logits, gold_end, 0)
            + self.weight_match * head(match_logits, match_targets, 1)
        )
