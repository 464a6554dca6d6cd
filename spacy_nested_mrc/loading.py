"""Loading a trained pipeline for the commands: a coded error for a missing one, its
nested_mrc_ner pipes found, quantized on request."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .errors import Errors
from .quantization import check_quantize, quantize_model

if TYPE_CHECKING:
    from spacy.language import Language


def nested_pipes(nlp: "Language") -> list:
    """RETURNS (list): the ``nested_mrc_ner`` pipes of a pipeline, in order."""
    from .tuning import nested_pipe_names

    return [nlp.get_pipe(name) for name in nested_pipe_names(nlp)]


def pipe_spans_key(nlp: "Language") -> str:
    """RETURNS (str): the spans key of the pipeline's nested_mrc_ner pipe (NME040 if there
    is none or more than one)."""
    from .tuning import find_component

    return nlp.get_pipe(find_component(nlp)).key


def load_pipeline(name: str, **kwargs) -> "Language":
    """``spacy.load`` with a coded one-line error (NME042) for a pipeline that is not there.
    RETURNS (Language): the pipeline."""
    import spacy

    try:
        return spacy.load(name, **kwargs)
    except OSError as err:
        raise FileNotFoundError(Errors.NME042.format(name=name, error=err)) from err


def load_annotator(pipeline: str, quantize: Optional[str] = None) -> "Language":
    """Load a pipeline to annotate with: ``spacy.load`` (NME042 if it is missing), with
    ``quantize = "int8"`` every Hugging Face encoder in it quantized (the nested_mrc_ner
    pipes' own, and a shared ``transformer`` pipe that they listen to). Such a pipeline is
    for inference: a shared transformer pipe quantized here would save int8 weights that
    spacy-transformers cannot read back, so save the float pipeline instead.

    pipeline (str): a pipeline folder or package.
    quantize (Optional[str]): None (as saved) or "int8".
    RETURNS (Language): the pipeline.
    """
    check_quantize(quantize)
    nlp = load_pipeline(pipeline)
    if quantize is not None:
        for pipe in nested_pipes(nlp):
            pipe.cfg["quantize"] = quantize
        # every encoder: the pipes' own and a shared transformer pipe they listen to
        for _, pipe in nlp.pipeline:
            model = getattr(pipe, "model", None)
            if model is not None and hasattr(model, "walk"):
                quantize_model(model)
    return nlp
