"""The windows the shared ``transformer`` component reads, from the span getters of
``spacy_nested_mrc.encoder.span_getters``: by sentence or strided, whole sentences with context
around them, and windows over the encoder's limit split rather than truncated."""

import pickle
import warnings

import pytest
import spacy
from helpers.locate_label import CONFIGS, encoder_of, shared_pipeline, shipped_pipeline
from helpers.pipes import TRAIN, make_examples
from spacy.lang.en import English
from spacy.tokens import Doc
from spacy.util import load_config, registry

from spacy_nested_mrc.encoder.span_getters import split_setting


def window_offsets(getter, doc):
    return [(span.start, span.end) for span in getter([doc])[0]]


def test_sentence_windows_follow_sentences_or_stride():
    getter = registry.span_getters.get("spacy-nested-mrc.sentence_windows.v2")(
        window_tokens=4, stride_tokens=3)
    nlp = English()
    # no sentence boundaries: strided over the whole doc
    assert window_offsets(getter, nlp("a b c d e f g h i j")) == [(0, 4), (3, 7), (6, 10)]
    nlp.add_pipe("sentencizer")
    # one window per sentence; the 9-token sentence strided within itself
    doc = nlp("a b c . d e f g h i j k . l")
    assert window_offsets(getter, doc) == [(0, 4), (4, 8), (7, 11), (10, 13), (13, 14)]
    assert window_offsets(getter, nlp("")) == []


@pytest.mark.parametrize("window,stride", [(0, 1), (4, 0), (4, 5)])
def test_sentence_windows_are_validated(window, stride):
    configure = registry.span_getters.get("spacy-nested-mrc.sentence_windows.v2")
    with pytest.raises(ValueError, match="NME003"):
        configure(window_tokens=window, stride_tokens=stride)
    with pytest.raises(ValueError, match="NME003"):  # the same check under the v1 names
        registry.span_getters.get("spacy-nested-mrc.sentence_windows.v1")(window, stride)


def test_v1_span_getters_give_the_v2_windows():
    """The span getters of the release before the unit names give the same windows."""
    doc = spacy.blank("en")("a b c . d e f g h i j k l .")
    get = registry.span_getters.get
    pairs = [(get("spacy-nested-mrc.sentence_windows.v1")(window=4, stride=3),
              get("spacy-nested-mrc.sentence_windows.v2")(window_tokens=4, stride_tokens=3)),
             (get("spacy-nested-mrc.context_windows.v1")(window=8, context=2),
              get("spacy-nested-mrc.context_windows.v2")(window_tokens=8, context_tokens=2))]
    for old, new in pairs:
        assert [(w.start, w.end) for w in old([doc])[0]] == [
            (w.start, w.end) for w in new([doc])[0]]


def encoded(nlp: English, words: list):
    """The shared transformer's output for a doc of ``words``."""
    return nlp.get_pipe("transformer")(Doc(nlp.vocab, words=words))._.trf_data


def test_windows_over_the_encoder_limit_are_split_not_truncated(tiny_bert, tmp_path):
    """A 200-token window of the tiny encoder (128 positions) is split so that every token
    keeps its wordpieces, where spacy-transformers would drop those past the limit; a single
    token of more wordpieces than that is encoded from its first ones, with warning NMW013."""
    get_spans = {"components.transformer.model.get_spans.window_tokens": 200,
                 "components.transformer.model.get_spans.stride_tokens": 200}
    nlp = shared_pipeline(tiny_bert, tmp_path, get_spans)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    trf_data = encoded(nlp, ["gene"] * 150)  # one wordpiece each
    assert len(trf_data.wordpieces) == 2
    assert trf_data.wordpieces.lengths == [77, 77]  # 75 tokens and 2 special tokens each
    assert (trf_data.align.lengths == 1).all()
    with pytest.warns(UserWarning, match="NMW013"):
        trf_data = encoded(nlp, ["gene", "a." * 100, "gene"])  # a . a . ...: 200 wordpieces
    assert (trf_data.align.lengths[[0, 2]] == 1).all()
    assert trf_data.align.lengths[1] == 127  # its first 127, after [CLS]


def test_context_windows_getter_reads_around_whole_sentences():
    getter = registry.span_getters.get("spacy-nested-mrc.context_windows.v2")(
        window_tokens=8, context_tokens=2)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    doc = nlp("a b . c d e . f g . h")
    windows = [(w.start, w.end) for w in getter([doc])[0]]
    # cores of whole sentences up to 4 tokens ([0,3) [3,7) [7,11)), 2 tokens around
    assert windows == [(0, 5), (1, 9), (5, 11)]
    # no boundaries: cores of 4 tokens, 2 around; picklable for spawned worker processes
    raw = spacy.blank("en")("a b c d e f g h i j")
    assert [(w.start, w.end) for w in getter([raw])[0]] == [(0, 6), (2, 10), (6, 10)]
    assert pickle.loads(pickle.dumps(getter))([raw]) == getter([raw])
    with pytest.raises(ValueError, match="NME003"):
        registry.span_getters.get("spacy-nested-mrc.context_windows.v2")(
            window_tokens=0, context_tokens=1)


def test_the_shipped_config_sets_sentence_splitting_once(tiny_bert, tmp_path):
    """Locate-and-Label's shipped config: its encoder's windows follow the pipe's
    ``split_sentences``, the one setting of it."""
    for split in (True, False):
        nlp = shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path,
                               {"components.nested_mrc_ner.split_sentences": split})
        get_spans = encoder_of(nlp).attrs["get_spans"]
        assert split_setting(get_spans) is split
        doc = nlp.make_doc("IL-2 binds . It acts")
        assert len(get_spans([doc])[0]) == (2 if split else 1)


def test_a_pipe_and_its_transformer_that_split_otherwise_are_warned_of(tiny_bert, tmp_path):
    config = load_config(CONFIGS / "locate_label_cpu.cfg", overrides={
        "paths.encoder": tiny_bert, "paths.train": "x", "paths.dev": "x"}, interpolate=False)
    getter = config["components"]["nested_mrc_ner"]["model"]["tok2vec"]["transformer"]["get_spans"]
    getter["split_sentences"] = False
    nlp = English.from_config(config)
    with pytest.warns(UserWarning, match=r"NMW016.*sentence by sentence.*as one text"):
        nlp.initialize(lambda: make_examples(nlp, TRAIN))
    getter["split_sentences"] = True
    agreeing = English.from_config(config)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*NMW016")
        agreeing.initialize(lambda: make_examples(agreeing, TRAIN))
