"""The report every converter shares (``corpora/report.py``): one base for the JSON Lines,
GENIA XML and BRAT reports, and the example quoting their summaries and warnings use."""

import pytest

from spacy_nested_mrc.corpora.brat import BratConversionReport
from spacy_nested_mrc.corpora.genia_xml import GeniaConversionReport
from spacy_nested_mrc.corpora.jsonl import ConversionReport
from spacy_nested_mrc.corpora.report import (
    N_QUOTED_EXAMPLES,
    CorpusReport,
    plural,
    quote,
    quoted_examples,
)


@pytest.mark.parametrize("cls", [ConversionReport, GeniaConversionReport, BratConversionReport])
def test_every_converter_report_counts_skips_and_names_its_file(cls):
    report = cls(path="corpus/x")
    assert isinstance(report, CorpusReport)
    report.count_skip("a")
    report.count_skip("a")
    report.count_skip("b")
    assert report.skipped == {"a": 2, "b": 1}
    assert report.n_skipped == 3
    assert " from corpus/x" in report.summary()
    assert cls().where == ""


def test_the_format_specific_skips_count_through_the_base():
    jsonl = ConversionReport()
    jsonl.add_skip(3, {"start": 0}, "out_of_range")
    brat = BratConversionReport()
    brat.add_skip("unaligned", "doc.ann T3 'IL-2'")
    assert jsonl.n_skipped == brat.n_skipped == 1
    assert "line 3" in jsonl.summary()
    assert "doc.ann T3" in brat.summary()


def test_quoted_examples_quote_a_few_and_count_the_rest():
    items = [f"e{i}" for i in range(N_QUOTED_EXAMPLES + 3)]
    text = quoted_examples(items)
    assert text.startswith("e0; e1")
    assert f"e{N_QUOTED_EXAMPLES}" not in text
    assert text.endswith("; and 3 more")
    assert quoted_examples(items[:2]) == "e0; e1"
    assert quoted_examples(items[:N_QUOTED_EXAMPLES], total=100).endswith(
        f"; and {100 - N_QUOTED_EXAMPLES} more"
    )


def test_quote_and_plural():
    assert quote({"a": "é"}) == '{"a": "é"}'
    assert quote({1, 2}).startswith("{")  # not JSON: its repr
    assert plural(1) == "" and plural(0) == plural(2) == "s"
