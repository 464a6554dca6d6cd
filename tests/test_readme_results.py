"""The README's measured numbers are those of the results files it cites: each row of the model
table names its file and row, and its P, R, F1 and speed are read back from there; the
calibration error it quotes is in the tuning report it cites."""

import json
import re
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf8")
ACCURACY = ROOT / "bench" / "results" / "accuracy_genia_cpu_minilm"


def table_rows(text: str, header_start: str) -> List[List[str]]:
    """The cells of each row of the Markdown table whose header starts with
    ``header_start``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def results_row(path: Path, model: str) -> Dict[str, str]:
    """The row of ``model`` in the main table of a genia_bench results file, by column."""
    text = path.read_text(encoding="utf8")
    header = next(line for line in text.splitlines() if line.startswith("| model | P |"))
    names = [cell.strip() for cell in header.strip("|").split("|")]
    for row in table_rows(text, "| model | P |"):
        if row[0] == model:
            return dict(zip(names, row))
    raise AssertionError(f"no row {model} in {path}")


def number(cell: str) -> float:
    return float(re.search(r"\d+(\.\d+)?", cell).group())


MODEL_ROWS = table_rows(README, "| config | P | R |")
SPEED_FILE = ROOT / re.search(r"`(bench/results/speed_[^`]+\.md)`", README).group(1)


def test_the_table_has_its_rows():
    assert len(MODEL_ROWS) >= 4
    assert all(len(row) == 7 for row in MODEL_ROWS)


@pytest.mark.parametrize("row", MODEL_ROWS, ids=[r[1] + "/" + r[3] for r in MODEL_ROWS])
def test_each_model_row_is_its_results_file(row):
    config, p, r, spacy_f, gold_f, speed, source = row
    file_name, model = re.fullmatch(r"`([^`]+)`: `([^`]+)`", source).groups()
    measured = results_row(ACCURACY / file_name, model)
    assert number(p) == float(measured["P spaCy tok"])
    assert number(r) == float(measured["R spaCy tok"])
    assert number(spacy_f) == float(measured["spacy evaluate F1"])
    assert number(gold_f) == float(measured["F1"])
    if "*" not in speed:  # measured against the length-sorted encoder, in the speed study
        name = re.search(r"configs/(\w+)_cpu\.cfg", config).group(1)
        speed_rows = table_rows(SPEED_FILE.read_text(encoding="utf8"), "| system |")
        ratio = next(cells[2] for cells in speed_rows if cells[0] == f"{name}, by length")
        assert number(speed) == float(ratio)


def test_the_calibration_error_quoted_is_in_its_tuning_report():
    match = re.search(r"calibration error (0\.\d+) after `tune`, against (0\.\d+) "
                      r"before:\s*`([^`]+\.json)`", README)
    after, before, path = match.groups()
    report = json.loads((ROOT / path).read_text(encoding="utf8"))
    found = json.dumps(report)
    values = {key: float(v) for key, v in re.findall(r'"(ece_after|ece_before)": ([0-9.]+)', found)}
    assert round(values["ece_after"], 3) == float(after)
    assert round(values["ece_before"], 3) == float(before)
