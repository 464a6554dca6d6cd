"""Span scores that mean what they say: Platt scaling of a model's confidences, fitted on
dev, and the expected calibration error (ECE) that measures how far a score is from the
precision of the spans that get it."""

from typing import Optional, Sequence, Tuple

import numpy as np

# keeps logit(p) finite for confidences of exactly 0 or 1
EPSILON = 1e-6


def logit(scores: np.ndarray) -> np.ndarray:
    """scores [N] in [0, 1] -> log-odds [N] (clipped to EPSILON from 0 and 1)."""
    p = np.clip(np.asarray(scores, dtype=np.float64), EPSILON, 1 - EPSILON)
    return np.log(p / (1 - p))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, without overflow for large |x|."""
    return np.exp(-np.logaddexp(0.0, -np.asarray(x, dtype=np.float64)))


def calibrate(scores: np.ndarray, calibration: Optional[Sequence[float]]) -> np.ndarray:
    """Map confidences through ``sigmoid(a * logit(p) + b)``.

    scores (np.ndarray): [N] confidences in [0, 1].
    calibration (Optional[Sequence[float]]): ``[a, b]``, or None to keep the scores.
    RETURNS (np.ndarray): [N] float32 scores, in the order of the input (a > 0 keeps the
        ranking).
    """
    if calibration is None or len(scores) == 0:
        return scores
    a, b = calibration
    return sigmoid(a * logit(scores) + b).astype(np.float32)


def uncalibrate(scores: np.ndarray, calibration: Optional[Sequence[float]]) -> np.ndarray:
    """The inverse of :func:`calibrate`: the confidences that map to ``scores``.

    scores (np.ndarray): [N] calibrated scores in [0, 1].
    calibration (Optional[Sequence[float]]): ``[a, b]`` with a > 0, or None.
    RETURNS (np.ndarray): [N] float64 confidences (0 and 1 map to themselves).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if calibration is None:
        return scores
    a, b = calibration
    inner = np.clip(scores, EPSILON, 1 - EPSILON)
    raw = sigmoid((np.log(inner / (1 - inner)) - b) / a)
    return np.where((scores <= 0) | (scores >= 1), scores, raw)


def fit_platt(
    scores: np.ndarray, correct: np.ndarray, *, l2: float = 1e-4, steps: int = 100
) -> Tuple[float, float]:
    """Fit ``[a, b]`` of :func:`calibrate` by logistic regression of ``correct`` on
    ``logit(scores)``: Newton's method with backtracking, so every step lowers the penalized
    negative log-likelihood; the L2 penalty (towards the identity map, a = 1 and b = 0, per
    span) keeps it finite when the data separate.

    scores (np.ndarray): [N] confidences of predicted spans.
    correct (np.ndarray): [N] bool, whether each span is a gold entity.
    RETURNS (Tuple[float, float]): a (> 0 unless the scores rank backwards) and b.
    """
    x = logit(scores)
    y = np.asarray(correct, dtype=np.float64)
    if len(x) == 0 or y.min() == y.max():
        return 1.0, 0.0
    features = np.stack([x, np.ones_like(x)], axis=1)  # [N, 2]
    prior = np.array([1.0, 0.0])
    penalty = l2 * len(x)

    def objective(w: np.ndarray) -> float:
        z = features @ w
        nll = np.logaddexp(0.0, z).sum() - (y * z).sum()
        return float(nll + 0.5 * penalty * ((w - prior) ** 2).sum())

    w = prior.copy()
    current = objective(w)
    for _ in range(steps):
        p = sigmoid(features @ w)
        gradient = features.T @ (p - y) + penalty * (w - prior)
        hessian = (features * (p * (1 - p))[:, None]).T @ features + penalty * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while scale > 1e-6 and objective(w - scale * step) > current:
            scale /= 2
        if scale <= 1e-6:
            break
        w = w - scale * step
        previous, current = current, objective(w)
        if previous - current < 1e-9 * max(1.0, abs(previous)):
            break
    return float(w[0]), float(w[1])


def expected_calibration_error(
    scores: np.ndarray, correct: np.ndarray, n_bins: int = 10
) -> float:
    """ECE: the mean over equal-width score bins of |precision - mean score|, weighted by the
    share of spans in the bin.

    scores (np.ndarray): [N] confidences of predicted spans.
    correct (np.ndarray): [N] bool, whether each span is a gold entity.
    RETURNS (float): the ECE in [0, 1]; 0.0 for no spans.
    """
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if len(scores) == 0:
        return 0.0
    bins = np.minimum((scores * n_bins).astype(np.int64), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        in_bin = bins == b
        total += in_bin.sum() * abs(correct[in_bin].mean() - scores[in_bin].mean())
    return float(total / len(scores))
