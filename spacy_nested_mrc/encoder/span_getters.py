"""The windows the shared ``transformer`` component reads: registered span getters, and the
splitting of a window its encoder cannot take."""

import warnings
from functools import partial
from typing import Callable, List, Optional, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import registry
from thinc.api import Model

from ..errors import Errors, Warnings
from ..sentences import DEFAULT_SPLIT_SENTENCES, reading_starts
from ..validation import check_bool, check_positive
from ..windows import fit_wordpieces, plan_context_windows, sentences_of, strided
from .hf import encoder_has_weights, get_max_positions, get_tokenizer


@registry.span_getters("spacy-nested-mrc.sentence_windows.v2")
def configure_sentence_windows(
    window_tokens: int, stride_tokens: int, split_sentences: bool = DEFAULT_SPLIT_SENTENCES
) -> Callable[[List[Doc]], List[List[Span]]]:
    """Encoder windows that follow sentences: each sentence of a doc is a window of its own,
    and a sentence longer than ``window_tokens`` is cut into windows of that many tokens
    every ``stride_tokens``. The sentences are the doc's own where it has boundaries (e.g.
    from a ``sentencizer`` or parser), else those spaCy's rule-based ``Sentencizer`` finds
    (``sentences.reading_starts``, as the ``nested_mrc_ner`` pipe's ``split_sentences``);
    with ``split_sentences`` off, a doc without boundaries is cut as a whole (as
    spacy-transformers' strided spans).

    A model trained on sentences then sees a document as it saw its training data.

    window_tokens (int): the most tokens of a window.
    stride_tokens (int): the step between strided windows; below ``window_tokens`` they
        overlap.
    split_sentences (bool): find the sentences of a doc that has no boundaries.
    """
    check_positive("window_tokens", window_tokens)
    check_positive("stride_tokens", stride_tokens)
    if stride_tokens > window_tokens:
        raise ValueError(Errors.NME003.format(
            setting="stride_tokens", value=stride_tokens,
            expected=f"Expected at most the window ({window_tokens}): tokens would be left "
                     "out."))
    check_bool("split_sentences", split_sentences)
    return partial(_sentence_windows, window=window_tokens, stride=stride_tokens,
                   split=split_sentences)


def _sentence_windows(
    docs: List[Doc], *, window: int, stride: int, split: bool = True
) -> List[List[Span]]:
    """The windows of ``configure_sentence_windows`` (module level, so pipelines pickle)."""
    return [
        [piece for sent in sentences_of(doc, reading_starts(doc, split))
         for piece in strided(sent, window, stride)]
        for doc in docs
    ]


@registry.span_getters("spacy-nested-mrc.context_windows.v2")
def configure_context_windows(
    window_tokens: int, context_tokens: int, split_sentences: bool = DEFAULT_SPLIT_SENTENCES
) -> Callable[[List[Doc]], List[List[Span]]]:
    """Encoder windows that read around what they label: each window's core is whole
    sentences of a doc (its own, or those found as by ``sentence_windows.v2``), as many as
    fit in ``window_tokens - 2 * context_tokens`` tokens, read with up to ``context_tokens``
    tokens of the text before and after it; a longer sentence, and a doc read as one text
    (``split_sentences`` off and no boundaries), is cut into cores of that many tokens
    (``windows.plan_context_windows`` over tokens). Consecutive windows overlap by twice the
    context, and the middle of the overlap is where their cores meet: with
    ``TransformerModel.v1``'s ``token_vectors = "own_window"`` each token's vector comes
    from the window whose core holds it.

    window_tokens (int): the most tokens of a window.
    context_tokens (int): tokens of context on each side, at most a quarter of the window.
    split_sentences (bool): find the sentences of a doc that has no boundaries.
    """
    check_positive("window_tokens", window_tokens)
    check_positive("context_tokens", context_tokens, allow_zero=True)
    check_bool("split_sentences", split_sentences)
    return partial(_context_windows, window=window_tokens, context=context_tokens,
                   split=split_sentences)


def _context_windows(
    docs: List[Doc], *, window: int, context: int, split: bool = True
) -> List[List[Span]]:
    """The windows of ``configure_context_windows`` (module level, so pipelines pickle)."""
    return [
        [doc[w.start : w.end]
         for w in plan_context_windows(np.ones(len(doc), dtype=np.int64),
                                       reading_starts(doc, split), window, context)]
        for doc in docs
    ]


# the span getters of the release before the unit in every name: the same windows
@registry.span_getters("spacy-nested-mrc.sentence_windows.v1")
def configure_sentence_windows_v1(
    window: int, stride: int, split_sentences: bool = DEFAULT_SPLIT_SENTENCES
) -> Callable[[List[Doc]], List[List[Span]]]:
    """``sentence_windows.v2`` under its older names: ``window`` is ``window_tokens``,
    ``stride`` ``stride_tokens``."""
    return configure_sentence_windows(window, stride, split_sentences)


@registry.span_getters("spacy-nested-mrc.context_windows.v1")
def configure_context_windows_v1(
    window: int, context: int, split_sentences: bool = DEFAULT_SPLIT_SENTENCES
) -> Callable[[List[Doc]], List[List[Span]]]:
    """``context_windows.v2`` under its older names: ``window`` is ``window_tokens``,
    ``context`` ``context_tokens``."""
    return configure_context_windows(window, context, split_sentences)


def fit_to_encoder(get_spans: Callable, model: Model) -> Callable:
    """``get_spans`` with every window that has more wordpieces than the encoder of ``model``
    (a TransformerModel) takes split in halves until each fits (``windows.fit_wordpieces``);
    a partial of a module function, so a pipeline holding it pickles (``nlp.pipe`` with
    spawned workers)."""
    return partial(_fitting_spans, get_spans=get_spans, model=model)


def _fitting_spans(docs: List[Doc], *, get_spans: Callable, model: Model) -> List[List[Span]]:
    nested = get_spans(docs)
    encoder = model.layers[0]
    if not encoder_has_weights(encoder):  # before initialize: the width is inferred
        return nested
    tokenizer = get_tokenizer(encoder)
    room = get_max_positions(encoder)
    oversize: List[int] = []
    fitted = [[piece for span in spans for piece in fit_wordpieces(span, tokenizer, room, oversize)]
              for spans in nested]
    if oversize:
        warnings.warn(Warnings.NMW013.format(
            count=len(oversize), plural="" if len(oversize) == 1 else "s", room=room,
            most=max(oversize)))
    return fitted


def split_setting(get_spans: Callable) -> Optional[bool]:
    """RETURNS (Optional[bool]): the ``split_sentences`` of a span getter of this module
    (through ``fit_to_encoder``'s wrapper); None for any other span getter."""
    while isinstance(get_spans, partial):
        if get_spans.func in (_sentence_windows, _context_windows):
            return bool(get_spans.keywords.get("split", True))
        get_spans = get_spans.keywords.get("get_spans")
    return None


def window_encoders(nlp: Language, name: str) -> List[Tuple[str, Model]]:
    """The spacy-transformers encoders (models with a span getter) that give the pipe
    ``name`` its token vectors: a ``transformer`` component whose listeners it holds, and a
    transformer inside its own model (Locate-and-Label's ``Tok2VecTransformer.v1``).

    RETURNS (List[Tuple[str, Model]]): (the component holding it, the encoder model).
    """
    encoders = [(upstream, component.model) for upstream, component in nlp.pipeline
                if getattr(component, "listener_map", {}).get(name)]
    encoders += [(name, node) for node in nlp.get_pipe(name).model.walk()
                 if node.attrs.get("get_spans") is not None]
    return encoders


def check_split_agrees(nlp: Language, name: str, split_sentences: bool) -> None:
    """Warn (NMW016) where a pipe reads docs without boundaries sentence by sentence
    (``split_sentences``) and an encoder that gives it token vectors (``window_encoders``)
    cuts them otherwise. Both settings must agree for the encoder to read what the pipe
    labels."""
    for upstream, model in window_encoders(nlp, name):
        split = split_setting(model.attrs.get("get_spans"))
        if split is None or split == split_sentences:
            continue
        reads = {True: "sentence by sentence", False: "as one text"}
        warnings.warn(Warnings.NMW016.format(
            name=name, upstream=upstream, pipe_reads=reads[split_sentences],
            upstream_reads=reads[split], upstream_split=str(split).lower()))
