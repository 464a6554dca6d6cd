"""The commands' output as spaCy's CLIs give it: no progress bar redraws in a log, warnings as
their category and coded message without Python's source line."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_convert_into_a_log_has_no_progress_redraws_and_plain_warnings(tmp_path):
    source = tmp_path / "in.jsonl"
    lines = [{"tokens": ["IL-2", "gene"], "entities": [{"start": 0, "end": 1, "type": "protein"}]}
             for _ in range(50)]
    lines.append({"tokens": ["IL-2"], "entities": [{"start": 0, "end": 5, "type": "protein"}]})
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "convert", str(source),
         str(tmp_path / "out.spacy"), "--sentences"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "\r" not in result.stderr and "Converting" not in result.stderr
    warned = [line for line in result.stderr.splitlines() if "NMW001" in line]
    assert warned and warned[0].startswith("UserWarning: [NMW001]")
    assert ".py:" not in result.stderr
