"""Trained pipelines averaged parameter by parameter into one (a "model soup", Wortsman et
al., 2022): runs that started from the same weights (the same pretrained encoder, or the same
trained pipeline through ``start_from.v1``) and differ in seed or schedule stay close enough
in weight space that their mean is a model of its own, predicting at the cost of one. The
pipelines must have the same pipes, labels and parameter shapes; every trained parameter of
every pipe (thinc's arrays and the torch modules of its shims: encoders, heads, a shared
``transformer`` component) is averaged, and everything else (the config, tuned thresholds,
vocab) is the first pipeline's, so the average is tuned again on dev before use."""
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy
import spacy
import torch
from spacy.language import Language
from thinc.api import Model
from thinc.shims import PyTorchShim

from ..errors import Errors

PathLike = Union[str, Path]


def average_pipelines(
    paths: Sequence[PathLike], weights: Optional[Sequence[float]] = None
) -> Language:
    """The pipelines at ``paths``, loaded and averaged into the first.

    paths (Sequence[PathLike]): two or more trained pipeline folders of the same pipes.
    weights (Optional[Sequence[float]]): each pipeline's weight in the mean, > 0 (normalized
        to sum to 1); None: equal.
    RETURNS (Language): the first pipeline with every trained parameter the weighted mean of
        the pipelines'; its meta's ``performance`` emptied (the scores were the first's) and
        its ``notes`` naming the pipelines and their shares.
    """
    if len(paths) < 2:
        raise ValueError(Errors.NME232.format(problem=f"{len(paths)} pipeline(s) given, "
                                              "averaging needs two or more"))
    shares = _shares(weights, len(paths))
    nlps = [spacy.load(path) for path in paths]
    average_loaded(nlps, shares, [str(path) for path in paths])
    meta = nlps[0].meta
    meta["performance"] = {}
    note = "Parameters averaged from " + ", ".join(
        f"{path} ({share:.3g})" for path, share in zip(paths, shares))
    meta["notes"] = f"{meta['notes']} {note}".strip() if meta.get("notes") else note
    return nlps[0]


def average_loaded(nlps: Sequence[Language], shares: Sequence[float],
                   names: Sequence[str]) -> None:
    """Set every trained parameter of ``nlps[0]`` to the mean of the pipelines' own, each
    weighted by its share; NME232 where the pipelines differ in their pipes, labels or
    parameters (named by ``names``)."""
    first = nlps[0]
    for nlp, name in zip(nlps[1:], names[1:]):
        if nlp.pipe_names != first.pipe_names:
            raise ValueError(Errors.NME232.format(problem=(
                f"{name} has the pipes {nlp.pipe_names}, {names[0]} {first.pipe_names}")))
    for pipe_name in first.pipe_names:
        pipes = [nlp.get_pipe(pipe_name) for nlp in nlps]
        for pipe, name in zip(pipes[1:], names[1:]):
            labels = getattr(pipe, "labels", None)
            if labels != getattr(pipes[0], "labels", None):
                raise ValueError(Errors.NME232.format(problem=(
                    f"pipe '{pipe_name}' of {name} has the labels {labels}, of {names[0]} "
                    f"{getattr(pipes[0], 'labels', None)}")))
        models = [getattr(pipe, "model", None) for pipe in pipes]
        if isinstance(models[0], Model):
            _average_models(models, shares, f"pipe '{pipe_name}'")


def _shares(weights: Optional[Sequence[float]], count: int) -> List[float]:
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count or not all(w > 0 for w in weights):
        raise ValueError(Errors.NME233.format(weights=list(weights), count=count))
    total = float(sum(weights))
    return [float(w) / total for w in weights]


def _average_models(models: Sequence[Model], shares: Sequence[float], where: str) -> None:
    """The nodes of ``models`` walked side by side: thinc parameters and the state of torch
    shims averaged into the first model's."""
    walks = [list(model.walk()) for model in models]
    if len({len(walk) for walk in walks}) != 1:
        raise ValueError(Errors.NME232.format(problem=f"{where} has models of other layers"))
    seen = set()
    for nodes in zip(*walks):
        if len({node.name for node in nodes}) != 1:
            names = sorted({node.name for node in nodes})
            raise ValueError(Errors.NME232.format(problem=f"{where} has layers {names}"))
        node_where = f"{where}, layer '{nodes[0].name}'"
        averaged = {}
        for param in nodes[0].param_names:
            if nodes[0].has_param(param):
                arrays = [node.ops.to_numpy(node.get_param(param)) for node in nodes]
                averaged[param] = _mean(arrays, shares, f"{node_where}, parameter '{param}'")
        for param, value in averaged.items():
            dtype = nodes[0].get_param(param).dtype
            nodes[0].set_param(param, nodes[0].ops.asarray(value.astype(dtype)))
        if len({len(node.shims) for node in nodes}) != 1:
            counts = [len(node.shims) for node in nodes]
            raise ValueError(Errors.NME232.format(problem=f"{node_where} has {counts} shims"))
        for shims in zip(*(node.shims for node in nodes)):
            torch_shims = [isinstance(shim, PyTorchShim) for shim in shims]
            if any(torch_shims) and not all(torch_shims):
                raise ValueError(Errors.NME232.format(problem=(
                    f"{node_where} has a torch model in some pipelines only")))
            if id(shims[0]) in seen or not torch_shims[0]:
                continue
            seen.add(id(shims[0]))
            _average_modules([shim._model for shim in shims], shares, node_where)


def _average_modules(modules: Sequence[torch.nn.Module], shares: Sequence[float],
                     where: str) -> None:
    """Each floating tensor of the modules' state averaged (in float64, then the first
    module's dtype); other tensors (integer buffers such as position ids) must be equal."""
    states = [module.state_dict() for module in modules]
    if len({tuple(state) for state in states}) != 1:
        raise ValueError(Errors.NME232.format(problem=f"{where} has torch modules of other "
                                              "parameters"))
    averaged: Dict[str, torch.Tensor] = {}
    for key, first in states[0].items():
        tensors = [state[key] for state in states]
        name = f"{where}, tensor '{key}'"
        if first.is_floating_point():
            arrays = [t.detach().to("cpu", torch.float64).numpy() for t in tensors]
            mean = _mean(arrays, shares, name)
            averaged[key] = torch.from_numpy(mean).to(first.device, first.dtype)
        elif not all(torch.equal(first, t.to(first.device)) for t in tensors[1:]):
            raise ValueError(Errors.NME232.format(problem=f"{name} differs and cannot be "
                                                  "averaged"))
    modules[0].load_state_dict(averaged, strict=False)


def _mean(arrays: Sequence[numpy.ndarray], shares: Sequence[float], where: str) -> numpy.ndarray:
    """The weighted mean of arrays of one shape, in float64; NME232 otherwise."""
    shapes = {tuple(array.shape) for array in arrays}
    if len(shapes) != 1:
        raise ValueError(Errors.NME232.format(problem=f"{where} has the shapes "
                                              f"{sorted(shapes)}"))
    total = numpy.zeros(arrays[0].shape, dtype="float64")
    for array, share in zip(arrays, shares):
        total += share * numpy.asarray(array, dtype="float64")
    return total
