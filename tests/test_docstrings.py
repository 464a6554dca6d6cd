"""The package's docstrings and comments describe the code, not measurements: no figure of a
benchmark (F1, memory, speed) and no results file is quoted there, so none can go stale;
docs/results.md holds the measurements, each beside the file that has it."""

import re
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "spacy_nested_mrc"
MEASUREMENT = re.compile(
    r"bench/results|\b\d[\d,.]*\s*(?:F1|MiB|MB|GB|sentences/s|documents/s)\b"
    r"|\bF1 \d|\b\d+(?:\.\d+)?x (?:faster|slower|the)\b"
)


def test_measurement_pattern_finds_figures():
    for text in ("dev F1 78.95", "peak 3.35 GB", "runs 1.87x faster", "bench/results/x.md",
                 "1,957 MB", "176.5 sentences/s"):
        assert MEASUREMENT.search(text), text
    for text in ("max_length 256 wordpieces", "the best F1 on dev", "2**25 bytes"):
        assert not MEASUREMENT.search(text), text


def test_no_measurement_in_the_packages_docstrings_and_comments():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py":  # messages name the thresholds a user chooses
            continue
        for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
            if MEASUREMENT.search(line):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not found, "measurements belong in docs/results.md:\n" + "\n".join(found)
