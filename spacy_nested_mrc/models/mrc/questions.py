"""One natural-language question per label (Li et al., 2020, Table 1 and Table 4).

Built-in questions ship as JSON files in ``questions/``, one per dataset. A user's own
questions (config or JSON file) take precedence over them.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Union

from ...errors import Errors
from ...validation import check_choice

QUESTION_DIR = Path(__file__).parent / "questions"
QUERY_STYLES = ("natural", "pseudo", "index")


@lru_cache(maxsize=None)
def check_preset(name: str) -> Path:
    """RETURNS (Path): the file of the built-in question set ``name``.
    RAISES (ValueError): NME006 naming the sets there are, for another name."""
    path = QUESTION_DIR / f"{name}.json"
    if not isinstance(name, str) or not path.exists():
        options = sorted(p.stem for p in QUESTION_DIR.glob("*.json"))
        raise ValueError(Errors.NME006.format(what="question preset", value=name, options=options))
    return path


def load_preset(name: str) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): the built-in questions of one dataset (e.g. "genia")."""
    return json.loads(check_preset(name).read_text(encoding="utf8"))


def make_questions(
    labels: List[str],
    *,
    style: str = "natural",
    queries: Optional[Dict[str, str]] = None,
    queries_path: Optional[Union[str, Path]] = None,
    presets: Iterable[str] = ("genia", "ace2005", "conll03", "ontonotes"),
) -> Dict[str, str]:
    """The question of every label.

    labels (List[str]): the labels, in label-id order.
    style (str): "natural" (a question as in the paper's Table 1), "pseudo" (the label name
        as a keyword) or "index" (the label's position, as in the paper's Table 4).
    queries (Optional[Dict[str, str]]): label -> question, taking precedence (in every style:
        a label a user adds by its question keeps it).
    queries_path (Optional[Path]): a JSON file label -> question, after ``queries``.
    presets (Iterable[str]): built-in question files searched in order.
    RETURNS (Dict[str, str]): label -> question, for every label.
    """
    check_choice("style", style, QUERY_STYLES)
    if style == "pseudo":
        return {label: (queries or {}).get(label) or label.replace("_", " ") for label in labels}
    if style == "index":
        return {label: (queries or {}).get(label) or str(i + 1) for i, label in enumerate(labels)}
    known: Dict[str, str] = {}
    for preset in reversed(list(presets)):
        known.update(load_preset(preset))
    if queries_path:
        known.update(json.loads(Path(queries_path).read_text(encoding="utf8")))
    known.update(queries or {})
    missing = [label for label in labels if not known.get(label, "").strip()]
    if missing:
        raise ValueError(Errors.NME002.format(label=missing[0], style=style, known=sorted(known)))
    return {label: known[label] for label in labels}
