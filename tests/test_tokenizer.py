"""Tests for the tokenizer with biomedical conventions (spacy_nested_mrc.tokenizer)."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import spacy
from spacy.util import registry

from spacy_nested_mrc.data import create_jsonl_reader, unaligned_spans

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
