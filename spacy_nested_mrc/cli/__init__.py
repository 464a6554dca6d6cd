"""Command-line interface: ``python -m spacy_nested_mrc COMMAND``, a typer app as spaCy's own.
One module per group of commands; each registers on ``app`` when imported."""
from ..annotate.loading import load_pipeline
from . import (  # noqa: F401  (registers commands)
    adapt,
    annotate,
    average,
    convert,
    demo,
    evaluate,
    predict,
    relabel,
    tune,
    visualize,
)
from ._util import app, main, print_entities

__all__ = ["app", "main", "load_pipeline", "print_entities"]
