"""The Locate-and-Label heads as a PyTorch module: span proposal filter, boundary regressor and
entity classifier over token vectors."""

from typing import Callable, Iterator, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ...spans import best_match
from ..wrapping import Scored
from .blocks import LocateLabelHeadsSettings, Seeds
from .decode import SoftNMSDecoder, regress_spans, top_per_doc
from .loss import LocateLabelLoss, is_positive, soft_example_weights


class LocateLabelHeads(nn.Module):
    """The three heads of the two-stage identifier, each a two-layer MLP with GELU.

    A span is represented by its max-pooled token vectors between two boundary vectors:
    the filter and the classifier use the span's own first and last tokens (inner boundary),
    the regressor the tokens just before and after it (outer boundary; a zero vector beyond
    the doc). Every parameter is created lazily, its input width set by ``materialize`` at
    initialization (so the weights are drawn there, from the RNG the caller seeds) or by a
    loaded state dict; the classifier's number of classes is set by ``set_classes``.

    settings (LocateLabelHeadsSettings): the heads' block (``LocateLabelHeads.v1``): the
        MLPs' hidden width and dropout, ``use_filter`` (score seed spans and keep those above
        the decoder's ``filter_threshold``; else keep all and skip the filter's loss),
        ``use_regressor`` (move seed spans by the regressed offsets; else keep their
        boundaries and skip the regressor's loss) and ``max_span_tokens`` (token vectors
        gathered at once to pool spans; memory only: a span of W tokens gathers W).
    seeds (Seeds): the seed block (``SeedSpans.v1``), of which the heads read the
        classifier's examples: ``classifier_iou`` (alpha_2, from which an adjusted span takes
        its label in training), ``use_soft_examples`` and ``soft_eta`` (IoU weights, eq. 11)
        and ``classifier_gold`` (the gold entities are examples too, so the classifier sees
        every type's exact spans while the regressor is still poor).
    decoder (SoftNMSDecoder): in prediction, the least filter probability of a proposal
        (``filter_threshold``) and the most proposals of one doc, those of highest filter
        probability (``max_proposals``, with ``use_filter``; 0 for no cap).
    loss (LocateLabelLoss): the joint loss.
    """

    def __init__(
        self,
        settings: LocateLabelHeadsSettings,
        seeds: Seeds,
        *,
        decoder: SoftNMSDecoder,
        loss: LocateLabelLoss,
    ) -> None:
        super().__init__()
        self.filter = _mlp(settings.hidden_width, 1, settings.dropout)
        self.regressor = _mlp(settings.hidden_width, 2, settings.dropout)
        self.classifier = _mlp(settings.hidden_width, 1, settings.dropout)
        self.settings = settings
        self.seeds = seeds
        self.decoder = decoder
        self.loss = loss

    def set_classes(self, n_classes: int) -> None:
        """Size the classifier's output for ``n_classes`` classes (the labels and "none")."""
        old = self.classifier[-1]
        if old.out_features != n_classes:
            self.classifier[-1] = nn.LazyLinear(
                n_classes, device=old.weight.device, dtype=old.weight.dtype
            )

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load weights, first sizing the classifier's output as the saved one."""
        weight = state_dict.get(f"classifier.{len(self.classifier) - 1}.weight")
        if weight is not None:
            self.set_classes(int(weight.shape[0]))
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def materialize(self, width: int, device: torch.device) -> None:
        """Create the lazily sized parameters for token vectors of width ``width``."""
        spans = torch.zeros(1, 3 * width, device=device)
        with torch.no_grad():
            for head in (self.filter, self.regressor, self.classifier):
                head.to(device)
                head(spans)

    @property
    def materialized(self) -> bool:
        """RETURNS (bool): whether the input sizes are known (initialized or loaded)."""
        return not nn.parameter.is_lazy(self.filter[1].weight)

    def forward(
        self,
        tokens: List[torch.Tensor],
        seed_doc: torch.Tensor,
        seed_start: torch.Tensor,
        seed_end: torch.Tensor,
        lengths: torch.Tensor,
        filter_target: Optional[torch.Tensor] = None,
        filter_weight: Optional[torch.Tensor] = None,
        positive: Optional[torch.Tensor] = None,
        offset_target: Optional[torch.Tensor] = None,
        gold: Optional[np.ndarray] = None,
        label_mask: Optional[np.ndarray] = None,
    ):
        """Training: the loss of the sampled seed spans. Prediction: the labelled proposals.

        tokens (List[torch.Tensor]): per doc, [N_d, H] token vectors.
        seed_doc, seed_start, seed_end (torch.Tensor): [S] long, the seed spans.
        lengths (torch.Tensor): [D] long, tokens per doc.
        filter_target, filter_weight (Optional[torch.Tensor]): [S] the filter's 0/1 targets
            and soft-example weights (training).
        positive (Optional[torch.Tensor]): [S] bool, seeds matched to an entity with IoU >=
            alpha_1, which the regressor learns from (training).
        offset_target (Optional[torch.Tensor]): [S, 4] float, the (left, right) offsets to
            each seed's gold entity, and that entity's (start, end) (training).
        gold (Optional[np.ndarray]): [G, 4] int (doc, start, end, label id) on the CPU: the
            gold entities, to label the adjusted spans (training).
        label_mask (Optional[np.ndarray]): [D, N, C] bool on the CPU, the labels each token of
            each doc is annotated for (training, text of corpora that annotate some labels
            only): the classifier of a span chooses between "none" and the labels annotated
            at its first token only. None: every label everywhere.
        RETURNS: in training ``Scored``, the scores of the filter, regressor and classifier
            and their gold (``loss_of`` takes the loss); else ``(passed_doc [F], kept_doc
            [K], doc [P], start [P], end [P], label [P], score [P])``: the doc of each of
            the F seed spans that passed the filter, of the K proposals kept of them (at
            most ``max_proposals`` a doc), and the P proposals classified as an entity, with their
            label id (from 0) and probability.
        """
        table = _token_rows(tokens)
        if gold is None:
            return self._predict(table, seed_doc, seed_start, seed_end, lengths)
        assert filter_target is not None and filter_weight is not None
        assert positive is not None and offset_target is not None
        none = table.rows.new_zeros(0)  # the score of a part switched off: no gradient
        filter_logits = positive_offsets = none
        seed_heads = [(self.filter, False)] if self.settings.use_filter else []
        if self.settings.use_regressor:
            seed_heads.append((self.regressor, True))
        outputs = self._heads(seed_heads, table, seed_doc, seed_start, seed_end)
        if self.settings.use_filter:
            filter_logits = outputs.pop(0).squeeze(-1)
        starts, ends = seed_start, seed_end
        if self.settings.use_regressor:
            offsets = outputs.pop(0)
            positive_offsets = offsets[positive]
            starts, ends = regress_spans(seed_start, seed_end, offsets, lengths[seed_doc])
        docs = seed_doc
        if self.seeds.classifier_gold and len(gold):
            extra = torch.as_tensor(gold[:, :3], dtype=torch.long, device=seed_doc.device)
            docs = torch.cat([docs, extra[:, 0]])
            starts, ends = torch.cat([starts, extra[:, 1]]), torch.cat([ends, extra[:, 2]])
        classes, weights = self._classifier_targets(docs, starts, ends, gold)
        classifier_logits = self._head(self.classifier, table, docs, starts, ends, False)
        allowed = None
        if label_mask is not None:
            at = starts.clamp(min=0).cpu().numpy()
            at = np.minimum(at, label_mask.shape[1] - 1)
            chosen = label_mask[docs.cpu().numpy(), at]  # [A, C]
            chosen = np.concatenate([np.ones((len(chosen), 1), dtype=bool), chosen], axis=1)
            allowed = torch.as_tensor(chosen, device=classifier_logits.device)
        target = offset_target[positive]
        return Scored(
            scores=(filter_logits, positive_offsets, classifier_logits),
            targets=(
                filter_target,
                filter_weight,
                target[:, :2],
                seed_start[positive],
                seed_end[positive],
                target[:, 2],
                target[:, 3],
                classes,
                weights,
                allowed,
            ),
        )

    def loss_of(self, scored: Scored) -> torch.Tensor:
        """The joint loss of a training pass (eq. 17, ``LocateLabelLoss``).

        scored (Scored): from ``forward``: scores ``(filter_logits [S], offsets [P, 2],
            classifier_logits [A, C + 1])`` of the S seed spans, the P positive ones and the
            A adjusted spans (a part switched off has an empty score), and targets
            ``(filter_target [S], filter_weight [S], offset_target [P, 2], seed_start [P],
            seed_end [P], gold_start [P], gold_end [P], classes [A], class_weights [A],
            allowed [A, C + 1] bool or None)``.
        RETURNS (torch.Tensor): [] the loss.
        """
        filter_logits, offsets, classifier_logits = scored.scores
        (filter_target, filter_weight, offset_target, starts, ends, gold_starts, gold_ends,
         classes, class_weights, allowed) = scored.targets  # fmt: skip
        zero = classifier_logits.sum() * 0.0
        filter_loss = regression_loss = zero
        if self.settings.use_filter:
            filter_loss = self.loss.filter(filter_logits, filter_target, filter_weight)
        if self.settings.use_regressor:
            regression_loss = self.loss.regression(
                offsets, offset_target, starts, ends, gold_starts, gold_ends
            )
        classifier_loss = self.loss.classifier(classifier_logits, classes, class_weights,
                                               allowed)
        return self.loss(filter_loss, regression_loss, classifier_loss)

    def filter_probs(
        self,
        tokens: List[torch.Tensor],
        seed_doc: torch.Tensor,
        seed_start: torch.Tensor,
        seed_end: torch.Tensor,
    ) -> np.ndarray:
        """The filter's probability of each seed span as prediction computes it (no dropout,
        no gradient), to choose the hard negatives of a training pass.

        tokens (List[torch.Tensor]): per doc, [N_d, H] token vectors.
        seed_doc, seed_start, seed_end (torch.Tensor): [S] long, the seed spans.
        RETURNS (np.ndarray): [S] float32.
        """
        training = self.training
        self.eval()
        try:
            with torch.no_grad():
                table = _token_rows([t.detach() for t in tokens])
                logits = self._filter_by_parts(table, seed_doc, seed_start, seed_end)
                return torch.sigmoid(logits.float()).cpu().numpy()
        finally:
            self.train(training)

    def _predict(
        self,
        table: "TokenRows",
        doc: torch.Tensor,
        start: torch.Tensor,
        end: torch.Tensor,
        lengths: torch.Tensor,
    ) -> Tuple[torch.Tensor, ...]:
        passed_doc = doc
        if self.settings.use_filter:
            logits = self._filter_by_parts(table, doc, start, end)
            probs = torch.sigmoid(logits.float())
            keep = (probs >= self.decoder.filter_threshold).nonzero().squeeze(-1)
            passed_doc = doc[keep]
            if 0 < self.decoder.max_proposals < len(keep):
                keep = keep[top_per_doc(passed_doc, probs[keep], self.decoder.max_proposals)]
            doc, start, end = doc[keep], start[keep], end[keep]
        kept_doc = doc
        if self.settings.use_regressor:
            offsets = self._head(self.regressor, table, doc, start, end, True)
            start, end = regress_spans(start, end, offsets, lengths[doc])
        logits = self._head(self.classifier, table, doc, start, end, False)
        probs = torch.softmax(logits.float(), dim=-1)
        score, label = probs[:, 1:].max(dim=-1)
        entity = probs.argmax(dim=-1) > 0
        return (
            passed_doc,
            kept_doc,
            doc[entity],
            start[entity],
            end[entity],
            label[entity],
            score[entity],
        )

    def _filter_by_parts(
        self, table: "TokenRows", doc: torch.Tensor, start: torch.Tensor, end: torch.Tensor
    ) -> torch.Tensor:
        """The filter's logits [P] of P seed spans in prediction, its first layer taken by
        parts: ``W [l; m; r] = W_l l + W_m m + W_r r``, with ``W_l`` and ``W_r`` applied once
        per token row and their products gathered per span, instead of the span vectors
        [P, 3H] through the whole layer (about ten seed spans a token: a third of the
        first layer's work, and no concatenation; the bias goes in with ``W_l l``, once per
        token). The same function as ``_head`` (dropout is off in prediction), to float
        rounding. Under autocast the token rows are cast to its dtype once, before the
        pooling: the maximum commutes with the rounding, so the products get the same inputs
        from half the bytes, and no [P, O] intermediate goes back to float32. The spans are
        taken a width at a time, each width's window maxima computed once over the token
        rows (``_by_width``) and its spans scored in chunks of at most ``max_span_tokens``
        pooled tokens, rather than the sliding maxima computed anew for every chunk.

        table (TokenRows): the docs' token rows, from ``_token_rows``.
        doc, start, end (torch.Tensor): [P] long, the seed spans (non-empty, end exclusive).
        """
        if self.training:  # dropout on: the whole head as in training
            return self._head(self.filter, table, doc, start, end, False).squeeze(-1)
        rows = table.rows  # [R, H]
        device = rows.device.type
        if torch.is_autocast_enabled(device):
            rows = rows.to(torch.get_autocast_dtype(device))
        first, last = self.filter[1], self.filter[4]
        by_part = first.weight.view(first.weight.shape[0], 3, rows.shape[-1])  # [O, 3, H]
        # [R, O]: each row's products, as a span's first token (with the bias) and as its last
        left = torch.addmm(first.bias, rows, by_part[:, 0].T)
        right = rows @ by_part[:, 2].T

        logits: Optional[torch.Tensor] = None
        for w, mine, windows in _by_width(rows, end - start):
            step = max(1, self.settings.max_span_tokens // w)
            for i in range(0, len(mine), step):
                part = mine[i : i + step]
                at = table.row_of(doc[part], start[part] + 1)  # [p] each span's first row
                ends = _gather(left, at) + _gather(right, at + (w - 1))  # [p, O]
                hidden = torch.addmm(ends, _gather(windows, at), by_part[:, 1].T)
                chunk = last(self.filter[2](hidden)).squeeze(-1)  # [p]
                if logits is None:
                    logits = chunk.new_empty(len(doc))
                logits[part] = chunk
        return logits if logits is not None else rows.new_zeros(0)

    def _classifier_targets(
        self, doc: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, gold: np.ndarray
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Class ids [S] (0: none) and weights [S] of the adjusted spans: each takes the label
        of its best-matching gold entity in its doc when their IoU >= alpha_2."""
        index, overlap = best_match(
            starts.cpu().numpy(),
            ends.cpu().numpy(),
            gold[:, 1],
            gold[:, 2],
            doc.cpu().numpy(),
            gold[:, 0],
        )
        labelled = is_positive(overlap, self.seeds.classifier_iou)
        classes = np.zeros(len(index), dtype=np.int64)
        classes[labelled] = gold[index[labelled], 3] + 1
        if self.seeds.use_soft_examples:
            weights = soft_example_weights(overlap, self.seeds.classifier_iou, self.seeds.soft_eta)
        else:
            weights = np.ones(len(overlap), dtype=np.float32)
        device = starts.device
        return (
            torch.as_tensor(classes, dtype=torch.long, device=device),
            torch.as_tensor(weights, dtype=torch.float32, device=device),
        )

    def _head(
        self,
        head: nn.Module,
        table: "TokenRows",
        doc: torch.Tensor,
        start: torch.Tensor,
        end: torch.Tensor,
        outer: bool,
    ) -> torch.Tensor:
        """A head's output [P, O] for P spans: ``head([left; max-pool; right])``, in chunks
        (``_in_chunks``)."""
        return self._heads([(head, outer)], table, doc, start, end)[0]

    def _heads(
        self,
        heads: List[Tuple[nn.Module, bool]],
        table: "TokenRows",
        doc: torch.Tensor,
        start: torch.Tensor,
        end: torch.Tensor,
    ) -> List[torch.Tensor]:
        """The outputs [P, O_k] of several heads over the same P spans (``_head`` of each,
        with its ``outer`` boundary), the spans' max-pool computed once per chunk for all of
        them: the filter and the regressor read the same seed spans in training."""
        if not heads:
            return []
        sizes = [int(head[-1].out_features) for head, _ in heads]

        def score(part: slice) -> torch.Tensor:  # [p, sum(O_k)]
            d, s, e = doc[part], start[part], end[part]
            pooled = _max_pooled(table, d, s, e)  # [p, H]
            return torch.cat(
                [head(_span_vectors(table, d, s, e, outer, pooled)) for head, outer in heads],
                dim=-1,
            )

        return list(self._in_chunks(doc, start, end, score).split(sizes, dim=-1))

    def _in_chunks(
        self,
        doc: torch.Tensor,
        start: torch.Tensor,
        end: torch.Tensor,
        score: Callable[[slice], torch.Tensor],
    ) -> torch.Tensor:
        """``score(part)`` [p, ...] of the spans in each ``part``, the spans taken in chunks
        that gather at most ``max_span_tokens`` token vectors, into [P, ...]. Each chunk's
        output is copied into one tensor allocated after the first chunk, rather than kept in
        a list to concatenate: small outputs left between the chunks' large temporaries kept
        the heap from reusing them (the peak of a long doc: docs/results.md, "Long documents and
        memory")."""
        width = int((end - start).max()) if len(start) else 1
        step = max(1, self.settings.max_span_tokens // width)
        out: Optional[torch.Tensor] = None
        for i in range(0, max(1, len(doc)), step):
            part = slice(i, i + step)
            chunk = score(part)
            if out is None:
                out = chunk.new_empty((len(doc), *chunk.shape[1:]))
            out[part] = chunk
        assert out is not None  # the loop runs at least once
        return out


def _mlp(hidden_width: int, n_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.LazyLinear(hidden_width),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.LazyLinear(n_out),
    )


class TokenRows(NamedTuple):
    """The token vectors of a pass's docs as the rows of one table, one zero row between two
    docs and at both ends: a zero row, doc 0's tokens, a zero row, doc 1's tokens, ..., a
    zero row. Doc d's token i is row ``first[d] + i + 1``; the zero rows are the boundary
    beyond each doc (the row after a doc is the one before the next). No doc is padded to
    the longest: the heads' per-token work and the sliding maxima cover the docs' own
    tokens, whatever the spread of their lengths.

    rows (torch.Tensor): [R, H], R = sum(N_d + 1) + 1.
    first (torch.Tensor): [D] long, the row before each doc's first token.
    """

    rows: torch.Tensor
    first: torch.Tensor

    def row_of(self, doc: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """The rows [*S] of the positions (0: the zero row before the doc, i + 1: its token
        i) in the docs, ``doc`` and ``position`` long and broadcast to one shape S."""
        return self.first[doc] + position

    def at(self, doc: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """The vectors [*S, H] at the positions (``row_of``) in the docs."""
        return _gather(self.rows, self.row_of(doc, position))


def _token_rows(tokens: List[torch.Tensor]) -> TokenRows:
    """Per-doc token vectors [N_d, H] -> ``TokenRows`` (one concatenation). An empty doc may
    come as [0, 0]."""
    width = max(t.shape[-1] for t in tokens)
    zero = tokens[0].new_zeros((1, width))
    parts = [zero]
    for doc_tokens in tokens:
        if len(doc_tokens):
            parts.append(doc_tokens)
        parts.append(zero)
    sizes = torch.as_tensor([len(t) + 1 for t in tokens], device=zero.device)
    return TokenRows(torch.cat(parts), torch.cumsum(sizes, 0) - sizes)


# the share of the cells of the sliding maxima (the token rows times the widest span) from
# which spans are pooled by sliding rather than by gathering their token vectors: the two
# are level when the gathered cells are between a half and three quarters of the slid ones,
# and past that the large gathers outgrow the heap and fault in fresh pages each time
# (bench/pool_paths.py; docs/results.md, "Inference against the length-sorted encoder")
_SLIDING_FROM = 0.5


def _max_pooled(
    table: TokenRows, doc: torch.Tensor, start: torch.Tensor, end: torch.Tensor
) -> torch.Tensor:
    """[P, H]: the max-pool of each span's token vectors.

    In training each span's tokens are gathered, padded to the widest span, and pooled
    (``_GatheredMax``, with its gradient). In prediction (no gradient) the spans are taken a
    width at a time, either gathering just their own tokens (sum of the widths cells) or,
    with many spans (the filter scores about ten seed spans a token), from the maxima of
    every window of each width over the token rows (W passes over [R, H]), which is taken
    from ``_SLIDING_FROM`` of those cells. All give the same maxima exactly.
    """
    widths = end - start
    width = int(widths.max()) if len(start) else 1
    steps = torch.arange(width, device=start.device)
    if table.rows.requires_grad:
        # positions past a span's end repeat its last token, which leaves the maximum unchanged
        positions = torch.minimum(start[:, None] + steps[None, :], end[:, None] - 1)  # [P, W]
        return _GatheredMax.apply(table.rows, table.row_of(doc[:, None], positions + 1))
    pooled = table.rows.new_empty((len(start), table.rows.shape[-1]))
    if int(widths.sum()) < _SLIDING_FROM * width * len(table.rows):
        for w in torch.unique(widths).tolist():
            mine = (widths == w).nonzero().squeeze(-1)
            at = table.row_of(doc[mine, None], start[mine, None] + 1 + steps[None, :w])  # [K, w]
            pooled.index_copy_(0, mine, _gather(table.rows, at).amax(dim=1))
        return pooled
    for _, mine, windows in _by_width(table.rows, widths):
        pooled.index_copy_(0, mine, _gather(windows, table.row_of(doc[mine], start[mine] + 1)))
    return pooled


def _by_width(
    rows: torch.Tensor, widths: torch.Tensor
) -> Iterator[Tuple[int, torch.Tensor, torch.Tensor]]:
    """The spans by width, each width with the maxima of every window of it over the token
    rows (W passes over [R, H], each from the one before).

    rows (torch.Tensor): [R, H], ``TokenRows.rows``.
    widths (torch.Tensor): [P] long, the spans' widths (>= 1).
    YIELDS (Tuple[int, torch.Tensor, torch.Tensor]): for each width w that some span has,
        w, the indices [K] of its spans and the window maxima [R + 1 - w, H], row r the
        maximum of ``rows[r : r + w]`` (a span reads the row of its first token; its
        window never reaches past its doc's last token).
    """
    width = int(widths.max()) if len(widths) else 0
    windows = rows
    for w in range(1, width + 1):
        if w > 1:
            windows = torch.maximum(windows[:-1], rows[w - 1 :])
        mine = (widths == w).nonzero().squeeze(-1)
        if len(mine):
            yield w, mine, windows


class _GatheredMax(torch.autograd.Function):
    """``table[rows].amax(dim=1)``: the maxima [P, H] of the rows [P, W] of ``table`` [R, H],
    with ``amax``'s gradient (shared equally among tied rows) computed in fewer passes than
    autograd takes for the gather and the maximum: one compare, kept in the table's dtype so
    that the ties are counted by a float sum, and one ``index_add_`` of the [P, W, H]
    gradient into [R, H]. The same values and gradient, to the last bit."""

    @staticmethod
    def forward(ctx, table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        gathered = table.index_select(0, rows.reshape(-1)).view(*rows.shape, table.shape[-1])
        maxima = gathered.amax(dim=1)  # [P, H] of [P, W, H]
        ctx.save_for_backward(gathered, maxima, rows)
        ctx.n_rows = table.shape[0]
        return maxima

    @staticmethod
    def backward(ctx, d_maxima: torch.Tensor) -> Tuple[torch.Tensor, None]:
        gathered, maxima, rows = ctx.saved_tensors
        tied = (gathered == maxima.unsqueeze(1)).to(d_maxima.dtype)  # [P, W, H]
        d_gathered = tied.mul_((d_maxima / tied.sum(dim=1)).unsqueeze(1))
        d_table = d_maxima.new_zeros((ctx.n_rows, d_maxima.shape[-1]))
        d_table.index_add_(0, rows.reshape(-1), d_gathered.view(-1, d_maxima.shape[-1]))
        return d_table, None


def _gather(table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``table[rows]``: the rows [*S, H] of ``table`` [R, H] at ``rows`` [*S] (long), by one
    ``index_select``, which computes no offset per element as advanced indexing does. The
    same values; where a row is gathered more than once, its gradients are summed in
    another order (in bf16 the rounding can differ)."""
    return table.index_select(0, rows.reshape(-1)).view(*rows.shape, table.shape[-1])


def _span_vectors(
    table: TokenRows,
    doc: torch.Tensor,
    start: torch.Tensor,
    end: torch.Tensor,
    outer: bool,
    pooled: torch.Tensor,
) -> torch.Tensor:
    """Span vectors [P, 3H]: the boundary tokens around the max-pooled tokens of each span.

    table (TokenRows): the docs' token rows, from ``_token_rows``.
    doc, start, end (torch.Tensor): [P] long, the spans (non-empty, end exclusive).
    outer (bool): the tokens just outside the span (start - 1, end), else its own first and
        last tokens (start, end - 1).
    pooled (torch.Tensor): [P, H] the spans' ``_max_pooled`` (computed once by the caller
        for every head that reads the same spans).
    """
    if outer:
        left, right = table.at(doc, start), table.at(doc, end + 1)
    else:
        left, right = table.at(doc, start + 1), table.at(doc, end)
    return torch.cat([left, pooled, right], dim=-1)
