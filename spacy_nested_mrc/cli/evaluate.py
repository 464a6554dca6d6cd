"""``evaluate``: the readable report of a pipeline on gold data."""
from pathlib import Path
from typing import List, Optional

from spacy.training import Example

from ..annotate.loading import load_annotator
from ..errors import Errors
from ._util import QUANTIZE_HELP, RUNTIME_HELP, Arg, Opt, app

GOLD_HELP = "gold data: GENIA-style .jsonl or a .spacy DocBin"
GOLD_PREPROC_HELP = (
    "predict on the file's tokens, not on nlp(text)'s (as spacy evaluate --gold-preproc)"
)


def predict_gold(
    pipeline: str,
    data: Path,
    spans_key: str,
    batch_size: int,
    limit: int = 0,
    gold_preproc: bool = False,
    quantize: Optional[str] = None,
    runtime: Optional[str] = None,
) -> List[Example]:
    """Load a pipeline and run it on gold data (.jsonl or .spacy) as ``spacy evaluate`` does
    (``evaluation.examples.predict_examples``).
    RETURNS (List[Example]): predicted docs paired with gold."""
    from ..evaluation.examples import predict_examples

    nlp = load_annotator(pipeline, quantize, runtime)
    return predict_examples(nlp, data, spans_key, limit=limit, gold_preproc=gold_preproc,
                            batch_size=batch_size)


@app.command("evaluate")
def evaluate_cli(
    pipeline: str = Arg(..., help="a trained pipeline (folder or package name)"),
    data: Path = Arg(..., help=GOLD_HELP),
    output: Optional[Path] = Opt(None, "--output", help="folder for report.json/.md and plots"),
    spans_key: str = Opt("nested", "--spans-key", help="doc.spans key of the gold entities"),
    batch_size: int = Opt(64, "--batch-size", help="docs per batch"),
    examples: int = Opt(20, "--examples", help="error examples to keep"),
    gold_preproc: bool = Opt(False, "--gold-preproc", help=GOLD_PREPROC_HELP),
    quantize: Optional[str] = Opt(None, "--quantize", help=QUANTIZE_HELP),
    runtime: Optional[str] = Opt(None, "--runtime", help=RUNTIME_HELP),
) -> int:
    """Score a pipeline on gold data: P/R/F, per type, nested vs not, by length, errors by
    kind. Prints Markdown; with --output also writes JSON, Markdown and plots."""
    from ..evaluation.report import evaluate_examples, to_markdown, write_report

    predicted = predict_gold(pipeline, data, spans_key, batch_size, gold_preproc=gold_preproc,
                             quantize=quantize, runtime=runtime)
    if not any(len(eg.reference.spans.get(spans_key, ())) for eg in predicted):
        raise ValueError(Errors.NME160.format(
            role="gold", path=data, name=pipeline, key=spans_key, limit="",
            command="evaluate", consequence=" (every score would be n/a)"))
    report = evaluate_examples(predicted, spans_key, examples)
    print(to_markdown(report, spans_key))
    if output:
        for path in write_report(report, output, spans_key):
            print(f"Saved {path}")
    return 0
