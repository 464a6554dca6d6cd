"""Gold and predicted nested spans side by side, rendered with displaCy's span style."""
import html
from pathlib import Path
from typing import Iterable, Union

from spacy import displacy
from spacy.training import Example

from ..types import DEFAULT_SPANS_KEY


def render_examples(
    examples: Iterable[Example], spans_key: str = DEFAULT_SPANS_KEY, title: str = "nested_mrc_ner"
) -> str:
    """RETURNS (str): a whole HTML page, one row per example: gold left, predicted right."""
    rows = []
    for eg in examples:
        cells = []
        for name, doc in (("gold", eg.reference), ("predicted", eg.predicted)):
            markup = displacy.render(doc, style="span", options={"spans_key": spans_key},
                                     page=False, jupyter=False)
            cells.append(f'<td class="{name}"><h4>{name}</h4>{markup}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>"
        "body{font-family:sans-serif;margin:1em}td{vertical-align:top;width:50%;"
        "padding:0.5em;border-bottom:1px solid #ddd}h4{margin:0;color:#666}</style></head>"
        f"<body><h2>{html.escape(title)}</h2><table>{''.join(rows)}</table></body></html>"
    )


def write_html(examples: Iterable[Example], path: Union[str, Path],
               spans_key: str = DEFAULT_SPANS_KEY, title: str = "nested_mrc_ner") -> Path:
    """Write ``render_examples`` to ``path``. RETURNS (Path): the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_examples(examples, spans_key, title), encoding="utf8")
    return path
