"""Texts longer than a pipeline takes (``nlp.max_length``), annotated in pieces: cut where
the text breaks (a blank line, a line break, the end of a sentence, a space), each piece
through the pipeline, and the pieces' docs joined into one doc of the whole text, with every
span (and its score) at its offset in the whole."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, List, Tuple, Union

import numpy as np

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

# where a piece may end, best first: after a blank line, a line break, a sentence's end, a
# space; a text with none of them in the second half of the window is cut at the limit
BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?][\"')\]]*\s"),
          re.compile(r"\s"))


def split_text(text: str, limit: int) -> List[str]:
    """``text`` cut into pieces of at most ``limit`` characters whose concatenation is
    ``text``, each ending after the best break (``BREAKS``) in the second half of its
    window.

    text (str): the text.
    limit (int): the most characters of a piece.
    RETURNS (List[str]): the pieces, in order.
    """
    pieces, start = [], 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cut = limit
        for pattern in BREAKS:
            ends = [m.end() for m in pattern.finditer(window, limit // 2)]
            if ends:
                cut = ends[-1]
                break
        pieces.append(window[:cut])
        start += cut
    pieces.append(text[start:])
    return pieces


def join_pieces(docs: List["Doc"]) -> "Doc":
    """One doc of the pieces' docs, in order: the text is theirs joined, every span group
    keeps its spans at their offsets in the whole and their ``scores`` attribute."""
    from spacy.tokens import Doc, SpanGroup

    joined = Doc.from_docs(docs, ensure_whitespace=False)
    for key in joined.spans:
        scores = [doc.spans[key].attrs.get("scores") for doc in docs if key in doc.spans]
        if scores and all(s is not None for s in scores):
            group = joined.spans[key]
            joined.spans[key] = SpanGroup(joined, name=key, spans=list(group), attrs={
                "scores": np.concatenate([np.asarray(s, dtype=np.float32) for s in scores])})
    return joined


def pipe_any_length(
    nlp: "Language", items: Iterable[Tuple[Union[str, "Doc"], Any]], *, batch_size: int,
    n_process: int = 1,
) -> Iterator[Tuple["Doc", Any]]:
    """``nlp.pipe(items, as_tuples=True)`` for texts of any length: a text longer than
    ``nlp.max_length`` goes through in pieces (``split_text``, then ``join_pieces``) where
    ``nlp.pipe`` would stop the whole stream with spaCy's E088. Order is kept.

    items (Iterable[Tuple[Union[str, Doc], Any]]): texts or docs, each with its context.
    YIELDS (Tuple[Doc, Any]): each doc with its context.
    """
    def short(stream):
        for item, context in stream:
            if isinstance(item, str) and len(item) > nlp.max_length:
                yield "", (context, item)
            else:
                yield item, (context, None)

    for doc, (context, long_text) in nlp.pipe(short(items), as_tuples=True,
                                              batch_size=batch_size, n_process=n_process):
        if long_text is not None:
            doc = join_pieces(list(nlp.pipe(split_text(long_text, nlp.max_length),
                                            batch_size=batch_size)))
        yield doc, context
