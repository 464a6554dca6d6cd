"""How a pipe reads a document: sentence by sentence, by the doc's own boundaries where a
pipe set them, else by those spaCy's rule-based splitter finds (``spacy_nested_mrc.sentences``),
for every architecture, without changing the doc unless ``write_sents`` asks."""

import numpy as np
import pytest
import spacy
from helpers.contract import ARCHITECTURES, build
from helpers.pipes import KEY, PIPE, TRAIN, make_examples
from spacy.tokens import Doc
from spacy.util import fix_random_seed

from spacy_nested_mrc.encoder.span_getters import configure_sentence_windows
from spacy_nested_mrc.sentences import found_starts, reading_starts, write_starts

SENTENCES = [
    "IL-2 gene expression in human T cells .",
    "Jurkat cells express IL-2 and the kinase !",
    "binding of the kinase to the IL-2 gene ?",
]


def char_spans(doc, shift: int = 0):
    """RETURNS (list): the pipe's spans of ``doc`` as (start_char, end_char, label, score)."""
    group = doc.spans[KEY]
    return [(s.start_char + shift, s.end_char + shift, s.label_, float(score))
            for s, score in zip(group, group.attrs["scores"])]


def assert_same_spans(got, expected) -> None:
    """The same spans and labels, in order, with scores equal to float precision."""
    assert [s[:3] for s in got] == [s[:3] for s in expected]
    np.testing.assert_allclose([s[3] for s in got], [s[3] for s in expected], atol=1e-5)


def sentence_by_sentence(nlp, sentences, *, one_sentence: bool = False):
    """The spans of each sentence passed alone, shifted to its place in the text joined by
    spaces; ``one_sentence``: each marked as one sentence, whatever its punctuation."""
    spans, shift = [], 0
    for sentence in sentences:
        doc = nlp.make_doc(sentence)
        if one_sentence:
            write_starts(doc, [0])
        for _, pipe in nlp.pipeline:
            doc = pipe(doc)
        spans.extend(char_spans(doc, shift))
        shift += len(sentence) + 1
    return sorted(spans)


@pytest.fixture(scope="module", params=ARCHITECTURES)
def trained(request, tiny_bert, tmp_path_factory):
    """A tiny pipeline of each architecture, trained a few steps, then loaded with its gates
    open so that it writes many spans to compare."""
    folder = tmp_path_factory.mktemp(request.param)
    nlp = build(request.param, tiny_bert, folder)
    optimizer = nlp.create_optimizer()
    fix_random_seed(0)
    for _ in range(5):
        nlp.update(make_examples(nlp, TRAIN), sgd=optimizer)
    nlp.to_disk(folder / "trained")
    model = f"components.{PIPE}.model"
    gates = {} if request.param == "locate_label" else {
        f"{model}.decoder.start_threshold": 0.0, f"{model}.decoder.end_threshold": 0.0}
    return spacy.load(folder / "trained", config=gates)


def test_found_starts_follow_sentence_punctuation():
    nlp = spacy.blank("en")
    doc = nlp.make_doc(" ".join(SENTENCES))
    assert found_starts(doc).tolist() == [0, 8, 16]
    assert not doc.has_annotation("SENT_START")  # found for reading only
    assert found_starts(nlp.make_doc("a table dump 1 2 3 without an end")).tolist() == [0]
    assert found_starts(nlp.make_doc("")).tolist() == []


def test_reading_starts_keep_the_docs_own_boundaries():
    nlp = spacy.blank("en")
    words = " ".join(SENTENCES).split()
    own = [True] + [False] * (len(words) - 1)
    own[3] = True  # a boundary no punctuation marks, as a parser may set
    doc = Doc(nlp.vocab, words=words, sent_starts=own)
    assert reading_starts(doc, split=True).tolist() == [0, 3]
    raw = nlp.make_doc(" ".join(SENTENCES))
    assert reading_starts(raw, split=False) is None
    assert reading_starts(raw, split=True).tolist() == [0, 8, 16]


def test_write_starts_sets_doc_sents():
    doc = spacy.blank("en").make_doc(" ".join(SENTENCES))
    write_starts(doc, found_starts(doc))
    assert [sent.text for sent in doc.sents] == SENTENCES


def test_a_document_reads_as_its_sentences(trained):
    """nlp("S1 S2 S3") writes the spans of nlp("S1"), nlp("S2"), nlp("S3") at their offsets,
    with the same scores, and leaves the doc without sentence boundaries."""
    expected = sentence_by_sentence(trained, SENTENCES)
    assert expected, "the pipeline writes spans to compare"
    doc = trained(" ".join(SENTENCES))
    assert_same_spans(sorted(char_spans(doc)), expected)
    assert not doc.has_annotation("SENT_START")
    # the same through nlp.pipe, in a batch with other texts
    docs = list(trained.pipe([SENTENCES[0], " ".join(SENTENCES), "IL-2"]))
    assert_same_spans(sorted(char_spans(docs[1])), expected)


def test_a_pipe_before_keeps_its_boundaries(trained):
    """With a sentencizer first that ends sentences at ";" only, the pipe reads by those
    boundaries, not by the periods, and leaves them as they were."""
    segments = ["IL-2 gene expression . human T cells ;", "Jurkat cells express IL-2 ."]
    nlp = trained
    sentencizer = spacy.blank("en").add_pipe("sentencizer", config={"punct_chars": [";"]})
    doc = sentencizer(nlp.make_doc(" ".join(segments)))
    before = doc.to_array("SENT_START").tolist()
    for _, pipe in nlp.pipeline:
        doc = pipe(doc)
    assert doc.to_array("SENT_START").tolist() == before
    expected = sentence_by_sentence(nlp, segments, one_sentence=True)
    assert_same_spans(sorted(char_spans(doc)), expected)


def test_write_sents_and_split_sentences_settings(trained, tmp_path):
    text = " ".join(SENTENCES)
    trained.to_disk(tmp_path / "pipeline")
    component = f"components.{PIPE}"
    writer = spacy.load(tmp_path / "pipeline", config={f"{component}.write_sents": True})
    assert [sent.text for sent in writer(text).sents] == SENTENCES
    whole = spacy.load(tmp_path / "pipeline", config={f"{component}.split_sentences": False})
    pipe = whole.get_pipe(PIPE)
    assert pipe._batch([whole.make_doc(text)]).sentence_starts == [None]
    assert not whole(text).has_annotation("SENT_START")


def test_sentence_windows_follow_found_sentences():
    doc = spacy.blank("en").make_doc(" ".join(SENTENCES))
    windows = configure_sentence_windows(window_tokens=64, stride_tokens=48)([doc])[0]
    assert [w.text for w in windows] == SENTENCES
    strided = configure_sentence_windows(window_tokens=10, stride_tokens=8,
                                         split_sentences=False)([doc])[0]
    assert [(w.start, w.end) for w in strided] == [(0, 10), (8, 18), (16, 25)]
