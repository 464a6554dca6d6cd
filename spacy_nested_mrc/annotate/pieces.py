"""Texts longer than a pipeline takes (``nlp.max_length``), annotated in pieces: cut where
the text breaks (``inputs.split_text``: a blank line, a line break, the end of a sentence, a
space), each piece
through the pipeline, and the pieces' docs joined into one doc of the whole text, with every
span (and its score) at its offset in the whole."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, List, Tuple, Union

import numpy as np

from ..inputs import split_text

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc


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
