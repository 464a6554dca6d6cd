"""The evaluation report: hand-checked numbers, error kinds, outputs and the CLI."""
import json
from pathlib import Path

import pytest
import spacy
from helpers.configs import mrc_blocks
from spacy.tokens import Doc, Span
from spacy.training import Example

from spacy_nested_mrc.cli import main
from spacy_nested_mrc.evaluation.report import (
    evaluate_examples,
    length_bucket,
    to_markdown,
    write_report,
)

SAMPLE = Path(__file__).parents[2] / "spacy_nested_mrc" / "sample"


def example(words, gold, predicted, key="nested"):
    vocab = spacy.blank("en").vocab
    reference = Doc(vocab, words=words)
    reference.spans[key] = [Span(reference, s, e, label) for s, e, label in gold]
    doc = Doc(vocab, words=words)
    doc.spans[key] = [Span(doc, s, e, label) for s, e, label in predicted]
    return Example(doc, reference)


WORDS = "the IL-2 gene in human T cells and Jurkat cells binds".split()
GOLD = [(1, 3, "DNA"), (1, 2, "protein"), (4, 7, "cell_type"), (5, 7, "cell_type"),
        (8, 10, "cell_line")]
PRED = [
    (1, 3, "DNA"),  # correct
    (1, 2, "DNA"),  # wrong type (gold protein has these bounds)
    (4, 6, "cell_type"),  # wrong boundary (overlaps gold cell_type spans)
    (10, 11, "protein"),  # spurious
    # (5, 7) cell_type is overlapped by (4, 6): not "missed"; (8, 10) cell_line is missed
]


def test_hand_checked_report():
    report = evaluate_examples([example(WORDS, GOLD, PRED)])
    s = report.scores
    # 1 of 4 predictions right, 1 of 5 gold found
    assert s["spans_nested_p"] == pytest.approx(1 / 4)
    assert s["spans_nested_r"] == pytest.approx(1 / 5)
    assert s["spans_nested_f"] == pytest.approx(2 * (1 / 4) * (1 / 5) / (1 / 4 + 1 / 5))
    # nested gold: (1,3) (1,2) (4,7) (5,7); non-nested: (8,10)
    assert s["spans_nested_nested_r"] == pytest.approx(1 / 4)
    assert s["spans_nested_non_nested_r"] == 0.0
    assert report.errors == {
        "wrong_boundary": 1, "wrong_type": 1, "wrong_boundary_and_type": 0, "missed": 1,
        "spurious": 1,
    }
    # lengths: gold 1 -> (1,2); 2 -> (1,3), (5,7), (8,10); 3 -> (4,7)
    assert report.by_length["1"]["support"] == 1 and report.by_length["1"]["r"] == 0.0
    assert report.by_length["2"]["support"] == 3
    assert report.by_length["2"]["r"] == pytest.approx(1 / 3)
    # predicted of length 2: (1,3) right, (4,6) wrong -> P = 1/2
    assert report.by_length["2"]["p"] == pytest.approx(1 / 2)
    assert report.by_length["3"]["support"] == 1 and report.by_length["3"]["r"] == 0.0
    kinds = {e.kind for e in report.examples}
    assert kinds == {"wrong_boundary", "wrong_type", "missed", "spurious"}
    spurious = next(e for e in report.examples if e.kind == "spurious")
    assert spurious.predicted == ("binds", "protein") and spurious.gold is None
    assert spurious.sentence.strip() == " ".join(WORDS)


def test_wrong_boundary_and_type():
    report = evaluate_examples([example(WORDS, [(1, 3, "DNA")], [(1, 2, "protein")])])
    assert report.errors["wrong_boundary_and_type"] == 1
    assert report.errors["missed"] == 0


@pytest.mark.parametrize(
    "length,bucket", [(1, "1"), (2, "2"), (4, "4"), (5, "5-9"), (9, "5-9"), (10, "10+"),
                      (42, "10+")]
)
def test_length_buckets(length, bucket):
    assert length_bucket(length) == bucket


def test_outputs(tmp_path):
    report = evaluate_examples([example(WORDS, GOLD, PRED)])
    paths = write_report(report, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["f1_by_length.png", "pr_by_type.png", "report.json", "report.md"]
    for path in paths:
        assert path.stat().st_size > 0
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["errors"]["missed"] == 1
    assert (tmp_path / "f1_by_length.png").read_bytes()[:4] == b"\x89PNG"
    markdown = to_markdown(report)
    assert "| 25.0 | 20.0 | 22.2 |" in markdown


def test_evaluate_cli_matches_spacy_evaluate(tiny_bert, tmp_path, capsys):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("nested_mrc_ner", config={"model": mrc_blocks(
        encoder={"name": tiny_bert, "precision": "fp32"}, questions={"style": "pseudo"},
        heads={"match_hidden": 16}, decoder={"start_threshold": 0.3, "end_threshold": 0.3})})
    for label in ("DNA", "RNA", "protein", "cell_line", "cell_type"):
        pipe.add_label(label)
    doc = nlp.make_doc("IL-2 gene")
    nlp.initialize(lambda: [Example(doc, doc.copy())])
    nlp.to_disk(tmp_path / "pipeline")
    out = tmp_path / "report"
    assert main(["evaluate", str(tmp_path / "pipeline"), str(SAMPLE / "dev.jsonl"),
                 "--output", str(out)]) == 0
    ours = json.loads((out / "report.json").read_text())["scores"]
    from spacy_nested_mrc.corpora.jsonl import convert

    convert(SAMPLE / "dev.jsonl", tmp_path / "dev.spacy", show_progress=False)
    theirs = spacy.cli.evaluate(str(tmp_path / "pipeline"), tmp_path / "dev.spacy")
    assert theirs["spans_nested_f"] == pytest.approx(ours["spans_nested_f"])
    assert theirs["spans_nested_p"] == pytest.approx(ours["spans_nested_p"])
    # gold data without a gold span: refused as tune refuses it, not an "n/a" report
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"tokens": ["IL-2", "gene"], "entities": []}\n')
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "pipeline"), str(bare)]) == 1
    assert "NME160" in capsys.readouterr().err


def test_scorer_counts_predictions_off_the_gold_tokens_as_false_positives():
    """spaCy's tokenizer splits the gold token "c-fos": a predicted "fos" is wrong for a
    user, though spaCy's score_spans would drop it as unalignable."""
    import spacy
    from spacy.tokens import Doc, Span
    from spacy.training import Example

    from spacy_nested_mrc.scoring.scorer import score_nested

    nlp = spacy.blank("en")
    gold = Doc(nlp.vocab, words=["c-fos", "mRNA"])
    gold.spans["nested"] = [Span(gold, 0, 2, "RNA")]
    predicted = nlp.make_doc(gold.text)  # c - fos mRNA
    predicted.spans["nested"] = [Span(predicted, 0, 4, "RNA"), Span(predicted, 2, 3, "DNA")]
    scores = score_nested([Example(predicted, gold)])
    assert scores["spans_nested_p"] == 0.5 and scores["spans_nested_r"] == 1.0
    assert scores["spans_nested_per_type"]["DNA"]["p"] == 0.0
