"""The MRC heads as a PyTorch module: start, end and start-end match classifiers over the
context tokens, shared by every label (MRC) or one set per label (Multi-NER, ``typed``: its
layers from ``layers.TypedLinear``), with packed questions sharing one sequence through
``layers.QuestionFiLM``."""

import math
from typing import Callable, NamedTuple, Optional, Tuple

import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter

from ..wrapping import Scored
from .blocks import MRCHeadsSettings
from .decode import MRCDecoder, candidate_pairs, pair_mask
from .layers import QuestionFiLM, TypedLinear
from .loss import MRCLoss


class Targets(NamedTuple):
    """What the heads learn from, for R rows of T tokens.

    gold_start, gold_end (torch.Tensor): [R, T] bool gold boundaries.
    gold_match (torch.Tensor): [R, T, T] bool gold spans.
    row_label (Optional[torch.Tensor]): [R] long, the label of each row.
    task_weights (Optional[torch.Tensor]): [K] float, the weight of each label's task; with
        ``row_label``, the loss is the weighted mean of the per-label losses.
    """

    gold_start: torch.Tensor
    gold_end: torch.Tensor
    gold_match: torch.Tensor
    row_label: Optional[torch.Tensor] = None
    task_weights: Optional[torch.Tensor] = None


class Packing(NamedTuple):
    """Where the rows of packed sequences read their questions.

    sequence (torch.Tensor): [R] long, the sequence of each row.
    question_pool (torch.Tensor): [S, Q, L] float, mean-pooling weights of the wordpieces of
        each question slot of a sequence.
    slot (torch.Tensor): [R] long, the question slot of each row.
    """

    sequence: torch.Tensor
    question_pool: torch.Tensor
    slot: torch.Tensor


class RowInputs(NamedTuple):
    """What the heads read of R rows of T context tokens, beside the encoder's hidden states.

    start_index, end_index (torch.Tensor): [R, T] long, the wordpiece of each token's start
        and end vector in its row's sequence.
    token_mask (torch.Tensor): [R, T] bool, the row's real tokens.
    n_types (int): K, the labels (a window's rows come label-minor with typed heads or a
        mixer).
    packing (Optional[Packing]): packed sequences: where each row reads its question.
    targets (Optional[Targets]): training: the gold the rows learn from.
    sequence (Optional[torch.Tensor]): [R] long, without packed questions, the sequence of
        each row where several rows' sentences share one sequence (each with its own
        question); None: row r reads sequence r. Packed, ``packing.sequence`` says it.
    """

    start_index: torch.Tensor
    end_index: torch.Tensor
    token_mask: torch.Tensor
    n_types: int = 1
    packing: Optional[Packing] = None
    targets: Optional[Targets] = None
    sequence: Optional[torch.Tensor] = None


class MRCHeads(nn.Module):
    """Heads over the encoder's hidden states of query sequences.

    Each row the heads score is one (window, label): its context tokens read for that label's
    question. A token's start vector is the hidden state of its first wordpiece, its end vector
    that of its last. The match classifier scores a pair (i, j) from ``[start_i; end_j]``
    through a two-layer MLP; its first layer is split into a start and an end projection, so
    pairs cost one addition each instead of a [R, T, T, 2H] tensor. Input sizes are inferred at
    first use, so every random weight is drawn by ``materialize``.

    Unpacked, row r is sequence r, ``[CLS] question [SEP] context [SEP]``. Packed, the rows of
    a label group share one sequence ``[CLS] q1 [SEP] ... qk [SEP] context [SEP]``: each row's
    token vectors are modulated (FiLM) by the mean of its own question's wordpieces.

    settings (MRCHeadsSettings): the heads' block (``spacy-nested-mrc.MRCHeads.v1``): the
        match MLP's hidden width and width vectors (N > 0 adds a learned vector per span
        width, 1 .. N tokens, wider spans sharing the last, zero at first; 0 scores a pair
        from its start and end vectors only, as in the paper), the match head's training
        pairs, the dropout on the token vectors and the match hidden layer, and the start
        and end heads' initial probability of a boundary (their bias set to its log-odds
        when the parameters are created, as for rare classes in Lin et al., 2017; 0 keeps
        PyTorch's default initialization).
    decoder (MRCDecoder): the probabilities above which a token starts/ends a span, and the
        most pairs matched at once; the span length limit the model sets in
        ``max_span_length`` (0: none), from the decoder and what training learned.
    loss (MRCLoss): the joint loss.
    typed (bool): one set of start/end/match parameters per label (a type dimension, applied
        by einsum); the rows must then come in whole windows, label-minor.
    packed (bool): rows read packed sequences (FiLM by their question).
    mixer (Optional[nn.Module]): mixes the label rows of each window before the heads (as
        Multi-NER's type attention): ``mixer(h_start, h_end, n_types)`` returns the new
        start and end vectors and attention maps [W, T, K, K].
    """

    # zero width vectors leave the match head as it was: heads saved before
    # ``match_widths`` existed load with them at zero (``load_heads_state``)
    optional_state = ("match_width.weight",)

    def __init__(
        self,
        settings: MRCHeadsSettings,
        *,
        decoder: MRCDecoder,
        loss: MRCLoss,
        typed: bool = False,
        packed: bool = False,
        mixer: Optional[nn.Module] = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        match_hidden = settings.match_hidden
        linear = TypedLinear if typed else nn.LazyLinear
        self.start = linear(1)
        self.end = linear(1)
        self.match_start = linear(match_hidden)
        self.match_end = linear(match_hidden, bias=False)
        self.match_out = TypedLinear(1) if typed else nn.LazyLinear(1)
        self.match_width = None
        if settings.match_widths > 0:
            self.match_width = nn.Embedding(settings.match_widths, match_hidden)
            nn.init.zeros_(self.match_width.weight)
        self.film = QuestionFiLM() if packed else None
        self.mixer = mixer
        self.dropout = nn.Dropout(settings.dropout)
        self.typed = typed
        self.decoder = decoder
        self.max_span_length = decoder.span_limit(0)
        self.loss = loss

    def forward(self, hidden: torch.Tensor, rows: RowInputs):
        """Score the context tokens of R rows; see ``token_vectors`` and ``score``.

        hidden (torch.Tensor): [S, L, H] encoder output of S sequences.
        rows (RowInputs): the rows' tokens, and their targets in training.
        RETURNS: with ``rows.targets``, ``Scored`` (see ``score``); else ``(pairs [P, 3] long
            (row, i, j), match_prob [P], start_prob [P], end_prob [P])`` for the predicted
            pairs.
        """
        if (rows.packing is not None and rows.targets is None and self.mixer is None
                and not self.training):
            return self.predict_packed(hidden, rows.start_index, rows.end_index,
                                       rows.token_mask, rows.packing, rows.n_types)
        h_start, h_end = self._mixed_vectors(hidden, rows)[:2]
        return self.score(h_start, h_end, rows.token_mask, rows.n_types, rows.targets)

    def attention(self, hidden: torch.Tensor, rows: RowInputs) -> torch.Tensor:
        """The mixer's attention maps between the labels of each window.

        hidden (torch.Tensor): [S, L, H] encoder output; rows (RowInputs): W windows of K
            label rows each.
        RETURNS (torch.Tensor): [W, T, K, K] float.
        RAISES (ValueError): without a mixer.
        """
        if self.mixer is None:
            raise ValueError("attention maps need heads with a mixer (Multi-NER)")
        return self._mixed_vectors(hidden, rows)[2].float()

    def _mixed_vectors(
        self, hidden: torch.Tensor, rows: RowInputs
    ) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        """Each row's start and end token vectors [R, T, H], mixed across the labels of its
        window where there is a mixer, with the mixer's attention maps (else None)."""
        h_start, h_end = self.token_vectors(hidden, rows.start_index, rows.end_index,
                                            rows.packing, rows.sequence)
        if self.mixer is None:
            return h_start, h_end, None
        return self.mixer(h_start, h_end, rows.n_types)

    def token_vectors(
        self,
        hidden: torch.Tensor,
        start_index: torch.Tensor,
        end_index: torch.Tensor,
        packing: Optional[Packing] = None,
        sequence: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """The start and end vectors of each row's context tokens.

        hidden (torch.Tensor): [S, L, H] encoder output.
        start_index, end_index (torch.Tensor): [R, T] long, the wordpiece (in the row's
            sequence) holding each context token's start / end vector.
        packing (Optional[Packing]): where packed rows read their questions; None when row r
            is sequence r or reads ``sequence[r]``.
        sequence (Optional[torch.Tensor]): [R] long, unpacked questions: the sequence of each
            row (``RowInputs.sequence``); None: row r is sequence r.
        RETURNS (Tuple[torch.Tensor, torch.Tensor]): [R, T, H] start and end vectors.
        """
        if packing is None and sequence is None:
            return _gather(hidden, start_index), _gather(hidden, end_index)
        if packing is None:
            return hidden[sequence[:, None], start_index], hidden[sequence[:, None], end_index]
        assert self.film is not None
        pool, sequence = packing.question_pool.to(hidden.dtype), packing.sequence
        questions = torch.bmm(pool, hidden)[sequence, packing.slot]  # [R, H]
        h_start = hidden[sequence[:, None], start_index]  # [R, T, H]
        h_end = hidden[sequence[:, None], end_index]
        return self.film(h_start, questions), self.film(h_end, questions)

    def score(
        self,
        h_start: torch.Tensor,
        h_end: torch.Tensor,
        token_mask: torch.Tensor,
        n_types: int = 1,
        targets: Optional[Targets] = None,
    ):
        """Score the context tokens of R rows from their token vectors.

        h_start, h_end (torch.Tensor): [R, T, H] start / end vectors. With typed heads the
            rows come in whole windows, label-minor: R = W * n_types, row r of label
            r % n_types.
        token_mask (torch.Tensor): [R, T] bool, real context tokens with wordpieces.
        n_types (int): K, the number of labels.
        targets (Optional[Targets]): the gold (training).
        RETURNS: in training ``Scored``, the logits of the context tokens and candidate pairs
            and their gold (``loss_of`` takes the loss); else ``(pairs [P, 3] long (row, i,
            j), match_prob [P], start_prob [P], end_prob [P])`` for the predicted pairs.
        """
        n_rows, n_tokens, width = h_start.shape
        k = n_types if self.typed else 1
        assert n_rows % k == 0, "typed heads take whole windows of rows"

        def grid(h: torch.Tensor) -> torch.Tensor:  # [R, T, H] -> [W, K, T, H], dropped out
            return self.dropout(h).reshape(n_rows // k, k, n_tokens, width)

        start_logits = self.start(grid(h_start)).reshape(n_rows, n_tokens)  # [R, T]
        end_logits = self.end(grid(h_end)).reshape(n_rows, n_tokens)  # [R, T]
        start_pred = self._opens(start_logits, self.decoder.start_threshold) & token_mask
        end_pred = self._opens(end_logits, self.decoder.end_threshold) & token_mask
        if targets is None:
            pairs = pair_mask(start_pred, end_pred, self.max_span_length).nonzero()  # [P, 3]
            match_logits = self._in_chunks(
                lambda part: self._match(h_start, h_end, part, k), pairs
            )
            rows, i, j = pairs.unbind(-1)
            return (
                pairs,
                torch.sigmoid(match_logits.float()),
                torch.sigmoid(start_logits[rows, i].float()),
                torch.sigmoid(end_logits[rows, j].float()),
            )
        pairs = candidate_pairs(
            self.settings.match_candidates,
            start_pred,
            end_pred,
            token_mask,
            targets.gold_start,
            targets.gold_end,
            self.max_span_length,
        ).nonzero()
        match_logits = self._match(h_start, h_end, pairs, k)
        rows, i, j = pairs.unbind(-1)
        tasks = None
        if targets.task_weights is not None and targets.row_label is not None:
            labels = targets.row_label
            token_tasks = labels[:, None].expand(-1, n_tokens)[token_mask]
            tasks = (token_tasks, labels[rows], targets.task_weights)
        return Scored(
            scores=(start_logits[token_mask], end_logits[token_mask], match_logits),
            targets=(
                targets.gold_start[token_mask],
                targets.gold_end[token_mask],
                targets.gold_match[rows, i, j],
                tasks,
            ),
        )

    def loss_of(self, scored: Scored) -> torch.Tensor:
        """The joint loss of a training pass (``MRCLoss``).

        scored (Scored): from ``score``: scores ``(start_logits [N], end_logits [N],
            match_logits [P])`` over the N context tokens and P candidate pairs, targets
            ``(gold_start [N], gold_end [N], gold_match [P], tasks)``.
        RETURNS (torch.Tensor): [] the loss.
        """
        start_logits, end_logits, match_logits = scored.scores
        gold_start, gold_end, gold_match, tasks = scored.targets
        return self.loss(
            start_logits, end_logits, gold_start, gold_end, match_logits, gold_match, tasks
        )

    def predict_packed(
        self,
        hidden: torch.Tensor,
        start_index: torch.Tensor,
        end_index: torch.Tensor,
        token_mask: torch.Tensor,
        packing: Packing,
        n_types: int = 1,
    ):
        """Prediction for packed rows (no mixer) without a per-row copy of the token vectors:
        the same outputs as ``score(*token_vectors(...))`` in eval mode, for a fraction of
        the time when many labels share a sequence.

        A linear head after FiLM is a linear head with per-row weights,
        ``w . (h * s_r + t_r) + b = (w * s_r) . h + (w . t_r + b)``, so every row's start
        and end logits come from one [S, L, H] x [S, H, Q] product with its sequence's
        hidden states; the match projections are taken at the predicted pairs only.

        hidden (torch.Tensor): [S, L, H] encoder output; packing: see ``Packing``.
        start_index, end_index, token_mask (torch.Tensor): [R, T], as in ``token_vectors``.
        RETURNS: ``(pairs [P, 3], match_prob [P], start_prob [P], end_prob [P])`` as ``score``.
        """
        assert self.film is not None
        sequence, slot = packing.sequence, packing.slot
        pool = packing.question_pool.to(hidden.dtype)
        scale, shift = self.film.modulation(torch.bmm(pool, hidden)[sequence, slot])  # [R, H]
        k = n_types if self.typed else 1
        row_type = torch.arange(sequence.shape[0], device=hidden.device) % k  # [R]

        def logits(head: nn.Module, index: torch.Tensor) -> torch.Tensor:  # -> [R, T]
            if self.typed:  # weight [K, H, 1], bias [K, 1]
                weight, bias = head.weight[row_type, :, 0], head.bias[row_type, 0]
            else:  # weight [1, H], bias [1]
                weight, bias = head.weight.expand(len(row_type), -1), head.bias
            per_slot = hidden.new_zeros(pool.shape[0], pool.shape[1], hidden.shape[-1])
            per_slot[sequence, slot] = weight * scale  # [S, Q, H]
            by_slot = torch.bmm(hidden, per_slot.transpose(1, 2))  # [S, L, Q]
            return by_slot[sequence[:, None], index, slot[:, None]] + (
                (weight * shift).sum(-1) + bias
            )[:, None]

        start_logits, end_logits = logits(self.start, start_index), logits(self.end, end_index)
        start_pred = self._opens(start_logits, self.decoder.start_threshold) & token_mask
        end_pred = self._opens(end_logits, self.decoder.end_threshold) & token_mask
        pairs = pair_mask(start_pred, end_pred, self.max_span_length).nonzero()  # [P, 3]
        rows, i, j = pairs.unbind(-1)

        def match_logits(part: torch.Tensor) -> torch.Tensor:  # pairs [C, 3] -> [C]
            r, a, b = part.unbind(-1)

            def projected(head: nn.Module, index: torch.Tensor) -> torch.Tensor:  # -> [C, M]
                vectors = hidden[sequence[r], index] * scale[r] + shift[r]  # [C, H]
                return self._linear(head, vectors, row_type[r], k)

            proj = projected(self.match_start, start_index[r, a])
            proj = proj + projected(self.match_end, end_index[r, b])
            return self._match_out(proj, part, k)

        return (
            pairs,
            torch.sigmoid(self._in_chunks(match_logits, pairs).float()),
            torch.sigmoid(start_logits[rows, i].float()),
            torch.sigmoid(end_logits[rows, j].float()),
        )

    @staticmethod
    def _opens(logits: torch.Tensor, threshold: float) -> torch.Tensor:
        """RETURNS (torch.Tensor): [R, T] bool, the tokens whose boundary probability
        (``logits`` [R, T]) is over ``threshold``."""
        return torch.sigmoid(logits.float()) > threshold

    def _in_chunks(
        self, logits_of: Callable[[torch.Tensor], torch.Tensor], pairs: torch.Tensor
    ) -> torch.Tensor:
        """Match logits [P] of the pairs [P, 3], ``logits_of`` taking at most
        ``max_match_pairs`` pairs at a time (0: all at once), so the pair vectors [C, H] of a
        pass whose boundary heads let many pairs through stay bounded in memory."""
        step = self.decoder.max_match_pairs or max(1, len(pairs))
        if len(pairs) <= step:
            return logits_of(pairs)
        return torch.cat([logits_of(pairs[c : c + step]) for c in range(0, len(pairs), step)])

    def _linear(self, head: nn.Module, x: torch.Tensor, types: torch.Tensor, k: int):
        """A head on vectors x [P, I], of types [P] when typed. RETURNS: [P, O]."""
        return head(x, types, k) if self.typed else head(x)

    def _match(
        self, h_start: torch.Tensor, h_end: torch.Tensor, pairs: torch.Tensor, k: int
    ) -> torch.Tensor:
        """Match logits [P] of the pairs [P, 3] (row, i, j) from the start and end vectors
        [R, T, H]: the match projections are taken where a pair starts or ends only
        (``_project``), not over every token of every row, of which the candidate pairs
        take a few."""
        rows, i, j = pairs.unbind(-1)
        proj = self._project(self.match_start, h_start, rows, i, k)
        proj = proj + self._project(self.match_end, h_end, rows, j, k)
        return self._match_out(proj, pairs, k)

    def _project(
        self, head: nn.Module, h: torch.Tensor, rows: torch.Tensor, index: torch.Tensor, k: int
    ) -> torch.Tensor:
        """``head`` on the vectors h [R, T, H] at the positions (rows, index) [P], dropped
        out, each distinct position once (as a projection of all of h, indexed, gives it;
        the dropout draws for the positions taken only, from the same distribution).

        RETURNS (torch.Tensor): [P, M].
        """
        n_tokens, width = h.shape[1], h.shape[2]
        positions, inverse = torch.unique(rows * n_tokens + index, return_inverse=True)  # [U]
        vectors = self.dropout(h.reshape(-1, width)[positions])  # [U, H]
        return self._linear(head, vectors, positions // n_tokens % k, k)[inverse]

    def _match_out(self, proj: torch.Tensor, pairs: torch.Tensor, k: int) -> torch.Tensor:
        """Match logits [P] of the pairs [P, 3] (row, i, j) from their summed start and end
        projections [P, M] (and their widths' vectors, with ``match_widths``)."""
        rows, i, j = pairs.unbind(-1)
        if self.match_width is not None:
            widths = (j - i).clamp(max=self.match_width.num_embeddings - 1)  # [P], width - 1
            proj = proj + self.match_width(widths).to(proj.dtype)
        hidden = self.dropout(nn.functional.gelu(proj))
        return self._linear(self.match_out, hidden, rows % k, k).squeeze(-1)

    def materialize(self, hidden_size: int, device: torch.device, n_types: int = 1) -> None:
        """Create the lazily sized parameters for encoders of width ``hidden_size`` (and
        ``n_types`` labels, for typed heads); new start and end biases get the log-odds of
        ``boundary_prior``."""
        new = isinstance(self.start.weight, UninitializedParameter)
        with torch.no_grad():
            self.forward(*dummy_inputs(hidden_size, device, n_types, self.film is not None))
            prior = self.settings.boundary_prior
            if new and prior > 0:
                log_odds = math.log(prior / (1 - prior))
                self.start.bias.fill_(log_odds)
                self.end.bias.fill_(log_odds)


def dummy_inputs(
    hidden_size: int, device: torch.device, n_types: int, packed: bool
) -> Tuple[torch.Tensor, RowInputs]:
    """Inputs of one window of ``n_types`` rows with one token, to size lazy parameters."""
    hidden = torch.zeros(n_types, 1, hidden_size, device=device)
    index = torch.zeros(n_types, 1, dtype=torch.long, device=device)
    packing = None
    if packed:
        slots = torch.arange(n_types, device=device)
        hidden = hidden[:1]
        packing = Packing(torch.zeros_like(slots), torch.ones(1, n_types, 1, device=device),
                          slots)
    return hidden, RowInputs(index, index, index.bool(), n_types, packing)


def _gather(hidden: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of ``hidden`` [R, L, H] at ``index`` [R, T] -> [R, T, H]."""
    return hidden.gather(1, index.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
