"""Tests for the tokenizer with biomedical conventions (spacy_nested_mrc.tokenizer)."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import spacy
from helpers.configs import mrc_blocks
from spacy.util import registry

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader, unaligned_spans

SAMPLE_DIR = Path(__file__).parents[1] / "spacy_nested_mrc" / "sample"
TEXT = "IL-2 gene expression in NF-kappa B (T-cell), c-fos mRNA, IL-2/IL-4 and 5-lipoxygenase."
KEEP_HYPHENS = {"@tokenizers": "spacy-nested-mrc.Tokenizer.v1", "split_hyphens": False}


def words(nlp, text: str = TEXT) -> list[str]:
    return [token.text for token in nlp.make_doc(text)]


def blank(tokenizer: dict):
    return spacy.blank("en", config={"nlp": {"tokenizer": tokenizer}})


def test_default_is_spacys_tokenizer():
    ours = blank({"@tokenizers": "spacy-nested-mrc.Tokenizer.v1"})
    assert words(ours) == words(spacy.blank("en"))
    assert "fos" in words(ours)


def test_keep_hyphens_keeps_hyphenated_names_and_every_other_rule():
    tokens = words(blank(KEEP_HYPHENS))
    assert tokens == [
        "IL-2", "gene", "expression", "in", "NF-kappa", "B", "(", "T-cell", ")", ",",
        "c-fos", "mRNA", ",", "IL-2", "/", "IL-4", "and", "5-lipoxygenase", ".",
    ]  # fmt: skip


def test_keep_hyphens_survives_save_and_load(tmp_path):
    nlp = blank(KEEP_HYPHENS)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert words(loaded) == words(nlp)
    assert loaded.config["nlp"]["tokenizer"] == KEEP_HYPHENS


def test_registered_under_spacys_tokenizers():
    factory = registry.tokenizers.get("spacy-nested-mrc.Tokenizer.v1")
    tokenizer = factory(split_hyphens=False)(spacy.blank("en"))
    assert [t.text for t in tokenizer("c-fos")] == ["c-fos"]


@pytest.mark.parametrize("split_hyphens", [True, False])
def test_sample_entities_align_to_either_tokenization(split_hyphens):
    nlp = blank({"@tokenizers": "spacy-nested-mrc.Tokenizer.v1", "split_hyphens": split_hyphens})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NMW003 would name unaligned entities
        examples = list(create_jsonl_reader(SAMPLE_DIR / "train.jsonl")(nlp))
    assert examples
    assert not any(unaligned_spans(eg.reference, eg.predicted, "nested") for eg in examples)
    hyphenated = [t for eg in examples for t in eg.predicted if re.search("[a-z]-[a-z]", t.text)]
    assert bool(hyphenated) is not split_hyphens


@pytest.mark.parametrize("lang,text", [
    ("zh", "习近平访问了北京大学。白细胞介素2基因在T细胞中表达。"),
    ("de", "Die IL-2-Expression in T-Zellen hängt von NF-kappa B ab."),
])
def test_tokenizer_follows_the_language(lang, text, tiny_bert, tmp_path):
    """The shipped configs' tokenizer on another language: that language's own words (for
    Chinese, spaCy's Chinese tokenizer, with a warning that the hyphen setting does not
    apply), and a pipe on a tiny encoder trains, predicts, saves and loads with them."""
    from spacy.tokens import Span
    from spacy.training import Example

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp = spacy.blank(lang, config={"nlp": {"tokenizer": KEEP_HYPHENS}})
    assert words(nlp, text) == words(spacy.blank(lang), text)
    assert len(words(nlp, text)) > 5
    assert any("NMW014" in str(w.message) for w in caught) == (lang == "zh")
    nlp.add_pipe("nested_mrc_ner", config={"threshold": 0.0, "model": mrc_blocks(
        encoder={"name": tiny_bert, "precision": "fp32"}, questions={"packed": True},
        decoder={"start_threshold": 0.0, "end_threshold": 0.0, "max_span_length": 3})})
    reference = nlp.make_doc(text)
    reference.spans["nested"] = [Span(reference, 1, 3, "protein")]
    examples = [Example(nlp.make_doc(text), reference)]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    doc = nlp(text)
    assert [t.text for t in doc] == words(nlp, text) and len(doc.spans["nested"]) > 0
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    again = loaded(text)
    assert [(s.start, s.end, s.label_) for s in again.spans["nested"]] == [
        (s.start, s.end, s.label_) for s in doc.spans["nested"]]
