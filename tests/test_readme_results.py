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
RESULTS = ROOT / "bench" / "results"


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


# the columns of P, R, F1 by our scorer and F1 by spaCy's, in each results file's main table
# (keyed by the start of its header): encoder_rows.py's and common_scorer.py's
LAYOUTS = {
    "| row | encoder | precision |": ("P", "R", "F1 (ours)", "F1 (spaCy's scorer)"),
    "| pipeline | P ours |": ("P ours", "R ours", "F1 ours", "F1 spaCy"),
}


def results_row(path: Path, model: str, precision: str) -> Dict[str, str]:
    """The row of ``model`` (and ``precision``, where the file has that column) in the main
    table of a results file, by column name."""
    text = path.read_text(encoding="utf8")
    for start in LAYOUTS:
        header = next((line for line in text.splitlines() if line.startswith(start)), None)
        if header is None:
            continue
        names = [cell.strip() for cell in header.strip("|").split("|")]
        for cells in table_rows(text, start):
            row = dict(zip(names, cells))
            if cells[0] == model and row.get("precision", precision) == precision:
                return {"layout": start, **row}
    raise AssertionError(f"no row {model} ({precision}) in {path}")


def number(cell: str) -> float:
    return float(re.search(r"\d+(\.\d+)?", cell).group())


MODEL_ROWS = table_rows(README, "| config | precision | P |")
SPEED_FILE = ROOT / re.search(r"`(bench/results/[^`]*encoder_floor[^`]+\.md)`", README).group(1)


def test_the_table_has_its_rows():
    assert len(MODEL_ROWS) >= 3
    assert all(len(row) == 8 for row in MODEL_ROWS)


@pytest.mark.parametrize("row", MODEL_ROWS, ids=[r[0].split(",")[0] for r in MODEL_ROWS])
def test_each_model_row_is_its_results_file(row):
    config, precision, p, r, f1, spacy_f1, speed, source = row
    file_name, model = re.fullmatch(r"`([^`]+)`: `([^`]+)`", source).groups()
    measured = results_row(RESULTS / file_name, model, precision)
    columns = LAYOUTS[measured["layout"]]
    for shown, column in zip((p, r, f1, spacy_f1), columns):
        assert number(shown) == number(measured[column]), column
    if speed.strip() != "-":  # against the length-sorted encoder of the same precision
        name = re.search(r"configs/(\w+)_cpu\.cfg", config).group(1)
        speed_rows = table_rows(SPEED_FILE.read_text(encoding="utf8"), "| system |")
        ratio = next(cells[2] for cells in speed_rows
                     if cells[0] == f"{name}, by length [{precision}]")
        assert number(speed) == float(ratio)


def test_the_shipped_configs_rows_are_in_the_precision_they_ship():
    from spacy.util import load_config

    for config, precision, *_ in MODEL_ROWS:
        shipped = re.search(r"`(configs/\w+\.cfg)`", config)
        if shipped:
            text = load_config(ROOT / shipped.group(1), interpolate=True).to_str()
            assert f'precision = "{precision}"' in text, config


def test_the_calibration_error_quoted_is_in_its_tuning_report():
    match = re.search(r"calibration error (0\.\d+) after `tune`, against (0\.\d+) "
                      r"before:\s*`([^`]+\.json)`", README)
    after, before, path = match.groups()
    report = json.loads((ROOT / path).read_text(encoding="utf8"))
    found = json.dumps(report)
    values = {key: float(v) for key, v in re.findall(r'"(ece_after|ece_before)": ([0-9.]+)', found)}
    assert round(values["ece_after"], 3) == float(after)
    assert round(values["ece_before"], 3) == float(before)
