"""Decoding of the MRC heads: which start-end pairs are candidates, and which are entities.

Pure functions on tensors, shared by training (candidate selection) and prediction, and the
decoder's settings the heads read (``MRCDecoder``, the part ``MRCDecoder.v1`` returns).
"""

from dataclasses import dataclass

import torch

MATCH_CANDIDATES = ("all", "gold", "pred_and_gold")


@dataclass(frozen=True)
class MRCDecoder:
    """The decoder of ``spacy-nested-mrc.MRCDecoder.v1``, read by the heads
    (``torch_module.MRCHeads``): which tokens open and close a span, the longest span, how
    many pairs are matched at once."""

    start_threshold: float
    end_threshold: float
    max_span_length: int
    span_length_margin: int
    max_match_pairs: int

    def learned_limit(self, longest_entity: int) -> int:
        """RETURNS (int): the span length limit learned from the longest training entity
        (tokens): it plus ``span_length_margin``; 0 (none) without one."""
        return longest_entity + self.span_length_margin if longest_entity > 0 else 0

    def span_limit(self, learned: int) -> int:
        """RETURNS (int): the most tokens a predicted span may have: ``max_span_length``,
        else the ``learned`` limit (0: none)."""
        return self.max_span_length or learned


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
