"""Tests for the GENIA term corpus 3.02 XML converter (spacy_nested_mrc.corpora.genia_xml)."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
import warnings
from pathlib import Path

import pytest
import spacy

from spacy_nested_mrc.annotation import unannotated_key
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.corpora.genia_xml import (
    GeniaConversionReport,
    convert_genia_xml,
    genia_split,
    genia_type,
    read_genia_xml,
)
from spacy_nested_mrc.corpora.jsonl import read_jsonl, record_to_doc

GENIA_DIR = Path(__file__).parents[3] / "shared" / "data" / "genia"
GENIA_RAW = GENIA_DIR / "raw" / "GENIAcorpus3.02.train_dev.xml.gz"

# Two articles: nested cons, a cons split inside a word ("CD28-mediated"), a coordinated
# ellipsis (cons without sem under an "(AND ...)" cons), subtypes, G#other_name, cons over
# the same tokens (lex decides, else the innermost), whitespace at the edges of a cons, an
# empty cons, an article without MEDLINE id and a line break in a sentence.
GENIA_XML = """<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/css" href="gpml.css" ?>
<!DOCTYPE set SYSTEM "gpml.dtd">
<set>

<import resource="GENIAontology.daml" prefix="G" />

<article>
<articleinfo>
<bibliomisc>MEDLINE:1</bibliomisc>
</articleinfo>
<title>
<sentence><cons lex="IL-2_gene_expression" sem="G#other_name"><cons lex="IL-2_gene" \
sem="G#DNA_domain_or_region">IL-2 gene</cons> expression</cons> and <cons lex="NF-kappa_B" \
sem="G#protein_molecule">NF-kappa B</cons>.</sentence>
</title>
<abstract>
<sentence><cons lex="(AND CD2_receptor CD25_receptor)" \
sem="(AND G#protein_molecule G#protein_molecule)"><cons lex="CD2*">CD2</cons> and \
<cons lex="CD25*">CD25</cons> <cons lex="*receptor">receptors</cons></cons> bind \
<cons lex="CD28" sem="G#protein_molecule">CD28</cons>-mediated <cons lex="T_cell" \
sem="G#cell_type">T cells</cons>.</sentence>
<sentence><cons lex="IFN-gamma" sem="G#protein_molecule"><cons lex="IFN-gamma_mRNA" \
sem="G#RNA_molecule">IFN-gamma</cons></cons> mRNA in <cons lex="Jurkat_cell" sem="G#cell_line">\
<cons lex="Jurkat_T_cell" sem="G#cell_type">Jurkat</cons></cons> and <cons \
sem="G#protein_complex"><cons sem="G#protein_molecule">p50</cons></cons> with <cons lex="p53" \
sem="G#protein_N/A"> p53 </cons>.<cons sem="G#protein_molecule"></cons></sentence>
</abstract>
</article>

<article>
<title>
<sentence>Nested <cons lex="NF-kappa_B_binding_site" sem="G#DNA_domain_or_region"><cons \
lex="NF-kappa_B" sem="G#protein_molecule">NF-kappa B</cons> binding <cons lex="site" \
sem="G#DNA_domain_or_region">site</cons></cons>s</sentence>
</title>
<abstract>
<sentence>No entities
here.</sentence>
</abstract>
</article>

</set>
"""

# the made-up id of the first article of GENIA_XML
FIRST_ARTICLE = "MEDLINE:1"

EXPECTED = [
    {
        "tokens": ["IL-2", "gene", "expression", "and", "NF-kappa", "B", "."],
        "entities": [
            {"start": 0, "end": 2, "type": "DNA"},
            {"start": 4, "end": 6, "type": "protein"},
        ],
        "doc": FIRST_ARTICLE,
    },
    {
        "tokens": [
            "CD2", "and", "CD25", "receptors", "bind", "CD28", "-mediated", "T", "cells", "."
        ],
        "entities": [
            {"start": 5, "end": 6, "type": "protein"},
            {"start": 7, "end": 9, "type": "cell_type"},
        ],
        "doc": FIRST_ARTICLE,
    },
    {
        "tokens": ["IFN-gamma", "mRNA", "in", "Jurkat", "and", "p50", "with", "p53", "."],
        "entities": [
            {"start": 0, "end": 1, "type": "protein"},  # the outer cons's lex matches
            {"start": 3, "end": 4, "type": "cell_type"},  # no lex matches: the innermost
            {"start": 5, "end": 6, "type": "protein"},
            {"start": 7, "end": 8, "type": "protein"},
        ],
        "doc": FIRST_ARTICLE,
    },
    {
        "tokens": ["Nested", "NF-kappa", "B", "binding", "site", "s"],
        "entities": [
            {"start": 1, "end": 3, "type": "protein"},
            {"start": 4, "end": 5, "type": "DNA"},
            {"start": 1, "end": 5, "type": "DNA"},
        ],
    },
    {"tokens": ["No", "entities", "here."], "entities": []},
]


def write_xml(path: Path, text: str = GENIA_XML) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_tgz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_read_genia_xml_records(tmp_path: Path) -> None:
    records = list(read_genia_xml(write_xml(tmp_path / "genia.xml")))
    assert records == EXPECTED
    # key order as in the shared files
    assert [list(record) for record in records[:1]] == [["tokens", "entities", "doc"]]
    assert list(records[0]["entities"][0]) == ["start", "end", "type"]


def test_read_genia_xml_spaces_keep_the_text_as_written(tmp_path: Path) -> None:
    xml = write_xml(tmp_path / "genia.xml")
    records = list(read_genia_xml(xml, spaces=True))
    assert [{k: v for k, v in r.items() if k != "spaces"} for r in records] == EXPECTED
    vocab = spacy.blank("en").vocab
    texts = [record_to_doc(vocab, r, i, "nested", None).text for i, r in enumerate(records)]
    assert texts == [
        "IL-2 gene expression and NF-kappa B.",
        "CD2 and CD25 receptors bind CD28-mediated T cells.",
        "IFN-gamma mRNA in Jurkat and p50 with p53 .",  # the cons's own space before "."
        "Nested NF-kappa B binding sites",
        "No entities here.",  # a line break read as a space
    ]
    report = convert_genia_xml(xml, tmp_path / "out", n_train_dev=4, dev_pool=3, dev_every=2,
                               spaces=True)
    assert report.split_sentences == {"train": 2, "dev": 2, "test": 1}
    (test,) = read_lines(tmp_path / "out" / "test.jsonl")
    assert test["spaces"] == [True, True, False]
    assert [list(r) for r in read_genia_xml(xml)][0] == ["tokens", "entities", "doc"]


def test_read_genia_xml_report(tmp_path: Path) -> None:
    report = GeniaConversionReport()
    records = read_genia_xml(write_xml(tmp_path / "genia.xml"), report=report)
    assert report.sentences == 0  # lazy
    list(records)
    assert report.path == str(tmp_path / "genia.xml")
    assert (report.articles, report.sentences, report.cons, report.entities) == (2, 5, 20, 11)
    assert report.types == {"DNA": 3, "protein": 6, "cell_type": 2}
    assert report.skipped == {"other_type": 1, "no_sem": 3, "compound": 1, "empty": 1}
    assert (report.same_span, report.conflicts) == (3, 2)
    assert report.cons == report.entities + report.same_span + sum(report.skipped.values())
    summary = report.summary()
    assert "5 sentences of 2 articles" in summary
    assert "no_sem 3, compound 1, other_type 1, empty 1" in summary


@pytest.mark.parametrize(
    "sem,label",
    [
        ("G#protein_molecule", "protein"),
        ("G#protein_N/A", "protein"),
        ("G#DNA_domain_or_region", "DNA"),
        ("G#RNA_family_or_group", "RNA"),
        ("G#cell_line", "cell_line"),
        ("G#cell_type", "cell_type"),
        ("G#cell_component", None),
        ("G#other_name", None),
        ("(AND G#protein_molecule G#protein_molecule)", None),
        (None, None),
    ],
)
def test_genia_type(sem: str | None, label: str | None) -> None:
    assert genia_type(sem) == label


def test_genia_split_synthetic() -> None:
    splits = [genia_split(i, n_train_dev=12, dev_pool=8, dev_every=4) for i in range(20)]
    assert [i for i, s in enumerate(splits) if s == "dev"] == [0, 4]
    assert [i for i, s in enumerate(splits) if s == "test"] == list(range(12, 20))
    assert splits.count("train") == 10
    # the standard split of the whole corpus (18,546 sentences)
    counts = {"train": 0, "dev": 0, "test": 0}
    for i in range(18546):
        counts[genia_split(i)] += 1
    assert counts == {"train": 15023, "dev": 1669, "test": 1854}


def test_convert_genia_xml_splits(tmp_path: Path) -> None:
    out = tmp_path / "out" / "genia"
    report = convert_genia_xml(
        write_xml(tmp_path / "genia.xml"), out, n_train_dev=4, dev_pool=3, dev_every=2
    )
    # dev: 0 and 2; train: 1 and 3; test: 4
    assert read_lines(out / "dev.jsonl") == [EXPECTED[0], EXPECTED[2]]
    assert read_lines(out / "train.jsonl") == [EXPECTED[1], EXPECTED[3]]
    assert read_lines(out / "test.jsonl") == [EXPECTED[4]]
    assert report.split_sentences == {"train": 2, "dev": 2, "test": 1}
    assert report.split_entities == {"train": 5, "dev": 6, "test": 0}
    assert report.output_paths["train"] == str(out / "train.jsonl")
    assert sorted(p.name for p in out.iterdir()) == ["dev.jsonl", "test.jsonl", "train.jsonl"]
    assert "dev: 2 sentences, 6 entities" in report.summary()


def test_convert_genia_xml_warns_on_a_short_corpus(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"\[NMW110\].*5 sentences, fewer than the 16692"):
        report = convert_genia_xml(write_xml(tmp_path / "genia.xml"), tmp_path / "out")
    assert report.split_sentences == {"train": 3, "dev": 2, "test": 0}
    assert (tmp_path / "out" / "test.jsonl").read_text() == ""


def test_convert_genia_writes_dev_inside_its_abstracts(tmp_path):
    # dev: sentences 0 and 2 (article 1: 0-2), train: 1 and 3, test: 4 (article 2: 3-4,
    # without a MEDLINE id, so each of its sentences is a document of its own)
    out = tmp_path / "out"
    report = convert_genia_xml(write_xml(tmp_path / "genia.xml"), out, n_train_dev=4,
                               dev_pool=3, dev_every=2, documents=True)
    dev_docs = read_lines(out / "dev.documents.jsonl")
    # the whole abstract in order: dev's sentences as they are, train's as context only
    assert dev_docs == [EXPECTED[0], {**EXPECTED[1], "entities": [], "annotated": False},
                       EXPECTED[2]]
    assert read_lines(out / "test.documents.jsonl") == [EXPECTED[4]]
    assert report.output_paths["dev.documents"] == str(out / "dev.documents.jsonl")
    # read as documents: one doc, the train sentence marked as context only
    docs = list(read_jsonl(out / "dev.documents.jsonl", spacy.blank("en").vocab, group_by="doc"))
    assert len(docs) == 1 and len(list(docs[0].sents)) == 3
    assert docs[0].spans[unannotated_key("nested")][0].text == " ".join(EXPECTED[1]["tokens"])
    # without --documents nothing else is written
    convert_genia_xml(write_xml(tmp_path / "genia.xml"), tmp_path / "plain", n_train_dev=4)
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [
        "dev.jsonl", "test.jsonl", "train.jsonl"]


def test_gz_and_tgz_inputs(tmp_path: Path) -> None:
    data = GENIA_XML.encode("utf-8")
    gz_path = tmp_path / "genia.xml.gz"
    gz_path.write_bytes(gzip.compress(data))
    assert list(read_genia_xml(gz_path)) == EXPECTED
    tgz_path = write_tgz(
        tmp_path / "GENIAcorpus3.02.tgz",
        {
            "GENIA_term_3.02/gpml.dtd": b"<!ELEMENT set (article+)>",
            "GENIA_term_3.02/GENIAcorpus3.02.xml": data,
        },
    )
    assert list(read_genia_xml(tgz_path)) == EXPECTED
    # the corpus file under another folder is found by its name
    moved = write_tgz(tmp_path / "moved.tar.gz", {"corpus/GENIAcorpus3.02.xml": data})
    assert list(read_genia_xml(moved)) == EXPECTED


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"\[NME104\]"):
        read_genia_xml(tmp_path / "missing.xml")
    with pytest.raises(ValueError, match=r"\[NME110\]"):
        list(read_genia_xml(write_xml(tmp_path / "text.xml", "not XML at all\n")))
    not_genia = write_xml(tmp_path / "other.xml", "<html><body>hello</body></html>")
    with pytest.raises(ValueError, match=r"\[NME111\].*<html>, not <set>"):
        list(read_genia_xml(not_genia))
    empty = write_xml(tmp_path / "empty.xml", "<set><article><title/></article></set>")
    with pytest.raises(ValueError, match=r"\[NME111\].*no <sentence>"):
        list(read_genia_xml(empty))
    truncated = tmp_path / "truncated.xml.gz"
    truncated.write_bytes(gzip.compress(GENIA_XML.encode("utf-8"))[:300])
    with pytest.raises(ValueError, match=r"\[NME110\]"):
        list(read_genia_xml(truncated))
    no_corpus = write_tgz(tmp_path / "other.tgz", {"data/notes.xml": b"<set/>"})
    with pytest.raises(ValueError, match=r"\[NME112\].*data/notes.xml"):
        list(read_genia_xml(no_corpus))
    with pytest.raises(ValueError, match=r"\[NME003\].*dev_every"):
        convert_genia_xml(tmp_path / "missing.xml", tmp_path / "out", dev_every=0)


def test_convert_keeps_old_files_on_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.jsonl").write_text("old\n")
    broken = write_xml(tmp_path / "broken.xml", GENIA_XML.replace("</set>", "</sett>"))
    with pytest.raises(ValueError, match=r"\[NME110\]"):
        convert_genia_xml(broken, out)
    assert sorted(p.name for p in out.iterdir()) == ["train.jsonl"]
    assert (out / "train.jsonl").read_text() == "old\n"


def test_cli_convert_genia(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    xml = write_xml(tmp_path / "genia.xml")
    args = ["convert-genia", str(xml), str(tmp_path / "out"), "--n-train-dev", "4"]
    assert main([*args, "--dev-pool", "3", "--dev-every", "2"]) == 0
    printed = capsys.readouterr().out
    assert "train: 2 sentences, 5 entities" in printed
    assert read_lines(tmp_path / "out" / "test.jsonl") == [EXPECTED[4]]
    assert main([*args, "--spaces"]) == 0
    assert read_lines(tmp_path / "out" / "test.jsonl") == [{**EXPECTED[4],
                                                            "spaces": [True, True, False]}]
    assert main(["convert-genia", str(xml), str(tmp_path / "out"), "--spaces"]) == 0
    capsys.readouterr()
    assert main(["convert-genia", str(tmp_path / "missing.xml"), str(tmp_path / "out")]) == 1
    assert "[NME104]" in capsys.readouterr().err


@pytest.mark.skipif(not GENIA_RAW.exists(), reason="the shared GENIA data (../shared) is absent")
def test_reproduces_shared_genia_files(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file holds all 16,692 train+dev sentences
        report = convert_genia_xml(GENIA_RAW, tmp_path)
    assert report.split_sentences == {"train": 15023, "dev": 1669, "test": 0}
    assert report.split_entities == {"train": 45144, "dev": 5365, "test": 0}
    for split in ("train", "dev"):
        assert (tmp_path / f"{split}.jsonl").read_bytes() == (
            GENIA_DIR / f"{split}.jsonl"
        ).read_bytes(), split
