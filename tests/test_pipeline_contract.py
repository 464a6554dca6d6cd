"""spaCy's pipeline contract for every architecture, on saved pipelines as a user loads them:
pickling, ``nlp.pipe`` with spawned worker processes, ``add_pipe(source=...)``,
``replace_listeners`` (of a shared transformer) then save and load, and ``spacy package``
then ``spacy.load`` by name.
Each check compares the spans and scores with those of the loaded pipeline, bit for bit."""

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import spacy
from helpers.contract import ARCHITECTURES, TEXTS, as_json, build
from helpers.locate_label import shared_pipeline
from helpers.outputs import assert_bit_identical, outputs
from helpers.pipes import PIPE, TRAIN, make_examples
from spacy.util import fix_random_seed

# trains pipelines or starts processes: deselected by -m "not slow"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=ARCHITECTURES)
def saved(request, tiny_bert, tmp_path_factory):
    """RETURNS (Tuple[str, Path, list]): the architecture, its saved pipeline and the
    outputs of that pipeline loaded with ``spacy.load``."""
    folder = tmp_path_factory.mktemp(request.param)
    build(request.param, tiny_bert, folder).to_disk(folder / "pipeline")
    expected = outputs(spacy.load(folder / "pipeline").pipe(TEXTS))
    assert sum(len(keys) for keys, _ in expected) > 0, "thresholds of 0 give output"
    return request.param, folder / "pipeline", expected


def test_pickle_round_trip(saved):
    _, path, expected = saved
    restored = pickle.loads(pickle.dumps(spacy.load(path)))
    assert_bit_identical(outputs(restored.pipe(TEXTS)), expected)


def assert_close(got: str, expected: str) -> None:
    """The same spans, with scores equal up to float rounding: another process may sum in
    another order (its own torch threads)."""
    got, expected = json.loads(got), json.loads(expected)
    assert [[span[:3] for span in doc] for doc in got] == [
        [span[:3] for span in doc] for doc in expected]
    assert all(abs(a[3] - b[3]) < 1e-5 for x, y in zip(got, expected) for a, b in zip(x, y))


SPAWN_SCRIPT = """
import json, multiprocessing, sys
import spacy
from helpers.contract import TEXTS, as_json

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")
    nlp = spacy.load(sys.argv[1])
    print(as_json(nlp.pipe(TEXTS, n_process=2, batch_size=4)))
"""


def run_python(code: str, *args: str, path: str = "") -> str:
    """Run ``code`` in a new Python process with the test folders that pytest puts on
    ``sys.path`` (and ``path``) importable: ``tests/`` of its ``pythonpath``, for ``helpers``.
    RETURNS (str): its last line of output."""
    here = Path(__file__).parent.resolve()
    folders = [p for p in sys.path if p and Path(p).resolve().is_relative_to(here)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(folders + ([path] if path else [])))
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                            text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def test_spawned_worker_processes(saved):
    """``nlp.pipe(n_process=2)`` where workers are spawned (macOS, Windows, Ray): the
    pipeline is pickled into each worker."""
    _, path, _ = saved
    assert_close(run_python(SPAWN_SCRIPT, str(path)),
                 as_json(spacy.load(path).pipe(TEXTS, batch_size=4)))


def blank_like(source: spacy.Language) -> spacy.Language:
    """A blank pipeline with the tokenizer of ``source`` (the shipped configs' own), so that
    both see the same tokens."""
    nlp = spacy.blank(source.lang)
    nlp.tokenizer = source.tokenizer
    return nlp


def test_source_into_a_blank_pipeline(saved):
    """Every shipped config's pipe holds its encoder: sourced alone, it writes the same."""
    kind, path, expected = saved
    source = spacy.load(path)
    nlp = blank_like(source)
    nlp.add_pipe(PIPE, source=source)
    assert_bit_identical(outputs(nlp.pipe(TEXTS)), expected)


@pytest.fixture(scope="module")
def shared(tiny_bert, tmp_path_factory):
    """Locate-and-Label with a shared transformer component (as configs/locate_label_gpu.cfg
    has it), saved: (path, outputs)."""
    tmp_path = tmp_path_factory.mktemp("shared")
    nlp = shared_pipeline(tiny_bert, tmp_path, {
        "components.nested_mrc_ner.model.heads.hidden_width": 32,
        "components.nested_mrc_ner.model.decoder.filter_threshold": 0.0,
        "components.nested_mrc_ner.model.decoder.nms_score": 0.0,
        "components.nested_mrc_ner.threshold": 0.0})
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline", outputs(spacy.load(tmp_path / "pipeline").pipe(TEXTS))


def test_a_listener_without_its_transformer_is_refused(shared):
    """Sourced without the transformer component it listens to, the pipe raises NME050
    rather than predicting from zero vectors; with it, it writes the same."""
    path, expected = shared
    source = spacy.load(path)
    nlp = blank_like(source)
    nlp.add_pipe(PIPE, source=source)
    with pytest.raises(ValueError, match="NME050"):
        nlp(TEXTS[0])
    nlp = blank_like(source)
    nlp.add_pipe("transformer", source=source)
    nlp.add_pipe(PIPE, source=source)
    assert_bit_identical(outputs(nlp.pipe(TEXTS)), expected)


def test_replace_listeners_then_save_and_load(shared, tmp_path):
    """The pipe gets its own copy of the shared transformer (the shipped CPU config's form);
    the rewritten config keeps the transformer's settings, so the saved pipeline loads,
    works without the transformer component and can be sourced alone."""
    path, expected = shared
    nlp = spacy.load(path)
    nlp.replace_listeners("transformer", PIPE, ["model.tok2vec"])
    nlp.remove_pipe("transformer")
    assert_bit_identical(outputs(nlp.pipe(TEXTS)), expected)
    nlp.to_disk(tmp_path / "replaced")
    loaded = spacy.load(tmp_path / "replaced")
    assert_bit_identical(outputs(loaded.pipe(TEXTS)), expected)
    alone = blank_like(loaded)
    alone.add_pipe(PIPE, source=loaded)
    assert_bit_identical(outputs(alone.pipe(TEXTS)), expected)


LOAD_BY_NAME = """
import sys
import spacy
from helpers.contract import TEXTS, as_json
print(as_json(spacy.load(sys.argv[1]).pipe(TEXTS)))
"""


def test_package_then_load_by_name(saved, tmp_path):
    kind, path, _ = saved
    name = f"contract_{kind}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        subprocess.run([sys.executable, "-m", "spacy", "package", str(path), str(tmp_path),
                        "--name", name, "--version", "0.0.1", "--build", "none"],
                       check=True, capture_output=True)
    # installed into a folder of its own, so the test leaves the environment as it was
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--no-build-isolation", "--quiet", "--target", str(tmp_path / "site"),
                    str(tmp_path / f"en_{name}-0.0.1")], check=True, capture_output=True)
    line = run_python(LOAD_BY_NAME, f"en_{name}", path=str(tmp_path / "site"))
    assert_close(line, as_json(spacy.load(path).pipe(TEXTS)))
