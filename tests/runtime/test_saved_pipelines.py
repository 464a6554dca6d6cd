"""Pipelines saved by an earlier release load and predict as they did when saved.

``tests/data/saved/COMMIT`` holds tiny pipelines (MRC packed, Multi-NER, Locate-and-Label)
written by ``tests/data/make_saved_pipelines.py`` with the code of that commit, and their
predictions then.
"""
import json
from pathlib import Path

import pytest
import spacy

SAVED = Path(__file__).parents[1] / "data" / "saved"
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


class _RunsCode:
    """A pickled object whose unpickling would call a function (here: write a file)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (Path(self.path), "code ran"))


def test_weights_holding_code_are_refused_and_run_nothing(tmp_path):
    """A heads weights file that holds a pickle with a callable is refused (weights only),
    and the call it carries never runs."""
    import io
    import pickle

    import torch

    from spacy_nested_mrc.models.wrapping import load_heads_state

    marker = tmp_path / "ran.txt"
    crafted = io.BytesIO()
    torch.save({"weight": _RunsCode(str(marker))}, crafted, pickle_module=pickle)
    with pytest.raises(pickle.UnpicklingError):
        load_heads_state(torch.nn.Linear(2, 2), crafted.getvalue(), torch.device("cpu"))
    assert not marker.exists()


def test_no_torch_load_without_weights_only():
    """Every torch.load of the package loads weights only."""
    package = Path(__file__).parents[2] / "spacy_nested_mrc"
    call = "torch." + "load("  # spelled in two parts, so this file is not a match itself
    calls = 0
    for path in package.rglob("*.py"):
        text = path.read_text()
        begin = text.find(call)
        while begin >= 0:
            end, depth = begin + len(call), 1
            while depth:  # the call's own closing parenthesis
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            assert "weights_only=True" in text[begin:end], f"{path}: {text[begin:end]}"
            calls += 1
            begin = text.find(call, end)
    assert calls  # the heads' weights are loaded somewhere


@pytest.mark.slow
def test_todays_code_trains_the_saved_pipelines_to_what_the_release_before_saved(tmp_path):
    """``make_saved_pipelines.py`` run with today's code (its configs in blocks) trains the
    three pipelines to the predictions a38d5ea's code (flat configs) saved: the config
    blocks changed no computation of training or prediction."""
    import importlib.util

    path = SAVED.parent / "make_saved_pipelines.py"
    spec = importlib.util.spec_from_file_location("make_saved_pipelines", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "today")
    today = json.loads((tmp_path / "today" / "predictions.json").read_text())
    before = json.loads((SAVED / "a38d5ea" / "predictions.json").read_text())
    assert today["texts"] == before["texts"]
    for name, docs in before["pipelines"].items():
        for got, expected in zip(today["pipelines"][name], docs):
            assert [s[:3] for s in got] == [s[:3] for s in expected], name
            assert [s[3] for s in got] == pytest.approx([s[3] for s in expected], abs=1e-5)
