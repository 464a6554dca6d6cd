"""``relabel``: give a trained pipeline's MRC pipe a new label set by their questions, keeping
its weights (a label the pipe was never trained on is predicted zero-shot)."""
import json
from pathlib import Path
from typing import Optional

from ._util import Arg, Opt, app


@app.command("relabel")
def relabel_cli(
    pipeline: Path = Arg(..., help="a trained pipeline folder"),
    output: Path = Arg(..., help="where to save the relabelled pipeline"),
    labels: str = Opt(..., "--labels", help="the new labels, comma-separated, in order"),
    questions: Optional[Path] = Opt(
        None, "--questions", help="a JSON file label -> question for labels without one"
    ),
    component: str = Opt("nested_mrc_ner", "--component", help="the pipe's name"),
) -> int:
    """Give the pipe the labels (known ones keep their questions; others take theirs from
    --questions, the config's queries or the question presets) and save the pipeline."""
    import spacy

    nlp = spacy.load(pipeline)
    asked = json.loads(questions.read_text(encoding="utf8")) if questions else {}
    new = [label.strip() for label in labels.split(",") if label.strip()]
    nlp.get_pipe(component).relabel(new, asked)
    nlp.to_disk(output)
    print(f"Saved {output}: {component} labels {new}")
    return 0
