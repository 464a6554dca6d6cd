"""The README's Python usage runs as written, in a fresh process, with the one change that the
tiny BERT of the tests stands in for the default encoder (no download, seconds not minutes)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def usage_snippet() -> str:
    text = README.read_text(encoding="utf8")
    section = text[text.index("## Usage from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_readme_python_usage_runs(tiny_bert, tmp_path):
    code = usage_snippet()
    default = 'nlp.add_pipe("nested_mrc_ner")'
    assert default in code
    code = code.replace(default, f'nlp.add_pipe("nested_mrc_ner", config={{"model": '
                                 f'{{"encoder": {{"name": {tiny_bert!r}}}}}}})', 1)
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "my_pipeline" / "config.cfg").exists()
