"""The rows the MRC heads score: a batch of docs tokenized once and expanded into encoder
sequences per (doc, window, sequence kind) and rows per (doc, window, label), with the gold
boundaries and pairs in training, and the predicted pairs mapped back to doc spans. In
prediction, sentences read alone share sequences (``reads_packed``): each (doc, window,
sequence kind) is then a segment of a sequence, attending only to itself; where the questions
are read apart from the text (``questions.attend_to_text = false``), the segments of a
sequence share one copy of their questions, in training too (``trains_packed``)."""

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from spacy.tokens import Doc
from thinc.api import ArgsKwargs, Model, get_torch_default_device

from ...encoder.hf import first_position_id, get_tokenizer, reads_shared_prefix, to_device
from ...encoder.onnx import onnx_encoder
from ...errors import Errors, Warnings
from ...spans import (
    WordpieceAlignment,
    align_wordpieces,
    sentence_starts,
    shorten_long_tokens,
)
from ...types import SETTINGS
from ...windows import Window, owned_by
from .layout import QueryLayout
from .torch_module import Packing, RowInputs, Targets


@dataclass
class MRCRows:
    """The encoder sequences of a batch and the rows the heads score: one row per (doc,
    window, label). Unpacked, row r is sequence r; packed, the rows of a (doc, window, label
    group) share one sequence.

    input_ids, attention_mask, token_type_ids (np.ndarray): [S, L], the sequences.
    start_index, end_index (np.ndarray): [R, T] wordpiece of each window token's start/end,
        in the row's sequence.
    token_mask (np.ndarray): [R, T] bool, tokens that exist and have wordpieces.
    doc, label, offset, core_start, core_end (np.ndarray): [R] where each row comes from.
    gold_start, gold_end (Optional[np.ndarray]): [R, T] bool; gold_pairs [G, 3] (row, i, j).
    use_token_types (bool): whether the encoder takes token type ids.
    unlearnable (int): gold spans starting or ending on a token without wordpieces.
    sequence (Optional[np.ndarray]): [R] the sequence of each row (packed questions or
        packed sentences; else None: row r is sequence r).
    slot (Optional[np.ndarray]): [R] the position of the row's question in its sequence
        (packed questions).
    question_start, question_end (Optional[np.ndarray]): [S, Q] the wordpiece range of each
        question of a sequence (packed questions).
    segments (Optional[np.ndarray]): [S, L] packed sentences or questions read apart: the
        segment each wordpiece belongs to (a window with its questions, read as one sequence
        alone; or apart, a window's text, and the questions it reads), -1 for padding; a
        wordpiece attends to those of its own segment and of the segment it ``reads``.
    positions (Optional[np.ndarray]): [S, L] packed sentences: each wordpiece's position id,
        restarting at every segment (the encoder's first position id there; after the
        shared questions where they are shared); None: the encoder's own.
    reads (Optional[np.ndarray]): [S, L] questions read apart: the segment of the questions
        a text wordpiece also attends to, -1 for none (the questions themselves).
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    start_index: np.ndarray
    end_index: np.ndarray
    token_mask: np.ndarray
    doc: np.ndarray
    label: np.ndarray
    offset: np.ndarray
    core_start: np.ndarray
    core_end: np.ndarray
    gold_start: Optional[np.ndarray]
    gold_end: Optional[np.ndarray]
    gold_pairs: Optional[np.ndarray]
    use_token_types: bool
    unlearnable: int = 0
    sequence: Optional[np.ndarray] = None
    slot: Optional[np.ndarray] = None
    question_start: Optional[np.ndarray] = None
    question_end: Optional[np.ndarray] = None
    segments: Optional[np.ndarray] = None
    positions: Optional[np.ndarray] = None
    reads: Optional[np.ndarray] = None

    @property
    def n_rows(self) -> int:
        return len(self.doc)

    @property
    def n_sequences(self) -> int:
        return len(self.input_ids)

    def encoder_inputs(self) -> ArgsKwargs:
        """RETURNS (ArgsKwargs): the encoder's keyword inputs, tensors [S, L]; with segments
        the attention mask is [S, L, L] (a wordpiece attends to its own segment and the one
        it reads; padding the first wordpiece, so that no row of the mask is empty) and, packed, the
        position ids are given."""
        kwargs = {
            "input_ids": to_device(self.input_ids),
            "attention_mask": to_device(self.attention_mask),
        }
        if self.segments is not None:
            segments = to_device(self.segments)
            mask = segments[:, :, None] == segments[:, None, :]  # [S, L, L]
            if self.reads is not None:
                mask |= to_device(self.reads)[:, :, None] == segments[:, None, :]
            mask &= segments[:, None, :] >= 0
            mask[:, :, 0] |= segments < 0  # padding reads the first wordpiece
            kwargs["attention_mask"] = mask
        if self.positions is not None:
            kwargs["position_ids"] = to_device(self.positions)
        if self.use_token_types:
            kwargs["token_type_ids"] = to_device(self.token_type_ids)
        return ArgsKwargs(args=(), kwargs=kwargs)

    def head_inputs(self, with_gold: bool) -> RowInputs:
        """RETURNS (RowInputs): the rows' tensors as the heads read them, with their gold
        boundaries and pairs (``Targets``) if ``with_gold``; one label (``n_types``) and no
        task weights, which the model sets."""
        packing = targets = sequence = None
        if self.sequence is not None and self.slot is None:
            sequence = to_device(self.sequence)
        if self.slot is not None:
            assert self.sequence is not None
            assert self.question_start is not None and self.question_end is not None
            positions = np.arange(self.input_ids.shape[1])
            inside = (positions >= self.question_start[:, :, None]) & (
                positions < self.question_end[:, :, None]
            )  # [S, Q, L]
            pool = inside / np.maximum(inside.sum(axis=-1, keepdims=True), 1)
            packing = Packing(to_device(self.sequence), to_device(pool, torch.float32),
                              to_device(self.slot))
        if with_gold:
            assert self.gold_start is not None and self.gold_pairs is not None
            shape = self.token_mask.shape
            gold_match = torch.zeros(
                (shape[0], shape[1], shape[1]), dtype=torch.bool, device=get_torch_default_device()
            )
            pairs = to_device(self.gold_pairs)
            gold_match[pairs[:, 0], pairs[:, 1], pairs[:, 2]] = True
            targets = Targets(to_device(self.gold_start, torch.bool),
                              to_device(self.gold_end, torch.bool), gold_match)
        return RowInputs(to_device(self.start_index), to_device(self.end_index),
                         to_device(self.token_mask, torch.bool), packing=packing,
                         targets=targets, sequence=sequence)

    def select(self, rows: slice) -> "MRCRows":
        """The rows of a slice with their sequences, without the padding columns they do not
        need (prediction). Packed, the slice must hold whole sequences' rows."""
        sequence = slot = q_start = q_end = segments = positions = reads = None
        if self.sequence is None:
            seqs = rows
        else:
            used = self.sequence[rows]
            first = int(used.min()) if len(used) else 0
            seqs = slice(first, int(used.max(initial=first - 1)) + 1)
            sequence = used - first
        if self.slot is not None:
            assert self.question_start is not None and self.question_end is not None
            slot = self.slot[rows]
            q_start, q_end = self.question_start[seqs], self.question_end[seqs]
        length = max(1, int(self.attention_mask[seqs].sum(axis=1).max(initial=0)))
        if self.segments is not None:
            segments = self.segments[seqs, :length]
        if self.positions is not None:
            positions = self.positions[seqs, :length]
        if self.reads is not None:
            reads = self.reads[seqs, :length]
        return MRCRows(
            input_ids=self.input_ids[seqs, :length],
            attention_mask=self.attention_mask[seqs, :length],
            token_type_ids=self.token_type_ids[seqs, :length],
            start_index=self.start_index[rows],
            end_index=self.end_index[rows],
            token_mask=self.token_mask[rows],
            doc=self.doc[rows],
            label=self.label[rows],
            offset=self.offset[rows],
            core_start=self.core_start[rows],
            core_end=self.core_end[rows],
            gold_start=None,
            gold_end=None,
            gold_pairs=None,
            use_token_types=self.use_token_types,
            sequence=sequence,
            slot=slot,
            question_start=q_start,
            question_end=q_end,
            segments=segments,
            positions=positions,
            reads=reads,
        )

    def pass_bounds(self, sequences_per_pass: int) -> List[Tuple[int, int]]:
        """The rows of the prediction passes, each of whole sequences, at most
        ``sequences_per_pass`` of them (rows come in the order of their sequences).

        RETURNS (List[Tuple[int, int]]): per pass, its rows ``[low, high)``."""
        sequence = np.arange(self.n_rows) if self.sequence is None else self.sequence
        firsts = np.searchsorted(sequence, np.arange(0, self.n_sequences, sequences_per_pass))
        bounds = [*firsts.tolist(), self.n_rows]
        return [(low, high) for low, high in zip(bounds[:-1], bounds[1:]) if high > low]

    def to_doc_spans(
        self, pairs: np.ndarray, scores: np.ndarray, n_docs: int
    ) -> Tuple[List[np.ndarray], List[np.ndarray]]:
        """Predicted pairs [P, 3] (row, i, j) with scores [P] -> per doc, spans [S, 3]
        (start, end, label) sorted, and their scores [S].

        A span is kept only from the window that owns its centre, so spans in overlaps of
        windows are reported once.
        """
        rows, i, j = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        starts = self.offset[rows] + i
        ends = self.offset[rows] + j + 1
        keep = owned_by(starts, ends, self.core_start[rows], self.core_end[rows])
        table = np.stack([self.doc[rows], starts, ends, self.label[rows]], axis=1)[keep]
        kept_scores = scores[keep].astype(np.float32)
        order = np.lexsort((table[:, 3], table[:, 2], table[:, 1], table[:, 0]))
        table, kept_scores = table[order], kept_scores[order]
        bounds = np.searchsorted(table[:, 0], np.arange(n_docs + 1))
        spans = [table[bounds[d] : bounds[d + 1], 1:] for d in range(n_docs)]
        return spans, [kept_scores[bounds[d] : bounds[d + 1]] for d in range(n_docs)]


def build_rows(
    model: Model,
    layout: QueryLayout,
    docs: List[Doc],
    gold: Optional[List[np.ndarray]],
    unannotated: Optional[List[Optional[np.ndarray]]] = None,
    starts: Optional[List[Optional[np.ndarray]]] = None,
    *,
    label_mask: Optional[List[Optional[np.ndarray]]] = None,
    layout_for: Optional[Callable[[Tuple[int, ...]], QueryLayout]] = None,
    pack_sentences: bool = False,
) -> MRCRows:
    """Tokenize the docs once and expand them into sequences per (doc, window, sequence kind)
    and rows per (doc, window, label), label-minor. Tokens outside a strict window's core
    (``plan_context_windows``) and, in training, tokens marked in ``unannotated`` (per doc
    [N] bool or None: text given as context only) are left out of ``token_mask``: read by
    the encoder, neither learned nor predicted. ``starts``: per doc, where the sentences it
    is read by start (``SpanBatch.sentence_starts``); None: each doc's own boundaries.

    ``label_mask`` (training; per doc [N, K] bool or None, ``SpanBatch.label_mask``): a window
    asks only the questions of the labels annotated on one of its tokens, laid out by
    ``layout_for(label ids)`` (packed: only those questions in its sequences), and each row
    learns only at the tokens annotated for its label; a window that annotates no label is
    left out. Typed heads take every label row of a window: there the rows of the other
    labels stay, with no token to learn from.

    ``pack_sentences`` (where ``reads_packed``): the segments, one per (doc, window,
    sequence kind), fill sequences of up to ``pack_wordpieces`` (at most the layout's
    ``max_length``; a longer segment has a sequence alone) in order,
    each attending only to itself, its positions and token types restarting (``segments``,
    ``positions``); the rows keep their order. Where the questions are read apart from the
    text (``questions.attend_to_text = false``), a segment's questions attend only to
    themselves (``reads``) and, packed, the segments of one label group share a sequence
    and one copy of its questions at its start (``place_segments``' keys; where the encoder
    ``reads_shared_prefix``, else a copy each); the rows then follow their sequences."""
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    n_labels = len(model.attrs["labels"])
    all_labels = tuple(range(n_labels))
    layouts = {all_labels: layout}
    aligned, windows_of_docs = plan_reading(model, layout, docs, starts)
    plans: List[_Plan] = []
    for d, (alignment, windows) in enumerate(zip(aligned, windows_of_docs)):
        cum = np.concatenate([[0], np.cumsum(alignment.counts)])
        mask = label_mask[d] if label_mask is not None else None
        for window in windows:
            targets = _targets(alignment, window, unannotated[d] if unannotated else None)
            asked, learns = all_labels, None
            if mask is not None:
                learns = mask[window.start : window.end] & targets[:, None]  # [T, K]
                if not model.attrs["typed"]:
                    asked = tuple(np.flatnonzero(learns.any(axis=0)).tolist())
                    if not asked:
                        continue
            if asked not in layouts:
                assert layout_for is not None, "a label mask needs layout_for"
                layouts[asked] = layout_for(asked)
            plans.append(_Plan(d, alignment, window, cum, targets, learns, layouts[asked]))
    apart = not model.attrs[SETTINGS].questions.attend_to_text
    if apart:
        check_reads_apart(model)
    shared = apart and pack_sentences and reads_shared_prefix(model.get_ref("encoder"))
    kinds = [(p, g) for p, plan in enumerate(plans) for g in range(len(plan.layout.groups))]
    prefix_sizes = np.asarray([len(plans[p].layout.prefix[g]) for p, g in kinds], np.int64)
    sizes = np.asarray([int(plans[p].cum[plans[p].window.end] - plans[p].cum[plans[p].window.start])
                        + len(plans[p].layout.suffix[g]) for p, g in kinds], np.int64)
    budget = min(int(model.attrs[SETTINGS].windows.pack_wordpieces), layout.max_length)
    if shared:  # the segments of a sequence share its questions: one prefix, first
        keys: Dict[Tuple[int, int], int] = {}
        key_of = np.asarray([keys.setdefault((id(plans[p].layout), g), len(keys))
                             for p, g in kinds], dtype=np.int64)
        seq_of, column_of = place_segments(sizes, budget, True, prefix_sizes, key_of)
    else:
        sizes = sizes + prefix_sizes
        seq_of, column_of = place_segments(sizes, budget, pack_sentences)
    n_segments = len(kinds)
    n_seqs = int(seq_of.max()) + 1 if n_segments else 0
    # rows in the order of their sequences (a shared prefix gathers one label group's windows)
    n_asked = np.asarray([len(plans[p].layout.groups[g]) for p, g in kinds], dtype=np.int64)
    order = np.argsort(seq_of, kind="stable")
    first_row = np.zeros(n_segments, dtype=np.int64)
    first_row[order] = np.cumsum(n_asked[order]) - n_asked[order]
    n_rows = int(n_asked.sum())
    max_tokens = max((p.window.end - p.window.start for p in plans), default=0)
    length = int((column_of + sizes).max(initial=0))
    input_ids = np.full((n_seqs, length), tokenizer.pad_token_id or 0, dtype=np.int64)
    attention = np.zeros((n_seqs, length), dtype=np.int64)
    types = np.zeros((n_seqs, length), dtype=np.int64)
    start_index = np.zeros((n_rows, max_tokens), dtype=np.int64)
    end_index = np.zeros((n_rows, max_tokens), dtype=np.int64)
    token_mask = np.zeros((n_rows, max_tokens), dtype=bool)
    meta = np.zeros((5, n_rows), dtype=np.int64)  # doc, label, offset, core_start, core_end
    with_gold = gold is not None
    gold_start = np.zeros((n_rows, max_tokens), dtype=bool) if with_gold else None
    gold_end = np.zeros((n_rows, max_tokens), dtype=bool) if with_gold else None
    gold_pairs: List[np.ndarray] = []
    unlearnable = 0
    packing = _PackingTables(n_seqs, n_rows) if layout.packed else None
    row_sequence = np.zeros(n_rows, dtype=np.int64)
    segments = positions = reads = None
    first_id = 0
    if pack_sentences:
        first_id = first_position_id(model.get_ref("encoder"))
        assert first_id is not None, "the encoder cannot read packed sentences"
        positions = np.zeros((n_seqs, length), dtype=np.int64)
    if pack_sentences or apart:
        segments = np.full((n_seqs, length), -1, dtype=np.int64)
    if apart:
        reads = np.full((n_seqs, length), -1, dtype=np.int64)
    prefix_written = np.zeros(n_seqs, dtype=bool)
    k = 0
    for plan in plans:
        window, alignment, cum, used = plan.window, plan.alignment, plan.cum, plan.layout
        ctx = alignment.ids[cum[window.start] : cum[window.end]]
        first = alignment.first[window.start : window.end]
        last = alignment.last[window.start : window.end]
        has_wp = first >= 0
        n_tok = window.end - window.start
        row_of = np.full(n_labels, -1, dtype=np.int64)  # label id -> its row, if asked
        for g, group in enumerate(used.groups):
            pre, suf = used.prefix[g], used.suffix[g]
            s, c = seq_of[k], int(column_of[k])
            n_pre, n_ctx = len(pre), len(ctx)
            text_types = np.concatenate([np.full(n_ctx, used.context_type), used.suffix_types[g]])
            if shared:  # the sequence's questions at its start, then this window's text
                if not prefix_written[s]:
                    _write(input_ids, attention, types, s, 0, pre, used.prefix_types[g])
                    segments[s, :n_pre] = n_segments + s
                    positions[s, :n_pre] = first_id + np.arange(n_pre)
                    prefix_written[s] = True
                body = slice(c, c + n_ctx + len(suf))
                _write(input_ids, attention, types, s, c, np.concatenate([ctx, suf]), text_types)
                segments[s, body], reads[s, body] = k, n_segments + s
                positions[s, body] = first_id + n_pre + np.arange(n_ctx + len(suf))
                shift, question_at = c - cum[window.start], 0
            else:
                _write(input_ids, attention, types, s, c, np.concatenate([pre, ctx, suf]),
                       np.concatenate([used.prefix_types[g], text_types]))
                end = c + n_pre + n_ctx + len(suf)
                if segments is not None:
                    segments[s, c:end] = k
                if apart:  # the questions a segment of their own, which its text reads
                    segments[s, c : c + n_pre] = n_segments + k
                    reads[s, c + n_pre : end] = n_segments + k
                if positions is not None:
                    positions[s, c:end] = first_id + np.arange(end - c)
                shift, question_at = c + n_pre - cum[window.start], c
            rows = np.arange(first_row[k], first_row[k] + len(group))
            row_of[group] = rows
            row_sequence[rows] = s
            start_index[rows, :n_tok] = np.where(has_wp, first + shift, 0)
            end_index[rows, :n_tok] = np.where(has_wp, last + shift, 0)
            token_mask[rows, :n_tok] = (plan.targets if plan.learns is None
                                        else plan.learns[:, group].T)
            meta[:, rows] = np.array(
                [[plan.doc], [0], [window.start], [window.core_start], [window.core_end]]
            )
            meta[1, rows] = group
            if packing is not None:
                packing.add(s, rows, used.question_spans[g] + question_at, shared)
            k += 1
        if with_gold:
            # boundaries inside the window are taught even when their span crosses its edge;
            # the match head learns the spans that lie wholly inside
            g = gold[plan.doc]
            g = g[row_of[g[:, 2]] >= 0]
            starts_in = (g[:, 0] >= window.start) & (g[:, 0] < window.end)
            ends_in = (g[:, 1] > window.start) & (g[:, 1] <= window.end)
            gold_start[row_of[g[starts_in, 2]], g[starts_in, 0] - window.start] = True
            gold_end[row_of[g[ends_in, 2]], g[ends_in, 1] - 1 - window.start] = True
            g = g[starts_in & ends_in]
            owned = owned_by(g[:, 0], g[:, 1], window.core_start, window.core_end)
            learnable = (alignment.first[g[:, 0]] >= 0) & (alignment.first[g[:, 1] - 1] >= 0)
            unlearnable += int((owned & ~learnable).sum())
            i, j = g[:, 0] - window.start, g[:, 1] - 1 - window.start
            gold_pairs.append(np.stack([row_of[g[:, 2]], i, j], axis=1))
    pairs = np.concatenate(gold_pairs) if gold_pairs else np.zeros((0, 3), dtype=np.int64)
    result = MRCRows(
        input_ids=input_ids,
        attention_mask=attention,
        token_type_ids=types,
        start_index=start_index,
        end_index=end_index,
        token_mask=token_mask,
        doc=meta[0],
        label=meta[1],
        offset=meta[2],
        core_start=meta[3],
        core_end=meta[4],
        gold_start=gold_start,
        gold_end=gold_end,
        gold_pairs=pairs if with_gold else None,
        use_token_types="token_type_ids" in tokenizer.model_input_names,
        unlearnable=unlearnable,
        sequence=row_sequence if layout.packed or pack_sentences else None,
        segments=segments,
        positions=positions,
        reads=reads,
    )
    if packing is not None:
        packing.set_on(result)
    return result


def place_segments(
    sizes: np.ndarray,
    max_length: int,
    pack: bool,
    prefixes: Optional[np.ndarray] = None,
    keys: Optional[np.ndarray] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Where segments go: each in a sequence of its own, or with ``pack``, in order into
    sequences of at most ``max_length`` wordpieces (greedy: a segment that does not fit
    opens the next sequence; one longer than ``max_length`` has a sequence alone).

    sizes (np.ndarray): [N] wordpieces of each segment.
    prefixes, keys (Optional[np.ndarray]): [N] segments that share a prefix: its wordpieces
        and which prefix (an id). A sequence then holds the segments of one key, after one
        copy of their prefix; keys in the order they first appear, each's segments in order.
    RETURNS (Tuple[np.ndarray, np.ndarray]): [N] the sequence of each segment (ascending
        along the segments, or along the keys' order where shared) and [N] its first column
        there.
    """
    if not pack:
        return np.arange(len(sizes)), np.zeros(len(sizes), dtype=np.int64)
    sequence = np.zeros(len(sizes), dtype=np.int64)
    column = np.zeros(len(sizes), dtype=np.int64)
    if keys is None or prefixes is None:
        order: List[int] = list(range(len(sizes)))
        keys, prefixes = np.zeros(len(sizes), np.int64), np.zeros(len(sizes), np.int64)
    else:
        first_seen = {key: n for n, key in reversed(list(enumerate(keys.tolist())))}
        order = sorted(range(len(sizes)), key=lambda n: first_seen[int(keys[n])])
    s, fill, current = -1, max_length, -1
    for n in order:
        size, key = int(sizes[n]), int(keys[n])
        if s < 0 or key != current or fill + size > max_length:
            s, fill, current = s + 1, int(prefixes[n]), key
        sequence[n], column[n] = s, fill
        fill += size
    return sequence, column


def check_reads_apart(model: Model) -> None:
    """Raise NME025 unless the model's encoder takes the masks and position ids of questions
    read apart from the text (``questions.attend_to_text = false``)."""
    encoder = model.get_ref("encoder")
    if not takes_segment_masks(encoder):
        name = "run by ONNX Runtime" if onnx_encoder(encoder) is not None else "not one of them"
        raise ValueError(Errors.NME025.format(name=model.name, encoder=name))


def takes_segment_masks(encoder: Model) -> bool:
    """Whether the encoder reads rows of segments as alone: a [S, L, L] mask and position
    ids per wordpiece (``first_position_id``), in PyTorch (an ONNX Runtime graph takes
    [B, L] masks)."""
    return onnx_encoder(encoder) is None and first_position_id(encoder) is not None


def trains_packed(model: Model) -> bool:
    """Whether training packs sentences too: where they share their questions (read apart
    from the text, ``questions.attend_to_text = false``, by an encoder that
    ``reads_shared_prefix``), which saves the questions' copies; sentences with a copy each
    gain nothing in length-sorted passes."""
    return (reads_packed(model) and not model.attrs[SETTINGS].questions.attend_to_text
            and reads_shared_prefix(model.get_ref("encoder")))


def _write(ids: np.ndarray, attention: np.ndarray, types: np.ndarray, s: int, c: int,
           values: np.ndarray, value_types: np.ndarray) -> None:
    """Write wordpieces and their token types into sequence ``s`` from column ``c``."""
    columns = slice(c, c + len(values))
    ids[s, columns], attention[s, columns], types[s, columns] = values, 1, value_types


def reads_packed(model: Model) -> bool:
    """Whether the model's prediction packs sentences (``pack_wordpieces`` > 0, the windows
    block): where each window is read alone (``context_wordpieces`` 0), by heads that take
    rows in any grouping (not Multi-NER's typed heads and type attention, which take a
    window's label rows together), through an encoder that reads packed rows as alone
    (``takes_segment_masks``)."""
    windows = model.attrs[SETTINGS].windows
    return bool(
        windows.pack_wordpieces > 0
        and windows.context_wordpieces == 0
        and not model.attrs["typed"]
        and takes_segment_masks(model.get_ref("encoder"))
    )


@dataclass
class _Plan:
    """One window of a batch and what it asks: the layout of its questions and, with a
    label mask, which of its tokens learn which label ([T, K] bool)."""

    doc: int
    alignment: WordpieceAlignment
    window: Window
    cum: np.ndarray
    targets: np.ndarray
    learns: Optional[np.ndarray]
    layout: QueryLayout


def _targets(
    alignment: WordpieceAlignment, window: Window, skip: Optional[np.ndarray]
) -> np.ndarray:
    """RETURNS (np.ndarray): [T] bool, the tokens of a window that are learned and predicted:
    those with wordpieces, inside a strict window's core, not in context-only text
    (``skip``: the doc's [N] bool, or None)."""
    targets = alignment.first[window.start : window.end] >= 0
    if window.strict:
        targets[: window.core_start - window.start] = False
        targets[window.core_end - window.start :] = False
    if skip is not None:
        targets &= ~skip[window.start : window.end]
    return targets


class _PackingTables:
    """Where the rows of packed questions read them, filled segment by segment: each row's
    question slot in its sequence, each sequence's question ranges (several segments'
    with packed sentences)."""

    def __init__(self, n_seqs: int, n_rows: int) -> None:
        self.slot = np.zeros(n_rows, dtype=np.int64)
        self.spans: List[List[np.ndarray]] = [[] for _ in range(n_seqs)]

    def add(self, s: int, rows: np.ndarray, question_spans: np.ndarray,
            shared: bool = False) -> None:
        """The rows of a segment in sequence ``s``, each reading one question of
        ``question_spans`` [n, 2] (columns of the sequence); ``shared``: the questions the
        sequence holds once for all its segments."""
        if shared and self.spans[s]:
            self.slot[rows] = np.arange(len(rows))
            return
        taken = sum(len(spans) for spans in self.spans[s])
        self.slot[rows] = taken + np.arange(len(rows))
        self.spans[s].append(question_spans)

    def set_on(self, rows: MRCRows) -> None:
        per_seq = [np.concatenate(spans) if spans else np.zeros((0, 2), dtype=np.int64)
                   for spans in self.spans]
        n_slots = max((len(spans) for spans in per_seq), default=0)
        table = np.zeros((len(per_seq), max(1, n_slots), 2), dtype=np.int64)
        for s, spans in enumerate(per_seq):
            table[s, : len(spans)] = spans
        rows.slot = self.slot
        rows.question_start, rows.question_end = table[:, :, 0], table[:, :, 1]


def plan_reading(
    model: Model,
    layout: QueryLayout,
    docs: List[Doc],
    starts: Optional[List[Optional[np.ndarray]]] = None,
) -> Tuple[List[WordpieceAlignment], List[List[Window]]]:
    """How the model reads the docs: their wordpieces (tokens too long for a window
    shortened, with NMW011) and their windows, as the model's window planner cuts them
    (``blocks.QueryWindows.plan``: each sentence alone, or with context around it).

    starts (Optional[List[Optional[np.ndarray]]]): per doc, where the sentences it is read
        by start (``SpanBatch.sentence_starts``); None: each doc's own boundaries.

    RETURNS (Tuple[List[WordpieceAlignment], List[List[Window]]]): per doc, its alignment
        and its windows in order.
    """
    planner = model.attrs[SETTINGS].windows
    aligned = _tokenize(get_tokenizer(model.get_ref("encoder")), docs)
    n_shortened = 0
    for d, alignment in enumerate(aligned):
        aligned[d], cut = shorten_long_tokens(alignment, max(2, layout.room))
        n_shortened += cut
    if n_shortened:
        plural = "" if n_shortened == 1 else "s"
        warnings.warn(Warnings.NMW011.format(count=n_shortened, plural=plural, room=layout.room))
    if starts is None:
        starts = [sentence_starts(doc) for doc in docs]
    windows = [planner.plan(alignment.counts, first, layout.room)
               for alignment, first in zip(aligned, starts)]
    return aligned, windows


def _tokenize(tokenizer: Any, docs: List[Doc]) -> List[WordpieceAlignment]:
    """Wordpieces of every doc's tokens, in one tokenizer call for the batch (whole docs,
    windowed afterwards: the tokenizer's warning about sequences over the encoder's length
    does not apply, hence ``verbose=False``)."""
    words = [[token.text for token in doc] for doc in docs]
    nonempty = [k for k, w in enumerate(words) if w]
    result = [align_wordpieces([], [], 0) for _ in docs]
    if not nonempty:
        return result
    encoded = tokenizer(
        [words[k] for k in nonempty],
        is_split_into_words=True,
        add_special_tokens=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,
    )
    for n, k in enumerate(nonempty):
        result[k] = align_wordpieces(encoded["input_ids"][n], encoded.word_ids(n), len(words[k]))
    return result
