"""Pipelines as the studies build, run and compare them: the command-line options naming
trained pipelines, untrained pipelines with GENIA's labels (or copies of them), bare copies of
gold docs to predict into, and the spans and scores they predict."""
import argparse
from pathlib import Path
from typing import Any, Dict, List, Tuple

GENIA_LABELS = ["DNA", "RNA", "cell_line", "cell_type", "protein"]


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments naming the pipelines and the sentences (encoder_floor, pipe_profile,
    filter_by_parts)."""
    parser.add_argument("--dev", required=True)
    parser.add_argument("--pipelines", nargs="+", required=True, help="NAME=PATH ...")
    parser.add_argument("--sentences", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="NAME:KEY=JSON",
                        help="a config override at load for one pipeline, e.g. its windows")


def copied_queries(n_labels: int) -> dict:
    """``n_labels`` labels -> questions: GENIA's five, then copies of them with their own
    names and the same questions, so every label costs what a real one does."""
    from spacy_nested_mrc.models.mrc.questions import load_preset

    genia_questions = load_preset("genia")
    labels = [GENIA_LABELS[i % 5] + ("" if i < 5 else f"_copy{i}") for i in range(n_labels)]
    return {label: genia_questions[label.split("_copy")[0]] for label in labels}


def untrained_pipeline(model: Dict[str, Any], labels: List[str]) -> Tuple[Any, List[str]]:
    """A blank English pipeline whose nested_mrc_ner pipe has the model config ``model`` and
    the ``labels``, initialized without training data (label_speed, version_speed).
    RETURNS (Tuple[Language, List[str]]): the pipeline and the warnings its initialize gave."""
    import warnings

    import spacy
    from spacy.training import Example

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("nested_mrc_ner", config={"model": model})
    for label in labels:
        pipe.add_label(label)
    empty = Example(nlp.make_doc("none"), nlp.make_doc("none"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp.initialize(lambda: [empty])
    return nlp, [str(w.message) for w in caught]


def bare_copies(docs, vocab):
    from spacy.tokens import Doc

    return [Doc(vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d])
            for d in docs]


def predict(nlp, gold, batch_size: int):
    """Predictions for bare copies of the ``gold`` docs, one batch at a time, with
    Locate-and-Label's span proposals (seeds kept by its filter) per sentence counted in the
    same pass from what the model leaves after each batch.

    RETURNS (Tuple[List[Doc], Optional[float]]): the predicted docs, and the proposals per
        sentence (None for a pipeline without them).
    """
    model = nlp.get_pipe("nested_mrc_ner").model if "nested_mrc_ner" in nlp.pipe_names else None
    counted = model is not None and "last_proposal_counts" in model.attrs
    docs = bare_copies(gold, nlp.vocab)
    predicted, total = [], 0
    for i in range(0, len(docs), batch_size):
        predicted.extend(nlp.pipe(docs[i : i + batch_size], batch_size=batch_size))
        if counted:
            total += sum(model.attrs["last_proposal_counts"])
    return predicted, (round(total / max(1, len(docs)), 2) if counted else None)


def predictions(nlp: Any, texts: List[str], batch_size: int) -> List[Tuple[list, list]]:
    out = []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        group = doc.spans["nested"]
        out.append(([(s.start, s.end, s.label_) for s in group],
                    [float(x) for x in group.attrs.get("scores", [])]))
    return out


def same_predictions(a: List[Tuple[list, list]], b: List[Tuple[list, list]]) -> Dict[str, Any]:
    spans_equal = all(x[0] == y[0] for x, y in zip(a, b))
    worst = max((abs(p - q) for x, y in zip(a, b) if x[0] == y[0]
                 for p, q in zip(x[1], y[1])), default=0.0)
    return {"same_spans": spans_equal, "max_score_difference": worst}


def fresh_pipeline(path: Path) -> str:
    """The factory's default pipeline (packed MRC, the embedded all-MiniLM-L6-v2) with GENIA's
    labels, initialized without training data and saved to ``path`` (annotate_sigterm,
    annotate_odd_input). RETURNS (str): the path."""
    import spacy
    from spacy.training import Example

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("nested_mrc_ner")
    for label in GENIA_LABELS:
        pipe.add_label(label)
    nlp.initialize(lambda: [Example(nlp.make_doc("none"), nlp.make_doc("none"))])
    nlp.to_disk(path)
    return str(path)
