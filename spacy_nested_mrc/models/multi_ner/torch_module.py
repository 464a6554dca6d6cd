"""Multi-NER's type attention as a PyTorch module: for each window and token, the K
type-specific token vectors attend to each other before the per-type heads."""

import math
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter

from ...errors import Errors


class TypeAttention(LazyModuleMixin, nn.Module):
    """Multi-head self-attention over the label rows of each window, token by token, with a
    residual connection and LayerNorm: the label dependencies of Multi-NER. The width H is
    inferred at first use (or from a loaded state dict).

    Used as the ``mixer`` of ``MRCHeads``: it takes the start and end vectors [W * K, T, H]
    of W windows, label-minor, reshapes each to [W * T, K, H] (the K type-specific vectors of
    a token), attends, and reshapes back. Start and end vectors share the parameters.

    n_heads (int): attention heads; they must divide H.
    dropout (float): dropout on the attention weights and on the attended vectors.
    """

    cls_to_become = None

    def __init__(self, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.dropout = dropout
        self.in_proj_weight = UninitializedParameter()  # [3H, H]
        self.in_proj_bias = UninitializedParameter()  # [3H]
        self.out_proj_weight = UninitializedParameter()  # [H, H]
        self.out_proj_bias = UninitializedParameter()  # [H]
        self.norm_weight = UninitializedParameter()  # [H]
        self.norm_bias = UninitializedParameter()  # [H]

    def initialize_parameters(self, h_start: torch.Tensor, *args) -> None:
        if not self.has_uninitialized_params():
            return
        width = h_start.shape[-1]
        if width % self.n_heads:
            raise ValueError(Errors.NME030.format(heads=self.n_heads, hidden=width))
        bound = 1 / math.sqrt(width)
        with torch.no_grad():  # as nn.MultiheadAttention and nn.LayerNorm
            self.in_proj_weight.materialize((3 * width, width))
            nn.init.xavier_uniform_(self.in_proj_weight)
            self.in_proj_bias.materialize((3 * width,))
            nn.init.zeros_(self.in_proj_bias)
            self.out_proj_weight.materialize((width, width))
            nn.init.uniform_(self.out_proj_weight, -bound, bound)
            self.out_proj_bias.materialize((width,))
            nn.init.zeros_(self.out_proj_bias)
            self.norm_weight.materialize((width,))
            nn.init.ones_(self.norm_weight)
            self.norm_bias.materialize((width,))
            nn.init.zeros_(self.norm_bias)

    def forward(
        self, h_start: torch.Tensor, h_end: torch.Tensor, n_types: int
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mix the label rows of each window.

        h_start, h_end (torch.Tensor): [R, T, H], R = W * K rows, label-minor.
        n_types (int): K.
        RETURNS (Tuple[torch.Tensor, torch.Tensor, torch.Tensor]): the new start and end
            vectors [R, T, H], and the attention maps [W, T, K, K] (row: the attending type),
            averaged over heads and over start and end vectors.
        """
        rows, tokens, width = h_start.shape
        windows = rows // n_types
        both = torch.stack([h_start, h_end]).view(2, windows, n_types, tokens, width)
        across = both.transpose(2, 3).reshape(-1, n_types, width)  # [2 * W * T, K, H]
        mixed, weights = self.attend(across)
        mixed = mixed.view(2, windows, tokens, n_types, width).transpose(2, 3)
        mixed = mixed.reshape(2, rows, tokens, width)
        maps = weights.view(2, windows, tokens, n_types, n_types).mean(0)
        return mixed[0], mixed[1], maps

    def attend(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """x (torch.Tensor): [N, K, H] -> ([N, K, H] attended + residual, normalized;
        [N, K, K] attention weights averaged over heads)."""
        width = x.shape[-1]
        seq_first = x.transpose(0, 1)  # [K, N, H]
        attended, weights = F.multi_head_attention_forward(
            seq_first,
            seq_first,
            seq_first,
            width,
            self.n_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            None,
            None,
            False,
            self.dropout,
            self.out_proj_weight,
            self.out_proj_bias,
            training=self.training,
            need_weights=True,
            average_attn_weights=True,
        )
        residual = x + F.dropout(attended.transpose(0, 1), self.dropout, self.training)
        return F.layer_norm(residual, (width,), self.norm_weight, self.norm_bias), weights
