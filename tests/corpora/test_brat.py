"""Tests for the BRAT standoff importer (spacy_nested_mrc.corpora.brat) and convert-brat."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_nested_mrc.cli import main
from spacy_nested_mrc.corpora.brat import (
    BratConversionReport,
    convert_brat,
    count_nested_crossing,
    doc_to_record,
    parse_ann,
    read_brat,
)
from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader, iter_records

TEXT = (
    "Human T cells express the IL-2 receptor alpha chain.\n"
    "NF-kappa B binds the IL-2R alpha promoter.\n"
)


def t_line(ann_id: str, label: str, needle: str, *, text: str = TEXT, nth: int = 0) -> str:
    """A text-bound annotation of the nth occurrence of needle in text."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    return f"{ann_id}\t{label} {start} {start + len(needle)}\t{needle}"


# kept: nested (T2 in T1; T4, T5, T6 in T3), crossing (T5 "IL-2 receptor" and T6 "receptor
# alpha chain"), the same span with two labels (T9, T11) and a duplicate (T10 as T9)
KEPT = [
    t_line("T1", "cell_type", "Human T cells"),
    t_line("T2", "cell_type", "T cells"),
    t_line("T3", "protein", "IL-2 receptor alpha chain"),
    t_line("T4", "protein", "IL-2"),
    t_line("T5", "protein", "IL-2 receptor"),
    t_line("T6", "DNA", "receptor alpha chain"),
    t_line("T7", "protein", "NF-kappa B"),
    t_line("T9", "DNA", "IL-2R alpha promoter"),
    t_line("T10", "DNA", "IL-2R alpha promoter"),
    t_line("T11", "protein", "IL-2R alpha promoter"),
]
# not entities: an event with its trigger, a relation, an attribute, a note, a normalization
NOT_ENTITIES = [
    t_line("T15", "Binding", "binds"),
    "E1\tBinding:T15 Theme:T7",
    "R1\tPart-of Arg1:T4 Arg2:T3",
    "A1\tNegation E1",
    "#1\tAnnotatorNotes T1\tchecked",
    "N1\tReference T7 Wikipedia:123\tNF-kB",
]
EXPECTED_SPANS = [
    ("Human T cells", "cell_type"),
    ("T cells", "cell_type"),
    ("IL-2 receptor alpha chain", "protein"),
    ("IL-2 receptor", "protein"),
    ("IL-2", "protein"),
    ("receptor alpha chain", "DNA"),
    ("NF-kappa B", "protein"),
    ("IL-2R alpha promoter", "DNA"),
    ("IL-2R alpha promoter", "protein"),
]


def write_doc(folder: Path, name: str, lines: list[str], text: str = TEXT) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.txt").write_text(text, encoding="utf-8", newline="")
    ann = folder / f"{name}.ann"
    ann.write_text("".join(line + "\n" for line in lines), encoding="utf-8", newline="")
    return ann


def spans(doc: Doc, key: str = "nested") -> list[tuple[str, str]]:
    return [(span.text, span.label_) for span in doc.spans[key]]


def span_tokens(doc: Doc, key: str = "nested") -> list[tuple[list[str], str]]:
    return [([token.text for token in span], span.label_) for span in doc.spans[key]]


def read_all(path: Path, **kwargs) -> tuple[list[Doc], BratConversionReport]:
    report = BratConversionReport()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the clean documents warn nothing
        docs = list(read_brat(path, report=report, **kwargs))
    return docs, report


def test_nested_crossing_and_not_entities(tmp_path: Path) -> None:
    write_doc(tmp_path, "abstract", KEPT + NOT_ENTITIES)
    (docs, report) = read_all(tmp_path)
    assert len(docs) == 1
    doc = docs[0]
    assert doc.text == TEXT  # the DocBin docs keep the text as it is
    assert doc.user_data["doc_id"] == "abstract" and "sentence" not in doc.user_data
    assert spans(doc) == EXPECTED_SPANS
    assert report.documents == 1 and report.records == 1
    assert report.annotations == 11  # T1-T11 without T8, and the trigger T15
    assert report.entities == 9 and report.duplicates == 1
    assert report.nested == 4  # T2, T4, T5, T6
    assert report.crossing == 2  # T5, T6
    assert report.types == {"cell_type": 2, "protein": 5, "DNA": 2}
    assert report.not_entities == {
        "event": 1, "event_trigger": 1, "relation": 1, "attribute": 1, "note": 1,
        "normalization": 1,
    }
    assert report.skipped == {} and report.n_skipped == 0
    summary = report.summary()
    assert "9 entities kept" in summary and "4 nested, 2 crossing" in summary
    assert "event 1, event_trigger 1" in summary


def test_problems_reported_with_codes(tmp_path: Path) -> None:
    ann = write_doc(
        tmp_path,
        "abstract",
        KEPT
        + [
            t_line("T8", "protein", "IL-2", nth=1),  # inside the token "IL-2R"
            "T12\tprotein 26 30;46 51\tIL-2 chain",  # discontinuous
            "T13\tprotein 200 210\tfoo",  # beyond the text
            "T14\tprotein 10 10\t",  # no text
            t_line("T16", "protein", "NF-kappa B").replace("kappa B", "kappa C"),  # mismatch
            "X1 not a brat line",
        ],
    )
    report = BratConversionReport()
    with pytest.warns(UserWarning) as caught:
        docs = list(read_brat(ann, report=report))  # a single .ann file of a pair
    assert spans(docs[0]) == EXPECTED_SPANS
    assert report.skipped == {
        "unaligned": 1, "discontinuous": 1, "bad_offsets": 2, "text_mismatch": 1,
        "malformed": 1,
    }
    messages = {str(w.message)[1:7]: str(w.message) for w in caught}
    assert set(messages) == {"NMW151", "NMW152", "NMW153", "NMW154", "NMW156"}
    # the unaligned entity is named with its file, id, text, offsets and token
    start = TEXT.index("IL-2R")
    assert f"abstract.ann T8 'IL-2' [{start}, {start + 4}) (a boundary falls inside " \
        "'IL-2R')" in messages["NMW154"]
    assert "abstract.ann T12 'IL-2 chain' [26, 30) [46, 51)" in messages["NMW151"]
    assert "T13 'foo' [200, 210)" in messages["NMW152"] and "T14" in messages["NMW152"]
    assert "the .txt has 'NF-kappa B'" in messages["NMW153"]
    assert "line 16: 'X1 not a brat line'" in messages["NMW156"]
    summary = report.summary()
    assert "skipped, unaligned [NMW154]: 1" in summary and "T8 'IL-2'" in summary
    # kept + duplicates + skipped annotations (not the malformed line) = annotations read
    assert report.annotations == report.entities + report.duplicates + report.n_skipped - 1
    with pytest.raises(ValueError, match=r"\[NME152\] abstract.ann T8 'IL-2'"):
        list(read_brat(ann, strict=True))


def test_whitespace_trimmed_and_line_break_as_space(tmp_path: Path) -> None:
    text = "The IL-2\r\ngene and NF-kappa B .\n"
    start = text.index("IL-2")
    write_doc(
        tmp_path,
        "crlf",
        [
            f"T1\tDNA {start} {start + 10}\tIL-2  gene",  # "\r\n" written as spaces
            t_line("T2", "protein", "NF-kappa B ", text=text),  # a trailing space
        ],
        text=text,
    )
    (docs, report) = read_all(tmp_path)
    assert spans(docs[0]) == [("IL-2\r\ngene", "DNA"), ("NF-kappa B", "protein")]
    assert docs[0].spans["nested"][0].start_char == start  # offsets count "\r\n" as two
    assert report.trimmed == 1
    assert doc_to_record(docs[0])["tokens"] == ["The", "IL-2", "gene", "and", "NF", "-",
                                                "kappa", "B", "."]


def test_missing_txt_or_ann(tmp_path: Path) -> None:
    write_doc(tmp_path, "a", KEPT)
    (tmp_path / "b.ann").write_text(KEPT[0] + "\n", encoding="utf-8")
    (tmp_path / "c.txt").write_text("No annotation file.", encoding="utf-8")
    (tmp_path / "annotation.conf").write_text("[entities]\nprotein\n", encoding="utf-8")
    report = BratConversionReport()
    with pytest.warns(UserWarning, match=r"\[NMW150\] Skipped 2 BRAT documents") as caught:
        docs = list(read_brat(tmp_path, report=report))
    assert [doc.user_data["doc_id"] for doc in docs] == ["a"]
    assert report.unpaired == ["b.ann (no b.txt)", "c.txt (no c.ann)"]
    assert "b.ann (no b.txt); c.txt (no c.ann)" in str(caught[0].message)
    with pytest.raises(ValueError, match=r"\[NME152\] b.ann: no b.txt"):
        list(read_brat(tmp_path, strict=True))
    with pytest.raises(FileNotFoundError, match=r"\[NME150\]"):
        read_brat(tmp_path / "nothing")
    with pytest.raises(ValueError, match=r"\[NME151\]"):
        read_brat(tmp_path / "annotation.conf")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"\[NME151\]"):
        read_brat(tmp_path / "empty")


def test_not_utf8(tmp_path: Path) -> None:
    write_doc(tmp_path, "a", [])
    (tmp_path / "a.txt").write_bytes("caf\u00e9".encode("latin-1"))
    with pytest.raises(ValueError, match=r"\[NME153\]"):
        list(read_brat(tmp_path))


def test_sentences(tmp_path: Path) -> None:
    text = "IL-2 binds.\n\nSee Fig. 1 for T cells.\n"
    write_doc(
        tmp_path,
        "doc",
        [
            t_line("T1", "protein", "IL-2", text=text),
            t_line("T2", "figure", "Fig. 1", text=text),  # the sentencizer splits after "Fig."
            t_line("T3", "cell_type", "T cells", text=text),
            t_line("T4", "cell_type", "cells", text=text),
        ],
        text=text,
    )
    report = BratConversionReport()
    with pytest.warns(UserWarning, match=r"\[NMW155\].*doc.ann T2 'Fig. 1'"):
        docs = list(read_brat(tmp_path, sentences=True, report=report))
    assert [doc.text for doc in docs] == ["IL-2 binds.", "See Fig.", "1 for T cells."]
    assert [(d.user_data["doc_id"], d.user_data["sentence"]) for d in docs] == [
        ("doc", 0), ("doc", 1), ("doc", 2)
    ]
    assert [spans(doc) for doc in docs] == [
        [("IL-2", "protein")], [], [("T cells", "cell_type"), ("cells", "cell_type")]
    ]
    assert [doc_to_record(doc)["entities"] for doc in docs][2] == [
        {"start": 2, "end": 4, "type": "cell_type"}, {"start": 3, "end": 4, "type": "cell_type"}
    ]
    assert report.records == 3 and report.entities == 3 and report.nested == 1
    assert report.skipped == {"cross_sentence": 1}
    (whole, _) = read_all(tmp_path)  # without sentences the figure is kept
    assert ("Fig. 1", "figure") in spans(whole[0])


def test_jsonl_read_back(tmp_path: Path) -> None:
    write_doc(tmp_path / "brat", "a", KEPT + NOT_ENTITIES)
    write_doc(tmp_path / "brat", "b", [t_line("T1", "protein", "NF-kappa B")])
    output = tmp_path / "out" / "brat.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = convert_brat(tmp_path / "brat", output)
    assert report.output_path == str(output) and report.records == 2
    records = [record for _, record in iter_records(output)]
    assert [record["doc"] for record in records] == ["a", "b"]
    assert all("sentence" not in record for record in records)
    assert "\n" not in records[0]["tokens"]  # whitespace tokens are left out
    nlp = spacy.blank("en")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every entity aligns to nlp's tokens (no NMW003)
        examples = list(create_jsonl_reader(output)(nlp))
    (brat_docs, _) = read_all(tmp_path / "brat")
    assert len(examples) == len(brat_docs) == 2
    for example, doc in zip(examples, brat_docs):
        # the same tokens and labels; JSON Lines keeps no spacing ("NF - kappa B" on reading)
        assert span_tokens(example.reference) == span_tokens(doc)
        assert example.reference.user_data["doc_id"] == doc.user_data["doc_id"]
    assert [(text.replace(" - ", "-"), label) for text, label in spans(examples[0].reference)] \
        == EXPECTED_SPANS


def test_docbin_output(tmp_path: Path) -> None:
    write_doc(tmp_path / "brat", "a", KEPT)
    output = tmp_path / "a.spacy"
    report = convert_brat(tmp_path / "brat" / "a.txt", output, spans_key="brat", sentences=True)
    assert report.records == 2
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(output).get_docs(nlp.vocab))
    assert [doc.text for doc in docs] == TEXT.strip().split("\n")
    assert [doc.user_data["sentence"] for doc in docs] == [0, 1]
    assert spans(docs[0], "brat") == EXPECTED_SPANS[:6]
    assert spans(docs[1], "brat") == EXPECTED_SPANS[6:]
    examples = list(create_jsonl_reader(output, spans_key="brat")(nlp))
    assert [spans(eg.reference, "brat") for eg in examples] == [spans(d, "brat") for d in docs]
    with pytest.raises(ValueError, match=r"\[NME154\]"):
        convert_brat(tmp_path / "brat", tmp_path)


def test_parse_ann_and_counts() -> None:
    parsed = parse_ann("T1\tprotein 0 4\tIL-2\r\nE1\tBinding:T2 Theme:T1\nT1\tbad 0\n\n")
    assert [a.id for a in parsed.annotations] == ["T1"]
    assert parsed.annotations[0].fragments == ((0, 4),) and parsed.annotations[0].text == "IL-2"
    assert parsed.triggers == {"T2"} and parsed.not_entities == {"event": 1}
    assert parsed.malformed == [(3, "T1\tbad 0")]
    assert count_nested_crossing([(0, 3), (1, 3), (1, 3), (2, 5)]) == (2, 4)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    write_doc(tmp_path / "brat", "a", KEPT + NOT_ENTITIES)
    output = tmp_path / "a.jsonl"
    assert main(["convert-brat", str(tmp_path / "brat"), str(output)]) == 0
    printed = capsys.readouterr().out
    assert "9 entities kept" in printed and f"Saved to {output}" in printed
    assert json.loads(output.read_text(encoding="utf-8").splitlines()[0])["doc"] == "a"
    args = ["convert-brat", str(tmp_path / "brat"), str(tmp_path / "a.spacy")]
    assert main([*args, "--sentences", "--spans-key", "ents", "--lang", "en"]) == 0
    assert "(2 records)" in capsys.readouterr().out
    write_doc(tmp_path / "brat", "b", ["T1\tprotein 0 5;10 15\tHuman cells"])
    with pytest.warns(UserWarning, match=r"\[NMW151\]"):
        assert main(["convert-brat", str(tmp_path / "brat"), str(output)]) == 0
    assert "skipped, discontinuous [NMW151]: 1" in capsys.readouterr().out
    assert main(["convert-brat", str(tmp_path / "brat"), str(output), "--strict"]) == 1
    assert "[NME152] b.ann T1 'Human cells' [0, 5) [10, 15)" in capsys.readouterr().err
    assert main(["convert-brat", str(tmp_path / "missing"), str(output)]) == 1
    assert "[NME150]" in capsys.readouterr().err


def test_given_tokenizer_aligns_more(tmp_path: Path) -> None:
    ann = write_doc(tmp_path, "a", [t_line("T8", "protein", "IL-2", nth=1)])
    with pytest.warns(UserWarning, match=r"\[NMW154\]"):
        assert len(list(read_brat(ann))[0].spans["nested"]) == 0
    nlp = spacy.blank("en")
    nlp.tokenizer.add_special_case("IL-2R", [{"ORTH": "IL-2"}, {"ORTH": "R"}])
    (docs, report) = read_all(ann, nlp=nlp)
    assert spans(docs[0]) == [("IL-2", "protein")] and report.skipped == {}
