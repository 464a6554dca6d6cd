"""The input and the command line of an ``annotate`` job run by a study."""
import json
import sys
from pathlib import Path
from typing import List


def write_input(path: Path, texts: List[str], n: int) -> Path:
    """n documents (the texts repeated) as JSON Lines with ids."""
    with path.open("w", encoding="utf8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"a{i}", "text": texts[i % len(texts)]}) + "\n")
    return path


def annotate_command(pipeline: str, source: Path, out: Path, *extra: str) -> List[str]:
    return [sys.executable, "-m", "spacy_nested_mrc", "annotate", pipeline, str(source),
            str(out), "--no-progress", *extra]
