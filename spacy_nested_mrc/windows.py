"""Windows: how a doc longer than one encoder sequence is cut, and which window owns a span.

Every size here names its unit: ``..._wordpieces`` counts the encoder's wordpieces (what a
sequence holds), ``..._tokens`` counts spaCy tokens (what spans are made of). The MRC models
plan windows over wordpiece counts (``plan_windows``, ``sentence_by_sentence``,
``plan_context_windows``); the span getters of the shared ``transformer`` cut docs into
token windows (``strided``, ``sentences_of``, ``plan_context_windows`` with a count of 1 a
token) and split those its encoder cannot take (``fit_wordpieces``). A window's core is the
part it labels; the cores partition the doc and a span belongs to the window whose core
holds its centre (``owned_by``).
"""

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np
from spacy.tokens import Doc, Span

from .errors import Errors


@dataclass
class Window:
    """A window of tokens ``[start, end)`` and its core ``[core_start, core_end)``.

    Consecutive windows overlap; the cores partition the doc, and a span belongs to the
    window whose core holds its centre (see ``owned_by``), so a span in an overlap is
    reported once. A ``strict`` window's core is whole sentences: the tokens around it are
    context only, read by the encoder but neither learned nor predicted in this window.
    """

    start: int
    end: int
    core_start: int
    core_end: int
    strict: bool = False


def plan_windows(
    counts: np.ndarray, room_wordpieces: int, overlap_tokens: int
) -> List[Window]:
    """Cut a doc into overlapping windows of at most ``room_wordpieces`` wordpieces.

    counts (np.ndarray): [N] wordpieces per token.
    room_wordpieces (int): wordpieces available for the text in one encoder sequence.
    overlap_tokens (int): tokens shared by consecutive windows (at most half a window). A
        span of up to that many tokens lies wholly inside the window that owns it.
    RETURNS (List[Window]): the windows, none for an empty doc.
    """
    n = len(counts)
    if n == 0:
        return []
    _check_fits(counts, room_wordpieces)
    cum = np.concatenate([[0], np.cumsum(counts)])
    spans = []
    start = 0
    while True:
        # largest end with cum[end] - cum[start] <= room
        end = int(np.searchsorted(cum, cum[start] + room_wordpieces, side="right")) - 1
        end = max(min(end, n), start + 1)
        spans.append((start, end))
        if end >= n:
            break
        # each window advances by at least half its length, whatever the overlap
        start = max(start + 1, end - min(overlap_tokens, (end - start) // 2))
    windows = []
    for k, (start, end) in enumerate(spans):
        core_start = 0 if k == 0 else (start + spans[k - 1][1]) // 2
        core_end = n if k == len(spans) - 1 else (spans[k + 1][0] + end) // 2
        windows.append(Window(start, end, core_start, core_end))
    return windows


def sentence_by_sentence(
    counts: np.ndarray, starts: Optional[np.ndarray], room_wordpieces: int, overlap_tokens: int
) -> List[Window]:
    """Windows that read each sentence alone (``plan_windows`` within it), as a model trained
    on sentences saw its training data; a doc without sentence boundaries is cut as a whole.

    counts (np.ndarray): [N] wordpieces per token; starts: the sentence starts, or None;
    room_wordpieces, overlap_tokens: as ``plan_windows``.
    RETURNS (List[Window]): the windows; their cores partition the doc.
    """
    if starts is None:
        return plan_windows(counts, room_wordpieces, overlap_tokens)
    bounds = sorted({0, *starts.tolist(), len(counts)} - {len(counts)}) + [len(counts)]
    windows = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        for w in plan_windows(counts[a:b], room_wordpieces, overlap_tokens):
            windows.append(Window(w.start + a, w.end + a, w.core_start + a, w.core_end + a))
    return windows


def _check_fits(counts: np.ndarray, room: int) -> None:
    """Raise NME010 for the first token with more than ``room`` wordpieces."""
    too_long = np.flatnonzero(counts > room)
    if len(too_long):
        raise ValueError(
            Errors.NME010.format(index=int(too_long[0]), count=int(counts[too_long[0]]), room=room)
        )


def plan_context_windows(
    counts: np.ndarray, sentence_starts: Optional[np.ndarray], room: int, context: int
) -> List[Window]:
    """Cut a doc into windows of at most ``room`` whose cores are the targets and whose
    edges, up to ``context`` on each side, are the text around them; ``room`` and
    ``context`` count in the unit of ``counts``: wordpieces for the MRC models'
    ``plan_reading``, tokens (a count of 1 each) for the ``context_windows.v2`` span getter.

    Cores partition the doc; each takes as many whole sentences as fit in ``room - 2 *
    context`` wordpieces (such windows are ``strict``: a span never crosses a sentence, so
    nothing is learned or predicted outside the core). A sentence longer than that, and a
    doc without sentence boundaries (``sentence_starts`` None), is cut between any tokens
    into cores of that size (not strict: a span belongs to the window that holds its centre,
    ``owned_by``). A core that leaves more room than twice the context does not take more.

    counts (np.ndarray): [N] the size of each token (wordpieces, or 1), each at most
        ``room``.
    sentence_starts (Optional[np.ndarray]): ascending token indices where sentences start
        (0 included or not), or None.
    room (int): the size of one window, in the unit of ``counts``.
    context (int): the size of the context on each side of a core, in the same unit, at
        most a quarter of ``room`` (the rest is capped there).
    RETURNS (List[Window]): the windows in order, none for an empty doc.
    """
    n = len(counts)
    if n == 0:
        return []
    _check_fits(counts, room)
    context = min(int(context), room // 4)
    budget = room - 2 * context
    cum = np.concatenate([[0], np.cumsum(counts)])
    starts = [0] if sentence_starts is None else sorted({0, *map(int, sentence_starts)} - {n})
    bounds = [s for s in starts if 0 <= s < n] + [n]
    cores: List[Tuple[int, int, bool]] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        whole = sentence_starts is not None and cum[b] - cum[a] <= budget
        if whole and cores and cores[-1][2] and cum[b] - cum[cores[-1][0]] <= budget:
            cores[-1] = (cores[-1][0], b, True)
        elif whole:
            cores.append((a, b, True))
        else:
            cores.extend((s, e, False) for s, e in _chunks(cum, a, b, budget))
    windows = []
    for core_start, core_end, strict in cores:
        spare = room - int(cum[core_end] - cum[core_start])
        left = min(context, spare // 2)
        start = int(np.searchsorted(cum, cum[core_start] - left, side="left"))
        right = min(context, spare - int(cum[core_start] - cum[start]))
        end = int(np.searchsorted(cum, cum[core_end] + right, side="right")) - 1
        windows.append(Window(start, max(end, core_end), core_start, core_end, strict))
    return windows


def _chunks(cum: np.ndarray, a: int, b: int, budget: int) -> List[Tuple[int, int]]:
    """Tokens ``[a, b)`` cut greedily into runs of at most ``budget`` wordpieces (at least
    one token each); ``cum`` [N + 1] is the cumulative wordpiece count."""
    chunks = []
    while a < b:
        end = int(np.searchsorted(cum, cum[a] + budget, side="right")) - 1
        end = min(max(end, a + 1), b)
        chunks.append((a, end))
        a = end
    return chunks


def owned_by(starts: np.ndarray, ends: np.ndarray, core_start, core_end) -> np.ndarray:
    """Which spans have their centre in the core ``[core_start, core_end)``.

    starts, ends (np.ndarray): [S] span offsets (doc tokens); the cores may be scalars or [S].
    RETURNS (np.ndarray): [S] bool.
    """
    twice_centre = starts + ends - 1
    return (twice_centre >= 2 * np.asarray(core_start)) & (twice_centre < 2 * np.asarray(core_end))


def strided(span: Span, window_tokens: int, stride_tokens: int) -> List[Span]:
    """Windows of ``window_tokens`` tokens every ``stride_tokens`` tokens over ``span``, the
    last one ending with it."""
    doc, pieces = span.doc, []
    for start in range(span.start, span.end, stride_tokens):
        pieces.append(doc[start : min(start + window_tokens, span.end)])
        if start + window_tokens >= span.end:
            break
    return pieces


def sentences_of(doc: Doc, starts: Optional[np.ndarray]) -> List[Span]:
    """The sentences of ``doc`` that begin at ``starts`` (the whole doc for None)."""
    if not len(doc):
        return []
    bounds = [0] if starts is None else sorted({0, *map(int, starts)} - {len(doc)})
    return [doc[a:b] for a, b in zip(bounds, [*bounds[1:], len(doc)])]


def fit_wordpieces(
    span: Span, tokenizer: Any, room_wordpieces: int, oversize: List[int]
) -> List[Span]:
    """``span`` cut in halves (recursively) until each part's wordpieces, special tokens
    included, number at most ``room_wordpieces``; a single token that still has more is
    kept whole and its wordpiece count appended to ``oversize``. A wordpiece covers at least
    one byte of text (SentencePiece's word-start piece aside, hence the 1), so a short text
    is not tokenized at all."""
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    if len(span.text.encode("utf-8")) + specials + 1 <= room_wordpieces:
        return [span]
    count = len(tokenizer(span.text, add_special_tokens=True, verbose=False)["input_ids"])
    if count <= room_wordpieces:
        return [span]
    if len(span) == 1:
        oversize.append(count)
        return [span]
    middle = span.start + len(span) // 2
    doc = span.doc
    return (fit_wordpieces(doc[span.start : middle], tokenizer, room_wordpieces, oversize)
            + fit_wordpieces(doc[middle : span.end], tokenizer, room_wordpieces, oversize))
