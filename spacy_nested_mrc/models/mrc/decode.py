"""Decoding of the MRC heads: which start-end pairs are candidates, and which are entities.

Pure functions on tensors, shared by training (candidate selection) and prediction.
"""

import torch

MATCH_CANDIDATES = ("all", "gold", "pred_and_gold")


def pair_mask(starts: torch.Tensor, ends: torch.Tensor, max_span_length: int) -> torch.Tensor:
    """Start-end pairs with ``start <= end`` whose start and end are both allowed.

    starts (torch.Tensor): [R, T] bool, tokens that may start a span.
    ends (torch.Tensor): [R, T] bool, tokens that may end a span.
    max_span_length (int): the most tokens a span may have; 0 for no limit.
    RETURNS (torch.Tensor): [R, T, T] bool, [r, i, j] for the span of tokens i..j (inclusive).
    """
    n = starts.shape[1]
    idx = torch.arange(n, device=starts.device)
    band = idx[None, :] >= idx[:, None]
    if max_span_length > 0:
        band &= idx[None, :] - idx[:, None] < max_span_length
    return starts[:, :, None] & ends[:, None, :] & band[None]


def candidate_pairs(
    mode: str,
    start_pred: torch.Tensor,
    end_pred: torch.Tensor,
    token_mask: torch.Tensor,
    gold_start: torch.Tensor,
    gold_end: torch.Tensor,
    max_span_length: int,
) -> torch.Tensor:
    """The pairs the match head is trained on (the paper's three choices).

    mode (str): "all" (every pair of context tokens), "gold" (gold starts x gold ends) or
        "pred_and_gold" (predicted or gold starts x predicted or gold ends).
    start_pred, end_pred, token_mask, gold_start, gold_end (torch.Tensor): [R, T] bool.
    RETURNS (torch.Tensor): [R, T, T] bool.
    """
    if mode == "all":
        starts, ends = token_mask, token_mask
    elif mode == "gold":
        starts, ends = gold_start & token_mask, gold_end & token_mask
    else:
        starts = (start_pred | gold_start) & token_mask
        ends = (end_pred | gold_end) & token_mask
    return pair_mask(starts, ends, max_span_length)
