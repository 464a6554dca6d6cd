"""Pipelines saved by an earlier release load and predict as they did when saved.

``tests/data/saved/COMMIT`` holds tiny pipelines (MRC packed, Multi-NER, Locate-and-Label)
written by ``tests/data/make_saved_pipelines.py`` with the code of that commit, and their
predictions then.
"""
import json
from pathlib import Path

import pytest
import spacy

SAVED = Path(__file__).parent / "data" / "saved"
CASES = [
    (release.name, name)
    for release in sorted(SAVED.iterdir()) if (release / "predictions.json").exists()
    for name in json.loads((release / "predictions.json").read_text())["pipelines"]
]


@pytest.mark.parametrize("release,name", CASES)
def test_saved_pipeline_loads_and_predicts_the_same(release, name):
    saved = json.loads((SAVED / release / "predictions.json").read_text())
    nlp = spacy.load(SAVED / release / name)
    for doc, expected in zip(nlp.pipe(saved["texts"]), saved["pipelines"][name]):
        group = doc.spans["nested"]
        found = [[s.start, s.end, s.label_, float(p)] for s, p in zip(group, group.attrs["scores"])]
        assert [f[:3] for f in found] == [e[:3] for e in expected]
        assert [f[3] for f in found] == pytest.approx([e[3] for e in expected], abs=1e-5)


def test_there_are_saved_pipelines():
    assert len(CASES) >= 3
