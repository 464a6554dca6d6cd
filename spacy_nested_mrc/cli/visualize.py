"""``visualize``: gold and predicted nested spans side by side, as HTML."""
from pathlib import Path

from ._util import Arg, Opt, app
from .evaluate import GOLD_HELP, predict_gold


@app.command("visualize")
def visualize_cli(
    pipeline: str = Arg(..., help="a trained pipeline (folder or package name)"),
    data: Path = Arg(..., help=GOLD_HELP),
    output: Path = Arg(..., help="HTML file to write"),
    limit: int = Opt(20, "--limit", help="sentences to render"),
    spans_key: str = Opt("nested", "--spans-key", help="doc.spans key of the gold entities"),
) -> int:
    """Render gold and predicted nested spans side by side to HTML (displaCy span style)."""
    from ..evaluation.visualize import write_html

    predicted = predict_gold(pipeline, data, spans_key, 64, limit)
    print(f"Saved {write_html(predicted, output, spans_key, title=pipeline)}")
    return 0
