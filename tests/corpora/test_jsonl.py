"""Tests for reading GENIA-style JSONL data (spacy_nested_mrc.corpora.jsonl), sentence by sentence
or as documents with context-only sentences, and the convert CLI."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import spacy
from helpers.documents import DOCUMENT_RECORDS, write_jsonl
from spacy.tokens import Doc, DocBin, Span, SpanGroup
from spacy.vocab import Vocab

from spacy_nested_mrc.annotation import unannotated_key, unannotated_tokens
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.corpora.jsonl import (
    ConversionReport,
    convert,
    create_jsonl_reader,
    iter_records,
    read_jsonl,
    record_to_doc,
)

SAMPLE_DIR = Path(__file__).parents[2] / "spacy_nested_mrc" / "sample"
GENIA_DEV = Path(__file__).parents[3] / "shared/data/genia/dev.jsonl"
GENIA_TYPES = {"DNA", "RNA", "protein", "cell_line", "cell_type"}


def count_entities(path: Path) -> int:
    return sum(len(record.get("entities", [])) for _, record in iter_records(path))


def count_records(path: Path) -> int:
    return sum(1 for _ in iter_records(path))


def span_tuples(doc: Doc, key: str = "nested") -> list[tuple[int, int, str]]:
    return sorted((span.start, span.end, span.label_) for span in doc.spans[key])


# A record with one valid entity and each kind of invalid one.
BAD_RECORD = {
    "tokens": ["p53", "promoter", "activity", "."],
    "entities": [
        {"start": 0, "end": 2, "type": "DNA"},
        {"start": 0, "end": 2, "type": "DNA"},  # duplicate
        {"start": 2, "end": 9, "type": "protein"},  # out_of_range
        {"start": -1, "end": 1, "type": "protein"},  # out_of_range
        {"start": 1, "end": 1, "type": "protein"},  # empty
        {"start": 0, "end": 1, "type": ""},  # bad_type
        {"start": 0, "end": 1, "type": 7},  # bad_type
        {"start": 0.5, "end": 1, "type": "protein"},  # not_integer
    ],
}


@pytest.fixture
def vocab() -> Vocab:
    return Vocab()


# sample -----------------------------------------------------------------------


@pytest.mark.parametrize("name,min_docs", [("train.jsonl", 50), ("dev.jsonl", 10)])
def test_sample_reads_cleanly(vocab, name, min_docs):
    path = SAMPLE_DIR / name
    report = ConversionReport()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NMW001 expected
        docs = list(read_jsonl(path, vocab, report=report))
    assert len(docs) >= min_docs
    assert report.docs == len(docs)
    assert report.n_skipped == 0
    assert report.entities == count_entities(path)
    labels = {span.label_ for doc in docs for span in doc.spans["nested"]}
    assert labels == GENIA_TYPES
    # nested entities are kept as overlapping spans
    nested = [
        (a, b)
        for doc in docs
        for a in doc.spans["nested"]
        for b in doc.spans["nested"]
        if b.start <= a.start and a.end <= b.end and len(a) < len(b)
    ]
    assert nested
    # some sentences have no entities, and still have the span group
    assert any(len(doc.spans["nested"]) == 0 for doc in docs)
    assert all(doc.user_data["doc_id"].startswith("SAMPLE:") for doc in docs)


def test_sample_offsets_match_text(vocab):
    docs = list(read_jsonl(SAMPLE_DIR / "train.jsonl", vocab))
    doc = docs[0]
    assert doc.text.startswith("Induction of IL-2 gene expression")
    assert ("IL-2 gene", "DNA") in {(s.text, s.label_) for s in doc.spans["nested"]}
    assert ("IL-2", "protein") in {(s.text, s.label_) for s in doc.spans["nested"]}
    assert not doc.text.endswith(" ")


# iter_records -----------------------------------------------------------------


def test_iter_records_skips_blank_lines_and_numbers_lines(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"tokens": ["a"], "entities": []}\n\n   \n{"tokens": ["b", "c"]}\n', encoding="utf-8"
    )
    records = list(iter_records(path))
    assert [line for line, _ in records] == [1, 4]
    assert records[1][1]["tokens"] == ["b", "c"]


def test_iter_records_reads_a_byte_order_mark_as_such(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"tokens": ["a"], "entities": []}\n{"tokens": ["b"]}\n')
    assert [record["tokens"] for _, record in iter_records(path)] == [["a"], ["b"]]


def test_bad_json_names_file_and_line(tmp_path, vocab):
    path = write_jsonl(
        tmp_path / "broken.jsonl",
        [{"tokens": ["a"], "entities": []}, {"tokens": ["b"], "entities": []}, '{"tokens": ['],
    )
    with pytest.raises(ValueError) as excinfo:
        list(read_jsonl(path, vocab))
    message = str(excinfo.value)
    assert "NME101" in message
    assert str(path) in message
    assert "line 3" in message


@pytest.mark.parametrize(
    "record",
    [
        ["not", "an", "object"],
        {"entities": []},
        {"tokens": "IL-2 gene"},
        {"tokens": ["IL-2", 2]},
        {"tokens": ["IL-2", ""]},
        {"tokens": ["IL-2"], "entities": {"start": 0}},
        {"tokens": ["IL-2", "gene"], "spaces": [True]},
        {"tokens": ["IL-2", "gene"], "spaces": [1, 0]},
        {"tokens": ["IL-2", "gene"], "spaces": "yes"},
    ],
)
def test_not_a_sentence_record(tmp_path, record):
    path = write_jsonl(tmp_path / "data.jsonl", [{"tokens": ["ok"]}, record])
    with pytest.raises(ValueError, match=r"NME102.*Line 2 of"):
        list(iter_records(path))


def test_missing_file(tmp_path, vocab):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(FileNotFoundError, match="NME104"):
        iter_records(path)
    with pytest.raises(FileNotFoundError, match="NME104"):
        read_jsonl(path, vocab)


# entities ---------------------------------------------------------------------


def test_invalid_entities_are_skipped_counted_and_warned(tmp_path, vocab):
    path = write_jsonl(tmp_path / "data.jsonl", [{"tokens": ["x"]}, BAD_RECORD])
    report = ConversionReport()
    with pytest.warns(UserWarning, match="NMW001") as record:
        docs = list(read_jsonl(path, vocab, report=report))
    nmw = [w for w in record if "NMW001" in str(w.message)]
    assert len(nmw) == 1
    message = str(nmw[0].message)
    assert "Skipped 7 entities" in message
    assert str(path) in message
    for reason in ("out_of_range: 2", "empty: 1", "duplicate: 1", "bad_type: 2", "not_integer: 1"):
        assert reason in message
    assert span_tuples(docs[1]) == [(0, 2, "DNA")]
    assert report.docs == 2
    assert report.entities == 1
    assert report.skipped == {
        "duplicate": 1,
        "out_of_range": 2,
        "empty": 1,
        "bad_type": 2,
        "not_integer": 1,
    }
    assert report.n_skipped == 7
    assert len(report.examples) == 7
    assert all(line == 2 for line, _, _ in report.examples)
    assert ("duplicate" in report.summary()) and ("7 skipped" in report.summary())


def test_strict_raises_on_first_invalid_entity(tmp_path, vocab):
    path = write_jsonl(tmp_path / "data.jsonl", [BAD_RECORD])
    with pytest.raises(ValueError, match=r"NME105.*line 1.*duplicate"):
        list(read_jsonl(path, vocab, strict=True))
    with pytest.raises(ValueError, match="NME105"):
        convert(path, tmp_path / "out.spacy", strict=True, show_progress=False)
    assert not (tmp_path / "out.spacy").exists()


def test_record_to_doc(vocab):
    report = ConversionReport()
    record = {
        "tokens": ["c-fos", "serum", "response", "element"],
        "entities": [
            {"start": 0, "end": 4, "type": "DNA"},
            {"start": 0, "end": 2, "type": "protein"},
            {"start": 0, "end": 2, "type": "DNA"},  # same span, other type: kept
        ],
        "doc": "abstract-1",
    }
    doc = record_to_doc(vocab, record, 1, "ents", report)
    assert [t.text for t in doc] == record["tokens"]
    assert doc.text == "c-fos serum response element"
    assert isinstance(doc.spans["ents"], SpanGroup)
    assert span_tuples(doc, "ents") == [(0, 2, "DNA"), (0, 2, "protein"), (0, 4, "DNA")]
    assert doc.user_data["doc_id"] == "abstract-1"
    assert (report.docs, report.entities, report.n_skipped) == (1, 3, 0)


def test_record_spaces_give_the_text_as_written(tmp_path):
    # GENIA splits "Ras/protein" at the boundary of the protein "Ras"; with its "spaces" the
    # doc holds the text as written, and the pipeline's tokenizer meets that text
    record = {"tokens": ["Ras", "/protein", "kinase", "C"], "spaces": [False, True, True, False],
              "entities": [{"start": 0, "end": 1, "type": "protein"}]}
    path = write_jsonl(tmp_path / "d.jsonl", [record, {**record, "spaces": None}])
    nlp = spacy.blank("en")
    written, joined = list(create_jsonl_reader(path)(nlp))
    assert written.reference.text == "Ras/protein kinase C"
    assert [t.text for t in written.reference] == record["tokens"]
    assert [t.text for t in written.predicted] == ["Ras", "/", "protein", "kinase", "C"]
    assert joined.reference.text == "Ras /protein kinase C"  # null: joined by spaces
    for eg in (written, joined):
        (span,) = eg.get_aligned_spans_y2x(eg.reference.spans["nested"], allow_overlap=True)
        assert (span.text, span.label_) == ("Ras", "protein")


def test_empty_tokens_give_empty_doc_with_empty_group(tmp_path, vocab):
    doc = record_to_doc(vocab, {"tokens": [], "entities": []}, 1, "nested", None)
    assert len(doc) == 0
    assert doc.text == ""
    assert "nested" in doc.spans
    assert len(doc.spans["nested"]) == 0
    path = write_jsonl(tmp_path / "data.jsonl", [{"tokens": []}, {"tokens": ["a"]}])
    docs = list(read_jsonl(path, vocab))
    assert [len(d) for d in docs] == [0, 1]
    assert all("nested" in d.spans and len(d.spans["nested"]) == 0 for d in docs)


def test_limit(vocab):
    docs = list(read_jsonl(SAMPLE_DIR / "train.jsonl", vocab, limit=5))
    assert len(docs) == 5


# convert and reader -----------------------------------------------------------


def test_convert_round_trips(tmp_path):
    src = SAMPLE_DIR / "dev.jsonl"
    out = tmp_path / "sub" / "dev.spacy"
    report = convert(src, out, spans_key="ents", show_progress=False)
    assert out.exists()
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    # documents: the sentences of each "doc" joined, with their sentence boundaries
    originals = list(read_jsonl(src, nlp.vocab, "ents", group_by="doc"))
    assert len(docs) == len(originals) == report.documents
    assert report.docs == count_records(src) > report.documents
    for doc, original in zip(docs, originals, strict=True):
        assert [t.text for t in doc] == [t.text for t in original]
        assert span_tuples(doc, "ents") == span_tuples(original, "ents")
        assert doc.user_data["doc_id"] == original.user_data["doc_id"]
        assert [s.start for s in doc.sents] == [s.start for s in original.sents]
    assert sum(len(d.spans["ents"]) for d in docs) == report.entities == count_entities(src)
    # --sentences: one doc per record, as the reader gives them without group_by
    report = convert(src, tmp_path / "sentences.spacy", spans_key="ents", show_progress=False,
                     group_by=None)
    assert report.documents == report.docs == len(list(read_jsonl(src, nlp.vocab, "ents")))


def test_convert_with_progress_bar(tmp_path, capsys):
    out = tmp_path / "train.spacy"
    report = convert(SAMPLE_DIR / "train.jsonl", out, show_progress=True)
    assert out.exists()
    assert report.docs > 0
    assert report.output_path == str(out)
    assert "Converting" in capsys.readouterr().err
    # skipped entities are still reported when the bar is shown
    path = write_jsonl(tmp_path / "bad.jsonl", [BAD_RECORD])
    with pytest.warns(UserWarning, match="NMW001"):
        report = convert(path, tmp_path / "bad.spacy", show_progress=True)
    assert report.n_skipped == 7


def test_convert_into_folder(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    report = convert(SAMPLE_DIR / "dev.jsonl", folder, show_progress=False)
    assert report.output_path == str(folder / "dev.spacy")
    assert (folder / "dev.spacy").exists()
    report = convert(SAMPLE_DIR / "dev.jsonl", f"{tmp_path}/new/", show_progress=False)
    assert (tmp_path / "new" / "dev.spacy").exists()


def test_reader_yields_examples():
    nlp = spacy.blank("en")
    reader = spacy.registry.readers.get("spacy-nested-mrc.JsonlCorpus.v1")
    assert reader is create_jsonl_reader
    corpus = reader(SAMPLE_DIR / "dev.jsonl", spans_key="nested", limit=4)
    for _ in range(2):  # each call re-reads the file (one call per epoch)
        examples = list(corpus(nlp))
        assert len(examples) == 4
        assert any(len(eg.reference.spans["nested"]) for eg in examples)
        for eg in examples:
            # as spacy.Corpus.v1: the model sees the text as the pipeline tokenizes it
            assert [t.text for t in eg.predicted] == [t.text for t in nlp(eg.reference.text)]
            assert eg.predicted.text == eg.reference.text
            assert len(eg.predicted.spans.get("nested", [])) == 0
            assert eg.predicted is not eg.reference


def test_reader_tokenizes_like_the_pipeline_and_keeps_gold_tokens_on_request(tmp_path):
    record = {"tokens": ["expression", "of", "c-fos", "mRNA", "."],
              "entities": [{"start": 2, "end": 4, "type": "RNA"}], "doc": "a1"}
    path = write_jsonl(tmp_path / "d.jsonl", [record])
    nlp = spacy.blank("en")
    (eg,) = list(create_jsonl_reader(path)(nlp))
    assert [t.text for t in eg.predicted] == ["expression", "of", "c", "-", "fos", "mRNA", "."]
    assert [t.text for t in eg.reference] == record["tokens"]
    assert eg.predicted.user_data["doc_id"] == "a1"
    (aligned,) = eg.get_aligned_spans_y2x(eg.reference.spans["nested"], allow_overlap=True)
    assert (aligned.start, aligned.end, aligned.text) == (2, 6, "c-fos mRNA")
    (gold,) = list(create_jsonl_reader(path, gold_preproc=True)(nlp))
    assert [t.text for t in gold.predicted] == record["tokens"]


def test_reader_reports_entities_the_tokenizer_cannot_align(tmp_path):
    # gold tokens "IL-2" "-induced" written without a space; a tokenizer that splits on
    # whitespace only keeps "IL-2-induced" whole, so the protein ends inside a token
    nlp = spacy.blank("en")
    reference = Doc(nlp.vocab, words=["IL-2", "-induced", "genes"], spaces=[False, True, False])
    reference.spans["nested"] = [Span(reference, 0, 1, "protein"),
                                 Span(reference, 0, 3, "DNA")]
    DocBin(docs=[reference]).to_disk(tmp_path / "d.spacy")
    nlp.tokenizer = lambda text: Doc(nlp.vocab, words=text.split(" "))
    with pytest.warns(UserWarning, match=r"NMW003.*1 entity.*protein: 1.*'IL-2' \(protein\)"):
        (eg,) = list(create_jsonl_reader(tmp_path / "d.spacy")(nlp))
    assert [t.text for t in eg.predicted] == ["IL-2-induced", "genes"]
    assert len(eg.get_aligned_spans_y2x(eg.reference.spans["nested"], allow_overlap=True)) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gold tokens: nothing to report
        list(create_jsonl_reader(tmp_path / "d.spacy", gold_preproc=True)(nlp))


def test_reader_accepts_no_path_until_it_is_read():
    from thinc.api import Config

    config = Config().from_str(
        """
        [corpus]
        @readers = "spacy-nested-mrc.JsonlCorpus.v1"
        path = null
        """
    )
    corpus = spacy.registry.resolve(config)["corpus"]
    with pytest.raises(ValueError, match="NME106"):
        list(corpus(spacy.blank("en")))


def test_reader_from_config(tmp_path):
    from thinc.api import Config

    entities = [{"start": 0, "end": 2, "type": "DNA"}, {"start": 0, "end": 1, "type": "protein"}]
    path = write_jsonl(tmp_path / "d.jsonl", [{"tokens": ["IL-2", "gene"], "entities": entities}])
    config = Config().from_str(
        f"""
        [corpus]
        @readers = "spacy-nested-mrc.JsonlCorpus.v1"
        path = "{path}"
        spans_key = "sc"
        """
    )
    corpus = spacy.registry.resolve(config)["corpus"]
    (eg,) = list(corpus(spacy.blank("en")))
    assert span_tuples(eg.reference, "sc") == [(0, 1, "protein"), (0, 2, "DNA")]


def test_reader_reads_docbin_like_jsonl(tmp_path):
    """A .spacy path is read as a DocBin: same examples as from the JSONL it came from."""
    out = convert(SAMPLE_DIR / "dev.jsonl", tmp_path / "dev.spacy", show_progress=False)
    nlp = spacy.blank("en")
    from_jsonl = list(create_jsonl_reader(SAMPLE_DIR / "dev.jsonl", group_by="doc")(nlp))
    corpus = create_jsonl_reader(Path(out.output_path))
    for _ in range(2):  # each call re-reads the file (one call per epoch)
        examples = list(corpus(nlp))
        assert len(examples) == len(from_jsonl) == out.documents
        for eg, expected in zip(examples, from_jsonl):
            assert span_tuples(eg.reference) == span_tuples(expected.reference)
            assert [t.text for t in eg.predicted] == [t.text for t in expected.predicted]
            assert eg.predicted.text == eg.reference.text
            assert "nested" not in eg.predicted.spans
            assert eg.predicted is not eg.reference
            assert eg.predicted.user_data["doc_id"] == eg.reference.user_data["doc_id"]
            starts = [x.start for x in expected.predicted.sents]
            assert [x.start for x in eg.predicted.sents] == starts
    assert len(list(create_jsonl_reader(Path(out.output_path), limit=3)(nlp))) == 3


def test_reader_docbin_from_config_with_other_key(tmp_path):
    from thinc.api import Config

    entities = [{"start": 0, "end": 2, "type": "DNA"}, {"start": 0, "end": 1, "type": "protein"}]
    path = write_jsonl(tmp_path / "d.jsonl", [{"tokens": ["IL-2", "gene"], "entities": entities}])
    convert(path, tmp_path / "d.spacy", spans_key="sc", show_progress=False)
    config = Config().from_str(
        f"""
        [corpus]
        @readers = "spacy-nested-mrc.JsonlCorpus.v1"
        path = "{tmp_path / 'd.spacy'}"
        spans_key = "sc"
        limit = 0
        strict = true
        """
    )
    corpus = spacy.registry.resolve(config)["corpus"]
    (eg,) = list(corpus(spacy.blank("en")))
    assert span_tuples(eg.reference, "sc") == [(0, 1, "protein"), (0, 2, "DNA")]
    assert len(eg.predicted.spans) == 0


def test_reader_docbin_without_the_key(tmp_path):
    vocab = spacy.blank("en").vocab
    doc_bin = DocBin()
    doc_bin.add(Doc(vocab, words=["IL-2", "gene"]))
    doc_bin.to_disk(tmp_path / "bare.spacy")
    nlp = spacy.blank("en")
    # kept as it is: the pipe and the scorer skip docs without the group
    (eg,) = list(create_jsonl_reader(tmp_path / "bare.spacy")(nlp))
    assert "nested" not in eg.reference.spans
    with pytest.raises(ValueError, match="NME105.*no span group 'nested'"):
        list(create_jsonl_reader(tmp_path / "bare.spacy", strict=True)(nlp))
    corpus = create_jsonl_reader(tmp_path / "missing.spacy")  # not opened yet
    with pytest.raises(FileNotFoundError, match="NME104"):
        list(corpus(nlp))


# documents: sentences grouped by their records' document ----------------------


def test_reader_groups_sentences_into_documents(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", DOCUMENT_RECORDS)
    vocab = spacy.blank("en").vocab
    report = ConversionReport()
    with pytest.warns(UserWarning, match="NMW001"):
        docs = list(read_jsonl(path, vocab, group_by="doc", report=report))
    assert len(docs) == 2
    doc = docs[0]
    assert doc.text == "IL-2 gene . It binds NF-kappa B . c-fos mRNA rises ."
    assert [s.start for s in doc.sents] == [0, 3, 8]
    assert doc.user_data["doc_id"] == "A"
    found = {(s.text, s.label_) for s in doc.spans["nested"]}
    # the context-only sentence's entity is skipped and counted, not kept
    assert found == {("IL-2 gene", "DNA"), ("IL-2", "protein"), ("c-fos mRNA", "RNA")}
    assert report.skipped == {"context_only": 1}
    assert [s.text for s in doc.spans[unannotated_key("nested")]] == ["It binds NF-kappa B ."]
    assert unannotated_key("nested") not in docs[1].spans
    # without group_by: one doc per line, as before
    with pytest.warns(UserWarning, match="NMW001"):
        assert len(list(read_jsonl(path, vocab, report=ConversionReport()))) == 4


def test_reader_gives_the_predicted_doc_the_files_sentences(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", DOCUMENT_RECORDS)
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="NMW001"):
        examples = list(create_jsonl_reader(path, group_by="doc")(nlp))
    predicted = examples[0].predicted
    assert predicted.text == examples[0].reference.text
    assert [s.text for s in predicted.sents] == [s.text for s in examples[0].reference.sents]
    mask = unannotated_tokens(examples[0].reference, predicted, "nested")
    assert [t.text for t, m in zip(predicted, mask) if m] == ["It", "binds", "NF", "-", "kappa",
                                                              "B", "."]
    assert unannotated_tokens(examples[1].reference, examples[1].predicted, "nested") is None
    with pytest.warns(UserWarning, match="NMW001"):
        assert len(list(create_jsonl_reader(path, group_by="doc", limit=1)(nlp))) == 1


def test_annotated_must_be_a_boolean(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{**DOCUMENT_RECORDS[0], "annotated": "no"}])
    with pytest.raises(ValueError, match="NME102.*annotated"):
        list(read_jsonl(path, spacy.blank("en").vocab))


def test_convert_writes_documents_unless_asked_for_sentences(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", DOCUMENT_RECORDS)
    vocab = spacy.blank("en").vocab
    with pytest.warns(UserWarning, match="NMW001"):
        convert(path, tmp_path / "docs.spacy", show_progress=False)
        convert(path, tmp_path / "sents.spacy", show_progress=False, group_by=None)
    docs = list(DocBin().from_disk(tmp_path / "docs.spacy").get_docs(vocab))
    assert len(docs) == 2 and [s.start for s in docs[0].sents] == [0, 3, 8]
    assert [s.text for s in docs[0].spans[unannotated_key("nested")]] == ["It binds NF-kappa B ."]
    assert len(list(DocBin().from_disk(tmp_path / "sents.spacy").get_docs(vocab))) == 4


# CLI --------------------------------------------------------------------------


def test_cli_convert(tmp_path, capsys):
    out = tmp_path / "dev.spacy"
    code = main(["convert", str(SAMPLE_DIR / "dev.jsonl"), str(out), "--no-progress"])
    assert code == 0
    assert out.exists()
    printed = capsys.readouterr().out
    assert "0 skipped" in printed
    docs = list(DocBin().from_disk(out).get_docs(Vocab()))
    assert sum(len(d.spans["nested"]) for d in docs) == count_entities(SAMPLE_DIR / "dev.jsonl")


def test_cli_convert_options_and_errors(tmp_path, capsys):
    path = write_jsonl(tmp_path / "data.jsonl", [BAD_RECORD])
    out = tmp_path / "out.spacy"
    with pytest.warns(UserWarning, match="NMW001"):
        code = main(["convert", str(path), str(out), "--spans-key", "sc", "--no-progress"])
    assert code == 0
    assert "7 skipped" in capsys.readouterr().out
    (doc,) = DocBin().from_disk(out).get_docs(Vocab())
    assert span_tuples(doc, "sc") == [(0, 2, "DNA")]
    assert main(["convert", str(path), str(out), "--strict", "--no-progress"]) == 1
    assert "NME105" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "missing.jsonl"), str(out), "--no-progress"]) == 1
    assert "NME104" in capsys.readouterr().err


# the real GENIA development set, when it is around ----------------------------


@pytest.mark.skipif(not GENIA_DEV.exists(), reason=f"GENIA dev set not found at {GENIA_DEV}")
def test_genia_dev_converts_without_skips(tmp_path):
    out = tmp_path / "dev.spacy"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an NMW001 would fail the test
        report = convert(GENIA_DEV, out, show_progress=False)
    expected = count_entities(GENIA_DEV)
    assert expected == 5365
    assert report.n_skipped == 0
    assert report.entities == expected
    docs = list(DocBin().from_disk(out).get_docs(Vocab()))
    # 1,669 sentences of 706 abstracts (dev is every 4th sentence: each abstract's are joined)
    assert report.docs == 1669
    assert len(docs) == report.documents == 706
    assert sum(len(d.spans["nested"]) for d in docs) == expected


def test_reader_reads_a_folder_of_corpus_files(tmp_path):
    """A folder is read as its .jsonl, .jsonl.gz and .spacy files, subfolders included,
    sorted by path; other files are left alone and the limit counts all files' docs."""
    import gzip
    import json

    first = {"tokens": ["IL-2", "gene"], "entities": [{"start": 0, "end": 1, "type": "protein"}]}
    second = {"tokens": ["T", "cells"], "entities": [{"start": 0, "end": 2, "type": "cell_type"}]}
    third = {"tokens": ["c-fos", "mRNA"], "entities": [{"start": 0, "end": 2, "type": "RNA"}]}
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [first])
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf8") as file_:
        file_.write(json.dumps(second) + "\n")
    convert(write_jsonl(tmp_path / "c.jsonl", [third]), folder / "sub" / "c.spacy",
            show_progress=False)
    (folder / "manifest.json").write_text("{}")
    (folder / "notes.txt").write_text("not a corpus")
    (folder / "z.jsonl").symlink_to(folder / "a.jsonl")  # the same file: read once
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="NMW136"):
        examples = list(create_jsonl_reader(folder)(nlp))
    assert [span_tuples(eg.reference) for eg in examples] == [
        [(0, 1, "protein")], [(0, 2, "cell_type")], [(0, 2, "RNA")]]
    assert [eg.reference.text for eg in list(create_jsonl_reader(folder, limit=2)(nlp))] == [
        "IL-2 gene", "T cells"]


def test_reader_refuses_a_folder_without_corpus_files(tmp_path):
    (tmp_path / "notes.txt").write_text("not a corpus")
    with pytest.raises(ValueError, match="NME107"):
        list(create_jsonl_reader(tmp_path)(spacy.blank("en")))
