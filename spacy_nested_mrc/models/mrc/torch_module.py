"""The MRC heads as a PyTorch module: start, end and start-end match classifiers."""

from typing import Optional

import torch
from torch import nn

from .decode import candidate_pairs, pair_mask
from .loss import MRCLoss


class MRCHeads(nn.Module):
    """Heads over the encoder's hidden states of ``[CLS] question [SEP] context [SEP]``.

    A token's start vector is the hidden state of its first wordpiece, its end vector that of
    its last. The match classifier scores a pair (i, j) from ``[start_i; end_j]`` through a
    two-layer MLP; its first layer is split into a start and an end projection, so pairs cost
    one addition each instead of a [R, T, T, 2H] tensor. Input sizes are inferred at first use.

    match_hidden (int): width of the match MLP's hidden layer.
    dropout (float): dropout on the token vectors and the match hidden layer.
    candidates (str): training pairs for the match head: "all", "gold" or "pred_and_gold".
    max_span_length (int): the most tokens a span may have; 0 for no limit.
    start_threshold, end_threshold (float): probability above which a token starts/ends a span.
    loss (MRCLoss): the joint loss.
    """

    def __init__(
        self,
        *,
        match_hidden: int,
        dropout: float,
        candidates: str,
        max_span_length: int,
        start_threshold: float,
        end_threshold: float,
        loss: MRCLoss,
    ) -> None:
        super().__init__()
        self.start = nn.LazyLinear(1)
        self.end = nn.LazyLinear(1)
        self.match_start = nn.LazyLinear(match_hidden)
        self.match_end = nn.LazyLinear(match_hidden, bias=False)
        self.match_out = nn.Linear(match_hidden, 1)
        self.dropout = nn.Dropout(dropout)
        self.candidates = candidates
        self.max_span_length = max_span_length
        self.start_threshold = start_threshold
        self.end_threshold = end_threshold
        self.loss = loss

    def forward(
        self,
        hidden: torch.Tensor,
        start_index: torch.Tensor,
        end_index: torch.Tensor,
        token_mask: torch.Tensor,
        gold_start: Optional[torch.Tensor] = None,
        gold_end: Optional[torch.Tensor] = None,
        gold_match: Optional[torch.Tensor] = None,
    ):
        """Score the context tokens of R sequences.

        hidden (torch.Tensor): [R, L, H] encoder output.
        start_index, end_index (torch.Tensor): [R, T] long, the wordpiece holding each
            context token's start / end vector.
        token_mask (torch.Tensor): [R, T] bool, real context tokens with wordpieces.
        gold_start, gold_end (Optional[torch.Tensor]): [R, T] bool gold boundaries (training).
        gold_match (Optional[torch.Tensor]): [R, T, T] bool gold spans (training).
        RETURNS: in training the loss []; else ``(pairs [P, 3] long (row, i, j),
            match_prob [P], start_prob [P], end_prob [P])`` for the predicted pairs.
        """
        h_start = _gather(hidden, start_index)  # [R, T, H]
        h_end = _gather(hidden, end_index)  # [R, T, H]
        start_logits = self.start(self.dropout(h_start)).squeeze(-1)  # [R, T]
        end_logits = self.end(self.dropout(h_end)).squeeze(-1)  # [R, T]
        proj_start = self.match_start(self.dropout(h_start))  # [R, T, M]
        proj_end = self.match_end(self.dropout(h_end))  # [R, T, M]
        start_pred = (torch.sigmoid(start_logits) > self.start_threshold) & token_mask
        end_pred = (torch.sigmoid(end_logits) > self.end_threshold) & token_mask
        if gold_match is None:
            pairs = pair_mask(start_pred, end_pred, self.max_span_length).nonzero()  # [P, 3]
            match_logits = self._match(proj_start, proj_end, pairs)
            rows, i, j = pairs.unbind(-1)
            return (
                pairs,
                torch.sigmoid(match_logits.float()),
                torch.sigmoid(start_logits[rows, i].float()),
                torch.sigmoid(end_logits[rows, j].float()),
            )
        pairs = candidate_pairs(
            self.candidates,
            start_pred,
            end_pred,
            token_mask,
            gold_start,
            gold_end,
            self.max_span_length,
        ).nonzero()
        match_logits = self._match(proj_start, proj_end, pairs)
        rows, i, j = pairs.unbind(-1)
        return self.loss(
            start_logits[token_mask],
            end_logits[token_mask],
            gold_start[token_mask],
            gold_end[token_mask],
            match_logits,
            gold_match[rows, i, j],
        )

    def _match(self, proj_start: torch.Tensor, proj_end: torch.Tensor, pairs: torch.Tensor):
        """Match logits [P] of the pairs [P, 3] (row, i, j) from projections [R, T, M]."""
        rows, i, j = pairs.unbind(-1)
        hidden = nn.functional.gelu(proj_start[rows, i] + proj_end[rows, j])  # [P, M]
        return self.match_out(self.dropout(hidden)).squeeze(-1)

    def materialize(self, hidden_size: int, device: torch.device) -> None:
        """Create the lazily sized parameters for encoders of width ``hidden_size``."""
        hidden = torch.zeros(1, 1, hidden_size, device=device)
        index = torch.zeros(1, 1, dtype=torch.long, device=device)
        with torch.no_grad():
            self.forward(hidden, index, index, index.bool())


def _gather(hidden: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of ``hidden`` [R, L, H] at ``index`` [R, T] -> [R, T, H]."""
    return hidden.gather(1, index.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
