"""bench/project.yml runs each study with one command: every command resolves, names a
script that exists in bench/, and passes only options that script (or the shared helpers it
imports) defines."""

import re
import shlex
from pathlib import Path
from typing import List

import pytest
from weasel.util import load_project_config

BENCH = Path(__file__).parents[1] / "bench"
CONFIG = load_project_config(BENCH)
LINES = [(command["name"], line) for command in CONFIG["commands"] for line in command["script"]]


def with_helpers(script: Path) -> str:
    """RETURNS: the script's source and that of the bench modules it imports (the shared
    helpers of bench/benchlib/), and of those they import in turn."""
    sources, todo = {}, [script]
    while todo:
        path = todo.pop(0)
        if path not in sources and path.exists():
            sources[path] = path.read_text()
            todo += imported_files(sources[path])
    return "".join(sources.values())


def imported_files(source: str) -> List[Path]:
    """The files in bench/ that the ``from X import ...`` lines of ``source`` may read:
    ``from benchlib.X import`` -> benchlib/X.py, ``from benchlib import X, Y`` -> benchlib/
    __init__.py, X.py and Y.py, ``from X import`` -> X.py (those of other packages are not
    there)."""
    files = []
    for module, names in re.findall(r"^from ([\w.]+) import (\([^)]*\)|.*)$", source, re.M):
        files.append(BENCH.joinpath(*module.split(".")).with_suffix(".py"))
        if module == "benchlib":
            files.append(BENCH / "benchlib" / "__init__.py")
            files += [BENCH / "benchlib" / f"{name}.py" for name in re.findall(r"\w+", names)]
    return files


def test_the_options_of_the_shared_helpers_count_and_no_others():
    """An option defined only in bench/benchlib/ (``add_pipeline_arguments``) is found
    through the script that imports it; one that nothing defines is not."""
    script = BENCH / "encoder_floor.py"
    assert '"--sentences"' not in script.read_text()
    assert '"--sentences"' in with_helpers(script)
    assert '"--no-such-option"' not in with_helpers(script)


def test_every_study_of_the_readme_has_a_command():
    names = {command["name"] for command in CONFIG["commands"]}
    assert {"speed", "annotate", "memory", "long_documents", "documents_context", "data"} <= names
    assert any(name.startswith("accuracy") for name in names)


@pytest.mark.parametrize("name,line", LINES, ids=[f"{n}:{i}" for i, (n, _) in enumerate(LINES)])
def test_each_command_runs_a_bench_script_with_its_own_options(name, line):
    words = shlex.split(line)
    assert words[0] in ("python", "bash"), line
    script = BENCH / words[1]
    assert script.exists(), f"{name}: no {script}"
    if "${" in line:
        pytest.fail(f"{name}: a variable was not resolved: {line}")
    source = with_helpers(script)
    for option in (w for w in words[2:] if w.startswith("--")):
        defined = re.search(rf"""["']{re.escape(option)}["']""", source)
        assert defined, f"{name}: {script.name} takes no {option}"
    outputs = [words[i + 1] for i, w in enumerate(words) if w == "--out"]
    for out in outputs:
        assert out.startswith("results/") and out.count("/") == 2, (
            f"{name}: results go into the study's folder: {out}"
        )


def test_context_eval_scores_what_nlp_evaluate_predicted():
    """``nlp.evaluate`` predicts into copies of the examples; context_eval's scorer keeps
    those, so our scorer sees the predictions (scoring the originals gave 0 for everything).
    Run as the script's own check: tests and bench import nothing of each other."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, str(BENCH / "context_eval.py"), "--check"],
                            capture_output=True, text=True, cwd=BENCH.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "keeps nlp.evaluate's predictions" in result.stdout
