"""Text with lone surrogates (half of a UTF-16 pair: a truncated emoji as JavaScript escapes it
in JSON) from every input path: ``annotate`` (JSON Lines; text files and stdin are decoded
from UTF-8, which holds none), the JSON Lines corpus reader and ``convert``, and ``nlp()``
through the package's tokenizer. Each is repaired to U+FFFD with a coded warning and a count,
every other character at its offset; generated text over all of Unicode, surrogates and
control characters included, never raises and gives spans inside their docs (#55)."""

import json
import warnings
from pathlib import Path

import pytest
import spacy
from helpers.annotate import read_output, save_trained_pipeline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.tokens import DocBin

from spacy_nested_mrc.annotate import MANIFEST
from spacy_nested_mrc.characters import repair_value
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.corpora.jsonl import read_jsonl
from spacy_nested_mrc.inputs import InputSpec, iter_records

TOKENIZER = {"@tokenizers": "spacy-nested-mrc.Tokenizer.v1", "split_hyphens": False}
# every code point, surrogates (which hypothesis leaves out by default) often
ANY_CHAR = st.characters(exclude_categories=()) | st.characters(
    min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_TEXT = st.text(alphabet=ANY_CHAR | st.sampled_from(" \n\t\x00IL-2 gene"), max_size=60)
SURROGATE = "\ud83e"
HIGH_LOW = range(0xD800, 0xE000)


@pytest.fixture(scope="module")
def pipeline(tiny_bert, tmp_path_factory) -> Path:
    """A small trained MRC pipeline whose tokenizer is the package's."""
    folder = save_trained_pipeline(tiny_bert, tmp_path_factory.mktemp("surrogates") / "p")
    nlp = spacy.load(folder)
    ours = spacy.blank("en", config={"nlp": {"tokenizer": TOKENIZER}})
    nlp.tokenizer = ours.tokenizer
    nlp.config["nlp"]["tokenizer"] = TOKENIZER
    nlp.to_disk(folder)
    return folder


def no_surrogate(text: str) -> bool:
    return not any(ord(c) in HIGH_LOW for c in text)


@settings(max_examples=300, deadline=None, database=None)
@given(value=st.recursive(ANY_TEXT | st.integers(), lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(ANY_TEXT, inner, max_size=3), max_leaves=8))
def test_repair_replaces_surrogates_one_for_one(value):
    repaired, count = repair_value(value)
    before, after = json.dumps(value), json.dumps(repaired)  # escapes every surrogate
    assert count == before.lower().count("\\ud") - after.lower().count("\\ud")
    if isinstance(value, str):
        assert len(repaired) == len(value) and no_surrogate(repaired)
        assert [a for a, b in zip(value, repaired) if a != b] == [
            c for c in value if ord(c) in HIGH_LOW]
        repaired.encode("utf8")


def test_the_issue_line_is_annotated_not_a_stopped_job(pipeline, tmp_path):
    """The line that stopped every run of the job: annotated with U+FFFD in its place
    (offsets of the rest unchanged), listed in the summary, NMW138."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id":"a","text":"IL-2 gene expression"}\n'
                      '{"id":"b","text":"broken emoji \\ud83e here"}\n'
                      '{"id":"c\\udc00","text":"T cells \\ud83e\\ud83e and IL-2"}\n')
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["annotate", str(pipeline), str(source), str(out), "--no-progress"]) == 0
    messages = [str(w.message) for w in caught if "NMW138" in str(w.message)]
    assert len(messages) == 2 and "Line 2 of in.jsonl" in messages[0]
    assert "3 lone surrogate" in messages[1]  # two in the text, one in the id
    records = read_output(out)
    assert [r["id"] for r in records] == ["a", "b", "c\ufffd"]
    assert records[1]["text"] == "broken emoji \ufffd here"
    assert records[2]["text"] == "T cells \ufffd\ufffd and IL-2"
    for record in records:
        for span in record["spans"]:
            assert 0 <= span["start_char"] < span["end_char"] <= len(record["text"])
    summary = json.loads((out / MANIFEST).read_text())["summary"]
    assert summary["problems"] == {"surrogates": 2} and summary["documents"] == 3


def test_the_corpus_reader_and_convert_repair_and_count(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(
        '{"tokens": ["IL-2", "\\ud83e", "gene"], "entities": [{"start": 0, "end": 3, '
        '"type": "DNA"}]}\n'
        '{"tokens": ["T", "cells"], "entities": [{"start": 0, "end": 2, "type": "cell_type"}]}\n'
        '{"tokens": ["a\\udc00b\\ud800"], "entities": []}\n')
    with pytest.warns(UserWarning, match=r"NMW006.*Replaced 3 lone surrogate.*2 record\(s\)"):
        docs = list(read_jsonl(path, spacy.blank("en").vocab))
    assert [t.text for t in docs[0]] == ["IL-2", "\ufffd", "gene"]
    assert [(s.start, s.end, s.label_) for s in docs[0].spans["nested"]] == [(0, 3, "DNA")]
    assert docs[2].text == "a\ufffdb\ufffd"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["convert", str(path), str(tmp_path / "train.spacy"), "--no-progress"]) == 0
    assert any("NMW006" in str(w.message) for w in caught)
    again = list(DocBin().from_disk(tmp_path / "train.spacy").get_docs(spacy.blank("en").vocab))
    assert [d.text for d in again] == [d.text for d in docs]


def test_nlp_repairs_through_the_packages_tokenizer(pipeline):
    nlp = spacy.load(pipeline)
    text = "broken emoji \ud83e here, IL-2 \udc00"
    with pytest.warns(UserWarning, match="NMW006.*Replaced 2 lone surrogate"):
        doc = nlp(text)
    assert doc.text == text.replace("\ud83e", "\ufffd").replace("\udc00", "\ufffd")
    assert len(doc.text) == len(text)
    assert [t.idx for t in doc if t.text == "here"] == [text.index("here")]
    # a text without them: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        nlp.make_doc("IL-2 gene")


def check_spans(doc) -> None:
    group = doc.spans.get("nested", [])
    scores = group.attrs.get("scores", []) if len(group) else []
    assert len(scores) == len(group)
    for span in group:
        assert 0 <= span.start < span.end <= len(doc)
        assert doc.text[span.start_char:span.end_char] == span.text


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=4))
def test_any_unicode_through_nlp_the_readers_and_annotate(pipeline, tmp_path_factory, texts):
    """Generated text over all of Unicode: ``nlp()`` (the package's tokenizer), the JSON Lines
    corpus reader (each text's characters as tokens) and ``annotate``'s reader feeding the
    pipeline; no exception, every span inside its doc, texts as long as given."""
    nlp = _loaded(pipeline)
    folder = tmp_path_factory.mktemp("any")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for doc in nlp.pipe(texts):
            check_spans(doc)
        corpus = folder / "c.jsonl"
        corpus.write_text("".join(json.dumps({"tokens": [c for c in t if c.strip()] or ["x"],
                                              "entities": []}) + "\n" for t in texts))
        for doc in read_jsonl(corpus, nlp.vocab):
            assert no_surrogate(doc.text)
        lines = folder / "a.jsonl"
        lines.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                                 for i, t in enumerate(texts)))
        records = list(iter_records(InputSpec(str(lines)), nlp.vocab))
        assert [len(r.text) for r in records] == [len(t) for t in texts]
        for doc in nlp.pipe([r.text for r in records]):
            check_spans(doc)
            doc.to_json()
            json.dumps(doc.text, ensure_ascii=False).encode("utf8")


_NLP: dict = {}


def _loaded(path: Path):
    if path not in _NLP:
        _NLP[path] = spacy.load(path)
    return _NLP[path]
