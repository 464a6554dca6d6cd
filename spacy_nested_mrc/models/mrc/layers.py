"""The layers the MRC heads are built of: a linear layer per type (Multi-NER's typed heads) and
the FiLM conditioning of token vectors by a question vector (packed questions)."""

import math
from typing import Optional, Tuple

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter


class TypedLinear(LazyModuleMixin, nn.Module):
    """A linear layer per type, its parameters with a type dimension, applied to every type at
    once. Sizes are inferred at first use (or from a loaded state dict).

    Grid mode, ``forward(x)``: x [B, K, T, I] (type k on dim 1) -> [B, K, T, O] by einsum.
    Pick mode, ``forward(x, types, n_types)``: x [P, I] with types [P] -> [P, O] by a batched
    matmul with each item's own weights; ``n_types`` sizes the layer if it is used first so.

    out_features (int): O.
    bias (bool): whether each type has a bias.
    """

    cls_to_become = None

    def __init__(self, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.out_features = out_features
        self.weight = UninitializedParameter()  # [K, I, O]
        self.bias = UninitializedParameter() if bias else None  # [K, O]

    def initialize_parameters(
        self, x: torch.Tensor, types: Optional[torch.Tensor] = None, n_types: int = 0
    ) -> None:
        if not self.has_uninitialized_params():
            return
        n = x.shape[1] if types is None else n_types
        bound = 1 / math.sqrt(x.shape[-1])  # nn.Linear's default initialization
        with torch.no_grad():
            self.weight.materialize((n, x.shape[-1], self.out_features))
            nn.init.uniform_(self.weight, -bound, bound)
            if self.bias is not None:
                self.bias.materialize((n, self.out_features))
                nn.init.uniform_(self.bias, -bound, bound)

    def forward(
        self, x: torch.Tensor, types: Optional[torch.Tensor] = None, n_types: int = 0
    ) -> torch.Tensor:
        """RETURNS (torch.Tensor): [B, K, T, O] in grid mode, [P, O] in pick mode."""
        if types is None:
            y = torch.einsum("bkti,kio->bkto", x, self.weight)
            return y if self.bias is None else y + self.bias[None, :, None, :]
        y = torch.bmm(x.unsqueeze(1), self.weight[types]).squeeze(1)
        return y if self.bias is None else y + self.bias[types]


class QuestionFiLM(LazyModuleMixin, nn.Module):
    """Feature-wise linear modulation of token vectors by a question vector:
    ``h * (1 + gamma(q)) + beta(q)``, gamma and beta linear in q. With linear heads after it,
    each question gets its own effective head weights (an added vector alone would only shift
    their bias). The width H is inferred at first use.
    """

    cls_to_become = None

    def __init__(self) -> None:
        super().__init__()
        self.weight = UninitializedParameter()  # [2H, H]
        self.bias = UninitializedParameter()  # [2H]

    def initialize_parameters(self, tokens: torch.Tensor, questions: torch.Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        width = questions.shape[-1]
        bound = 1 / math.sqrt(width)
        with torch.no_grad():
            self.weight.materialize((2 * width, width))
            self.bias.materialize((2 * width,))
            nn.init.uniform_(self.weight, -bound, bound)
            nn.init.uniform_(self.bias, -bound, bound)

    def modulation(self, questions: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """questions (torch.Tensor): [R, H]. RETURNS: the scale ``1 + gamma`` and the shift
        ``beta`` of each row, [R, H] each."""
        gamma, beta = nn.functional.linear(questions, self.weight, self.bias).chunk(2, dim=-1)
        return 1 + gamma, beta

    def forward(self, tokens: torch.Tensor, questions: torch.Tensor) -> torch.Tensor:
        """tokens (torch.Tensor): [R, T, H] or [R, H]; questions (torch.Tensor): [R, H].
        RETURNS (torch.Tensor): tokens' shape, row r modulated by its question.
        """
        scale, shift = self.modulation(questions)
        if tokens.dim() == 3:
            scale, shift = scale[:, None, :], shift[:, None, :]
        return tokens * scale + shift
