"""Losses of the Locate-and-Label heads (Shen et al., 2021).

- the filter: binary focal loss, weighted by soft examples;
- the regressor: smooth-L1 of the boundary offsets plus the span-level overlap loss
  (eqs. 13-15), on the positive seed spans;
- the classifier: cross-entropy over the labels and a "none" class, weighted by soft examples;
- soft examples: weights from each example's IoU with its gold entity (eq. 11);
- the total: ``lambda_1 * L_filter + lambda_2 * L_regression + lambda_3 * L_classifier`` (eq. 17).
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F


def is_positive(overlap: np.ndarray, threshold: float) -> np.ndarray:
    """Which examples are positive: IoU with their best gold entity >= threshold (and > 0).

    overlap (np.ndarray): [S] IoU in [0, 1].
    threshold (float): alpha_1 (seed spans, filter) or alpha_2 (adjusted spans, classifier).
    RETURNS (np.ndarray): [S] bool.
    """
    overlap = np.asarray(overlap)
    return (overlap >= threshold) & (overlap > 0)


def soft_example_weights(overlap: np.ndarray, threshold: float, eta: float) -> np.ndarray:
    """Weights of the training examples from their IoU with the best-matching gold entity
    (eq. 11): a positive weighs ``IoU ** eta`` (the closer its match, the more it counts), a
    negative ``(1 - IoU) ** eta`` (one that partly matches an entity counts less than one far
    from every entity). ``eta = 0`` weighs every example 1.

    overlap (np.ndarray): [S] IoU in [0, 1].
    threshold (float): the IoU from which an example is positive (see ``is_positive``).
    eta (float): the focusing parameter, >= 0.
    RETURNS (np.ndarray): [S] float32 weights in [0, 1].
    """
    overlap = np.asarray(overlap, dtype=np.float64)
    base = np.where(is_positive(overlap, threshold), overlap, 1.0 - overlap)
    return (base**eta).astype(np.float32)


def regression_targets(
    starts: np.ndarray, ends: np.ndarray, gold_starts: np.ndarray, gold_ends: np.ndarray
) -> np.ndarray:
    """The offsets that move each seed span onto its gold entity.

    starts, ends (np.ndarray): [S] the seed spans (end exclusive).
    gold_starts, gold_ends (np.ndarray): [S] the gold entity matched to each seed.
    RETURNS (np.ndarray): [S, 2] float32 (left offset, right offset): ``gold - seed``.
    """
    return np.stack([gold_starts - starts, gold_ends - ends], axis=1).astype(np.float32)


def focal_loss(
    logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor, gamma: float
) -> torch.Tensor:
    """Binary focal loss (Lin et al., 2017) of the span proposal filter, weighted per example:
    ``-[y (1 - p)^gamma log p + (1 - y) p^gamma log (1 - p)]`` with ``p = sigmoid(logit)``.

    logits (torch.Tensor): [S] the filter's logits.
    targets (torch.Tensor): [S] 0/1 whether each seed span is positive.
    weights (torch.Tensor): [S] soft-example weights.
    gamma (float): the focusing parameter (0: binary cross-entropy).
    RETURNS (torch.Tensor): [] the mean weighted loss; 0 with a gradient path when S == 0.
    """
    logits = logits.float()
    targets = targets.float()
    log_p = F.logsigmoid(logits)
    log_not_p = F.logsigmoid(-logits)
    per_example = -(
        targets * log_not_p.exp() ** gamma * log_p
        + (1 - targets) * log_p.exp() ** gamma * log_not_p
    )
    return _mean(per_example * weights.float())


def overlap_loss(
    starts: torch.Tensor, ends: torch.Tensor, gold_starts: torch.Tensor, gold_ends: torch.Tensor
) -> torch.Tensor:
    """The span-level overlap loss of the regressed spans (eqs. 13-15): ``1 - d_o / d_c``,
    where ``d_o = min(end, end*) - max(start, start*)`` is the overlap of the span with its
    gold entity (negative: the gap between disjoint spans) and ``d_c = max(end, end*) -
    min(start, start*)`` the length of the smallest span covering both. It is 0 for a perfect
    match and below 2, and unlike the smooth-L1 loss it sees the span as a whole (in one
    dimension it equals the GIoU loss).

    starts, ends (torch.Tensor): [P] float, the regressed (not rounded) boundaries.
    gold_starts, gold_ends (torch.Tensor): [P] the gold boundaries (gold spans are non-empty).
    RETURNS (torch.Tensor): [P] the loss of each span.
    """
    gold_starts = gold_starts.to(starts.dtype)
    gold_ends = gold_ends.to(ends.dtype)
    d_o = torch.minimum(ends, gold_ends) - torch.maximum(starts, gold_starts)
    d_c = torch.maximum(ends, gold_ends) - torch.minimum(starts, gold_starts)
    return 1.0 - d_o / d_c.clamp(min=1e-6)


@dataclass(frozen=True)
class LocateLabelLoss:
    """The joint loss (eq. 17) and its parts.

    gamma (float): focusing parameter of the filter's focal loss.
    weight_filter, weight_regression, weight_classifier (float): lambda_1, lambda_2, lambda_3.
    """

    gamma: float = 2.0
    weight_filter: float = 1.0
    weight_regression: float = 1.0
    weight_classifier: float = 1.0

    def filter(
        self, logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """RETURNS (torch.Tensor): [] the filter's loss over [S] seed spans (see focal_loss)."""
        return focal_loss(logits, targets, weights, self.gamma)

    def regression(
        self,
        offsets: torch.Tensor,
        targets: torch.Tensor,
        starts: torch.Tensor,
        ends: torch.Tensor,
        gold_starts: torch.Tensor,
        gold_ends: torch.Tensor,
    ) -> torch.Tensor:
        """The regressor's loss over P positive seed spans: smooth-L1 of both offsets plus
        the overlap loss of the span they give.

        offsets, targets (torch.Tensor): [P, 2] predicted and target (left, right) offsets.
        starts, ends (torch.Tensor): [P] the seed spans.
        gold_starts, gold_ends (torch.Tensor): [P] their gold entities.
        RETURNS (torch.Tensor): [] the mean loss; 0 with a gradient path when P == 0.
        """
        offsets = offsets.float()
        boundary = F.smooth_l1_loss(offsets, targets.float(), reduction="none", beta=1.0).sum(-1)
        span = overlap_loss(
            starts.float() + offsets[:, 0], ends.float() + offsets[:, 1], gold_starts, gold_ends
        )
        return _mean(boundary + span)

    def classifier(
        self,
        logits: torch.Tensor,
        targets: torch.Tensor,
        weights: torch.Tensor,
        allowed: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """The classifier's loss over P adjusted spans.

        logits (torch.Tensor): [P, C + 1], class 0 is "none".
        targets (torch.Tensor): [P] long class ids.
        weights (torch.Tensor): [P] soft-example weights.
        allowed (Optional[torch.Tensor]): [P, C + 1] bool, the classes a span may be taught
            among (its text's annotated labels and "none"): the others are left out of its
            softmax, so nothing is learned of them there. None: all.
        RETURNS (torch.Tensor): [] the mean weighted cross-entropy; 0 when P == 0.
        """
        logits = logits.float()
        if allowed is not None:
            logits = logits.masked_fill(~allowed, float("-inf"))
        per_example = F.cross_entropy(logits, targets, reduction="none")
        return _mean(per_example * weights.float())

    def __call__(
        self,
        filter_loss: torch.Tensor,
        regression_loss: torch.Tensor,
        classifier_loss: torch.Tensor,
    ) -> torch.Tensor:
        """RETURNS (torch.Tensor): [] the total loss (eq. 17)."""
        return (
            self.weight_filter * filter_loss
            + self.weight_regression * regression_loss
            + self.weight_classifier * classifier_loss
        )


def _mean(values: torch.Tensor) -> torch.Tensor:
    """The mean of [N] values, and 0 (still connected to the graph) when N == 0."""
    return values.sum() / max(1, values.numel())
