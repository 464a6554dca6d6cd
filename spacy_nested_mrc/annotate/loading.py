"""Loading a trained pipeline for the commands: a coded error for a missing one, its
nested_mrc_ner pipes found, quantized or run in ONNX Runtime on request."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

from ..encoder.onnx import check_runtime
from ..encoder.quantization import check_quantize, run_encoders_as
from ..errors import Errors
from ..runtime.memory import limit_onednn_cache
from ..runtime.precision import resolve_precision
from ..validation import check_positive

if TYPE_CHECKING:
    from spacy.language import Language
    from thinc.api import Config


def nested_pipes(nlp: "Language") -> list:
    """RETURNS (list): the ``nested_mrc_ner`` pipes of a pipeline, in order."""
    from ..component import nested_pipe_names

    return [nlp.get_pipe(name) for name in nested_pipe_names(nlp)]


def pipe_spans_key(nlp: "Language") -> str:
    """RETURNS (str): the spans key of the pipeline's nested_mrc_ner pipe (NME040 if there
    is none or more than one)."""
    from ..component import find_component

    return nlp.get_pipe(find_component(nlp)).key


def check_pipeline_folder(name: str) -> None:
    """Refuse (NME043) an existing folder that holds no saved pipeline."""
    path = Path(name)
    if path.is_dir() and not (path / "config.cfg").is_file():
        raise FileNotFoundError(Errors.NME043.format(name=name))


def load_pipeline(name: str, **kwargs) -> "Language":
    """``spacy.load`` with a coded one-line error (NME042) for a pipeline that is not there.
    RETURNS (Language): the pipeline."""
    import spacy

    check_pipeline_folder(name)
    try:
        return spacy.load(name, **kwargs)
    except OSError as err:
        raise FileNotFoundError(Errors.NME042.format(name=name, error=err)) from err


def pipeline_config(name: str) -> "Config":
    """The config of a saved pipeline: a folder, or an installed package (NME042 if
    neither)."""
    from spacy.util import get_package_path, is_package, load_config

    path = Path(name)
    if not (path / "config.cfg").is_file() and is_package(name):
        found = sorted(get_package_path(name).glob("*/config.cfg"))
        path = found[0].parent if found else path
    check_pipeline_folder(name)
    if not (path / "config.cfg").is_file():
        raise FileNotFoundError(Errors.NME042.format(name=name, error="no config.cfg"))
    return load_config(path / "config.cfg", interpolate=False)


def precision_overrides(config: "Config", precision: str) -> Dict[str, str]:
    """Config overrides that set ``precision`` in every component model of ours (the
    ``nested_mrc_ner`` models and a ``transformer`` built with our TransformerModel): the
    model's own setting (a flat config, the transformer) and that of every block of ours
    inside it (the MRC family's encoder, Locate-and-Label's heads and its own transformer).

    RETURNS (Dict[str, str]): dotted config paths -> precision, for ``spacy.load``.
    """
    overrides = {}
    for name, component in config.get("components", {}).items():
        model = component.get("model", {}) if isinstance(component, dict) else {}
        if not _ours(model):
            continue
        for path in _precision_paths(model, f"components.{name}.model"):
            overrides[path] = precision
    return overrides


def _ours(block: dict) -> bool:
    """Whether a config block is a function this package registers."""
    name = block.get("@architectures") or block.get("@misc") or ""
    return str(name).startswith("spacy-nested-mrc.")


def _precision_paths(block: dict, path: str) -> List[str]:
    """The dotted paths of the ``precision`` settings of ``block`` (at ``path``) and of the
    blocks of ours inside it."""
    found = [f"{path}.precision"] if "precision" in block and _ours(block) else []
    for key, inner in block.items():
        if isinstance(inner, dict):
            found += _precision_paths(inner, f"{path}.{key}")
    return found


def load_annotator(
    pipeline: str,
    quantize: Optional[str] = None,
    runtime: Optional[str] = None,
    release_every: int = 0,
    config: Optional[dict] = None,
    precision: Optional[str] = None,
    onednn_cache: Optional[int] = None,
) -> "Language":
    """Load a pipeline to annotate with: ``spacy.load`` (NME042 if it is missing), with
    ``quantize = "int8"`` and ``runtime = "onnxruntime"`` applied to every Hugging Face
    encoder in it (the nested_mrc_ner pipes' own, and a shared ``transformer`` pipe that
    they listen to). Such a pipeline is for inference: a shared transformer pipe quantized
    here would save int8 weights that spacy-transformers cannot read back, so save the
    float pipeline instead.

    pipeline (str): a pipeline folder or package.
    quantize (Optional[str]): None (as saved) or "int8".
    runtime (Optional[str]): None (as saved), "torch" or "onnxruntime" (CPU).
    release_every (int): if > 0, a ``nested_mrc_release_memory`` pipe is added last that
        gives free heap memory back every that many documents (unless the pipeline has
        one).
    config (Optional[dict]): config overrides at load, as ``spacy.load``'s.
    precision (Optional[str]): None (as the config says), or "fp32", "bf16", "fp16" or
        "auto" for every model of ours in the pipeline (``precision_overrides``).
    onednn_cache (Optional[int]): the most bf16 primitives oneDNN keeps in this process
        (``limit_onednn_cache``, before the pipeline first runs); None: as the
        environment says.
    RETURNS (Language): the pipeline.
    """
    check_quantize(quantize)
    if runtime is not None:
        check_runtime(runtime)
    check_positive("release_every", release_every, allow_zero=True)
    if onednn_cache is not None:
        limit_onednn_cache(onednn_cache)
    overrides = dict(config or {})
    if precision is not None:
        resolve_precision(precision)
        overrides.update(precision_overrides(pipeline_config(pipeline), precision))
    nlp = load_pipeline(pipeline, config=overrides)
    if release_every and "nested_mrc_release_memory" not in nlp.pipe_factories.values():
        nlp.add_pipe("nested_mrc_release_memory", last=True, config={"every": release_every})
    if quantize is None and runtime is None:
        return nlp
    pipes = nested_pipes(nlp)
    for pipe in pipes:
        if quantize is not None:
            pipe.cfg["quantize"] = quantize
        if runtime is not None:
            pipe.cfg["runtime"] = runtime
    # what is not given stays as the (first) pipe was saved
    saved = pipes[0].cfg if pipes else {}
    quantize = quantize or saved.get("quantize")
    runtime = runtime or saved.get("runtime", "torch")
    # every encoder: the pipes' own and a shared transformer pipe they listen to
    for _, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is not None and hasattr(model, "walk"):
            run_encoders_as(model, quantize, runtime)
    return nlp
