"""displaCy rendering of gold and predicted nested spans, and a look in a real browser."""
import shutil
import subprocess

import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example

from spacy_nested_mrc.evaluation.visualize import render_examples, write_html


def nested_example():
    nlp = spacy.blank("en")
    gold = nlp("the IL-2 gene in human T cells")
    gold.spans["nested"] = [Span(gold, 1, 3, "DNA"), Span(gold, 1, 2, "protein"),
                            Span(gold, 4, 7, "cell_type")]
    predicted = nlp("the IL-2 gene in human T cells")
    predicted.spans["nested"] = [Span(predicted, 1, 3, "DNA"), Span(predicted, 5, 7, "cell_type")]
    return Example(predicted, gold)


def test_render_has_gold_and_predicted_nested_spans():
    page = render_examples([nested_example()], title="demo")
    assert page.startswith("<!DOCTYPE html>")
    gold_cell, predicted_cell = page.split('<td class="predicted">')
    assert gold_cell.count("DNA") == 1 and gold_cell.count("protein") == 1
    assert "cell_type" in gold_cell
    assert predicted_cell.count("DNA") == 1 and "protein" not in predicted_cell


def test_write_html(tmp_path):
    path = write_html([nested_example()], tmp_path / "out" / "spans.html")
    assert path.exists() and "IL-2" in path.read_text()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_rendered_in_headless_chromium(tmp_path):
    page = write_html([nested_example()], tmp_path / "spans.html")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    assert "IL-2" in dom and "protein" in dom and "cell_type" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1000,400",
                    page.as_uri()], capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:4] == b"\x89PNG" and len(data) > 5000
