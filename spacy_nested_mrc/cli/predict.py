"""``predict``: the nested entities of a few texts."""
from typing import List, Optional

from ._util import QUANTIZE_HELP, RUNTIME_HELP, Arg, Opt, app, print_entities


@app.command("predict")
def predict_cli(
    pipeline: str = Arg(..., help="a trained pipeline (folder or package name)"),
    texts: List[str] = Arg(..., help="texts to analyse"),
    quantize: Optional[str] = Opt(None, "--quantize", help=QUANTIZE_HELP),
    runtime: Optional[str] = Opt(None, "--runtime", help=RUNTIME_HELP),
) -> int:
    """Load a pipeline and print the nested entities of each text, with their scores."""
    from ..annotate.loading import load_annotator, pipe_spans_key

    nlp = load_annotator(pipeline, quantize, runtime)
    key = pipe_spans_key(nlp)
    for doc in nlp.pipe(texts):
        print_entities(doc, key)
    return 0
