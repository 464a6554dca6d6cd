"""``spacy-nested-mrc.TorchAdam.v1``: thinc's Adam.v1 stepping all torch parameters at once.
It must give thinc's numbers to float32 rounding, on torch shims (thinc's and the heads', at
their lr_scale) and thinc layers alike, through a whole ``nested_mrc_ner`` update; a config
names it; settings Adam does not take raise NME230."""

import copy
from typing import Dict, List, Tuple

import numpy as np
import pytest
import spacy
import torch
from helpers.locate_label import CONFIGS, shipped_pipeline
from helpers.pipes import PIPE, TRAIN, initialized_nlp, make_examples
from spacy.util import fix_random_seed, load_config, registry
from thinc.api import Adam, Linear, Model, Optimizer, PyTorchGradScaler, chain
from thinc.shims import PyTorchShim

from spacy_nested_mrc.training.optimizer import TorchAdam, create_torch_adam
from spacy_nested_mrc.training.shims import HeadsShim

# float32 rounding of steps of 0.01-0.15 a parameter, amplified where Adam divides by a root
# near eps (thinc's own float32 result is as far from a float64 one); arithmetic that differs
# (torch's AdamW, a step without lr_scale) is far outside it
RTOL, ATOL = 1e-5, 1e-6
HEADS_LR_SCALE = 3.0


def settings(**changes) -> dict:
    """Adam settings under which every part of the arithmetic shows: a warmup schedule,
    decoupled L2, clipping some tensors, averages."""
    learn_rate = registry.schedules.get("warmup_linear.v1")(
        initial_rate=0.05, warmup_steps=2, total_steps=8)
    base = {"learn_rate": learn_rate, "L2": 0.1, "grad_clip": 0.5, "L2_is_weight_decay": True,
            "use_averages": True, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6}
    base.update(changes)
    return base


def toy_model() -> Model:
    """A thinc layer, a torch module behind thinc's shim and one behind the heads' shim."""
    fix_random_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Linear(8, 8))
    heads = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Linear(4, 2))
    layers = [
        Model("encoder", lambda *a: None,
              shims=[PyTorchShim(encoder, grad_scaler=PyTorchGradScaler(enabled=True))]),
        Model("heads", lambda *a: None,
              shims=[HeadsShim(heads, lr_scale=HEADS_LR_SCALE)]),
        Linear(3, 2).initialize(),
    ]
    return chain(*layers)


def torch_params(model: Model) -> List[torch.nn.Parameter]:
    return [p for node in model.walk() for shim in node.shims for p in shim._model.parameters()]


def set_grads(model: Model, step: int) -> None:
    """Gradients from a seeded generator, of scales from eps-sized to clipped; the first
    Linear layer of the encoder gets none at step 1 (it is then left alone)."""
    gen = torch.Generator().manual_seed(step)
    for i, param in enumerate(torch_params(model)):
        if step == 1 and i in (1, 2):
            param.grad = None
            continue
        scale = (1e-7, 1e-3, 0.3, 2.0)[(i + step) % 4]
        grad = torch.randn(param.shape, generator=gen) * scale
        if param.grad is None:
            param.grad = grad
        else:
            param.grad += grad
    for node in model.walk():
        for name in node.param_names:
            grad = torch.randn(node.get_param(name).shape, generator=gen).numpy()
            node.set_grad(name, grad.astype("float32"))


def train_toy(optimizer: Optimizer, steps: int = 6, overflow_at: int = 3,
              per_call: bool = False) -> Model:
    """The toy model after ``steps`` updates; a TorchAdam steps it at once unless
    ``per_call`` (thinc's ``Model.finish_update``: each shim calls it per parameter)."""
    model = toy_model()
    for step in range(1, steps + 1):
        set_grads(model, step)
        if step == overflow_at:  # the encoder's scaler found an overflow in this step
            model.layers[0].shims[0]._grad_scaler._found_inf = True
        if isinstance(optimizer, TorchAdam) and not per_call:
            optimizer.finish_update(model)
        else:
            model.finish_update(optimizer)
        optimizer.step_schedules()
    return model


def state(optimizer: Optimizer) -> Dict[Tuple[int, str], tuple]:
    """The optimizer's per-parameter state, keyed by build order and name (the ids of two
    builds differ): moments, update count and average."""
    rows = {}
    for i, key in enumerate(sorted(optimizer.mom1)):
        average = None if optimizer.averages is None else optimizer.averages[key]
        rows[(i, key[1])] = (optimizer.mom1[key], optimizer.mom2[key],
                             optimizer.nr_update[key], average)
    return rows


def assert_same_params(a: Model, b: Model) -> None:
    for x, y in zip(torch_params(a), torch_params(b)):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=RTOL, atol=ATOL)
        assert y.grad is None or not y.grad.any()
    for na, nb in zip(a.walk(), b.walk()):
        for name in na.param_names:
            np.testing.assert_allclose(na.get_param(name), nb.get_param(name),
                                       rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("per_call", [False, True])
@pytest.mark.parametrize("changes", [
    {},
    {"L2_is_weight_decay": False},
    {"use_averages": False, "grad_clip": 0.0},
    {"learn_rate": 0.01, "L2": 0.0, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8},
])
def test_toy_model_matches_thinc_adam(changes, per_call):
    thinc_opt = Adam(**settings(**changes))
    ours = create_torch_adam(**settings(**changes))
    expected, got = train_toy(thinc_opt), train_toy(ours, per_call=per_call)
    assert_same_params(expected, got)
    # the same state, per parameter: moments, update counts (one skipped for a missing
    # gradient, the encoder's for its overflow) and averages
    theirs, mine = state(thinc_opt), state(ours)
    assert theirs.keys() == mine.keys()
    for key, (m1, m2, count, average) in theirs.items():
        np.testing.assert_allclose(mine[key][0], m1, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(mine[key][1], m2, rtol=RTOL, atol=1e-9)
        assert mine[key][2] == count
        if average is not None:
            np.testing.assert_allclose(mine[key][3], average, rtol=RTOL, atol=ATOL)
    counts = sorted({row[2] for row in theirs.values()})
    assert counts == [4, 5, 6]  # encoder: 5 (overflow), its Linear: 4 (also no grad once)


def test_the_comparison_tells_other_arithmetic_apart():
    """torch's AdamW (eps after its bias correction, decay before the step) on the same
    gradients is outside the tolerance, and so is a step that ignores lr_scale."""
    expected = train_toy(Adam(**settings(use_averages=False)))
    model = toy_model()
    torch_opt = torch.optim.AdamW(torch_params(model), lr=0.05, betas=(0.8, 0.99), eps=1e-6,
                                  weight_decay=0.1)
    for step in range(1, 7):
        set_grads(model, step)
        torch_opt.step()
        torch_opt.zero_grad()
    with pytest.raises(AssertionError):
        assert_same_params(expected, model)
    unscaled, got = TorchAdam(**settings(use_averages=False)), toy_model()
    got.layers[1].shims[0].lr_scale = 1.0
    for step in range(1, 7):
        set_grads(got, step)
        if step == 3:
            got.layers[0].shims[0]._grad_scaler._found_inf = True
        unscaled.finish_update(got)
        unscaled.step_schedules()
    with pytest.raises(AssertionError):
        assert_same_params(expected, got)
    got.layers[1].shims[0].lr_scale = HEADS_LR_SCALE


def test_state_survives_either_path():
    """A parameter stepped per call (thinc's path) and then at once keeps its moments."""
    reference, ours = Adam(**settings()), TorchAdam(**settings())
    a, b = toy_model(), toy_model()
    for step in range(1, 5):
        set_grads(a, step)
        set_grads(b, step)
        a.finish_update(reference)
        if step % 2:
            b.finish_update(ours)  # thinc's per-parameter calls
        else:
            ours.finish_update(b)
        reference.step_schedules()
        ours.step_schedules()
    assert_same_params(a, b)


def pipe_params(nlp) -> List[np.ndarray]:
    """Every parameter of the pipeline's models (the shared transformer's included)."""
    models = [proc.model for _, proc in nlp.pipeline if hasattr(proc, "model")]
    found = [p.detach().numpy().copy() for model in models for p in torch_params(model)]
    found += [node.get_param(n).copy() for model in models for node in model.walk()
              for n in node.param_names]
    return found


def mrc_pipeline(encoder: str, tmp_path) -> spacy.Language:
    """The per-label MRC pipe, its heads learning at 10x, initialised."""
    return initialized_nlp(encoder, model={"heads": {"lr_scale": 10.0}})


def locate_label_pipeline(encoder: str, tmp_path) -> spacy.Language:
    """The shipped Locate-and-Label (heads at 10x, listening to a ``transformer``
    component that spacy-transformers updates per parameter), initialised."""
    nlp = shipped_pipeline("locate_label_cpu.cfg", encoder, tmp_path,
                           {f"components.{PIPE}.model.heads.hidden_width": 16})
    fix_random_seed(0)
    nlp.initialize(lambda: make_examples(nlp, TRAIN))
    return nlp


@pytest.mark.parametrize("pipeline", [mrc_pipeline, locate_label_pipeline])
@pytest.mark.parametrize("steps", [2, 4])
def test_pipe_update_matches_thinc_adam(tiny_bert, tmp_path, pipeline, steps):
    """A whole update on a tiny encoder, heads at 10x: the same parameters under Adam.v1 and
    TorchAdam.v1 (built and initialised alike). After two steps (the first at rate 0: the
    schedule warms up) to float32 rounding; after more, each step's gradients come from the
    last step's slightly different weights, which Adam's division by sqrt(mom2) amplifies
    where a gradient is about zero (the attention's key bias has none): within 1% of the
    summed rates, about how far Adam may move a parameter."""
    runs = {}
    for name, make in (("thinc", Adam), ("ours", create_torch_adam)):
        nlp = pipeline(tiny_bert, tmp_path)
        optimizer = make(**settings(grad_clip=1.0, L2=0.01))
        examples = make_examples(nlp, TRAIN)
        rates = []
        for _ in range(steps):
            rates.append(optimizer.learn_rate)
            nlp.update(examples, sgd=optimizer, drop=0.0)
            optimizer.step_schedules()
        runs[name] = (nlp, optimizer)
    shims = [s for n in runs["ours"][0].get_pipe(PIPE).model.walk() for s in n.shims]
    assert any(isinstance(s, HeadsShim) and s.lr_scale == 10.0 for s in shims)
    initial = pipe_params(pipeline(tiny_bert, tmp_path))
    expected, got = pipe_params(runs["thinc"][0]), pipe_params(runs["ours"][0])
    assert len(expected) == len(got) > 10
    moved = 0
    for before, x, y in zip(initial, expected, got):
        if steps == 2:
            np.testing.assert_allclose(y, x, rtol=RTOL, atol=ATOL)
        else:
            assert np.abs(y - x).max() <= 0.01 * sum(rates)
        moved += not np.array_equal(before, x)
    assert moved > len(expected) // 2
    counts = [[(key[1], n) for key, n in sorted(run[1].nr_update.items())]
              for run in runs.values()]
    assert counts[0] == counts[1] and len(counts[0]) > len(expected) - 5


def test_config_names_it():
    """The shipped packed MRC config's optimizer block, the name swapped, resolves to a
    TorchAdam with its settings and schedule."""
    config = load_config(CONFIGS / "mrc_packed_cpu.cfg", interpolate=False, overrides={
        "training.optimizer.@optimizers": "spacy-nested-mrc.TorchAdam.v1"})
    block = registry.resolve({"optimizer": config["training"]["optimizer"]})["optimizer"]
    assert isinstance(block, TorchAdam)
    assert (block.b1, block.b2, block.L2, block.grad_clip, block.averages) == (
        0.9, 0.999, 0.01, 1.0, None)
    assert block.learn_rate == 0.0 and "learn_rate" in block.schedules
    block.step_schedules()
    assert 0.0 < block.learn_rate < 0.0002


@pytest.mark.parametrize("changes, named", [
    ({"beta1": 1.0}, "beta1"),
    ({"beta2": 0.0}, "beta2"),
    ({"eps": -1e-8}, "eps"),
    ({"learn_rate": -0.001}, "learn_rate"),
    ({"grad_clip": -1.0}, "grad_clip"),
    ({"L2": -0.01}, "L2"),
    ({"learn_rate": [-0.1, 0.1]}, "learn_rate"),
])
def test_bad_settings_raise(changes, named):
    with pytest.raises(ValueError, match=rf"NME230.*{named}"):
        registry.resolve({"o": {"@optimizers": "spacy-nested-mrc.TorchAdam.v1", **changes}})


def test_a_copy_steps_on_its_own_state():
    """A deep copy of the optimizer steps on from the original's state (its tensors are
    views of the copied arrays) and leaves the original's alone."""
    ours, reference = TorchAdam(**settings(learn_rate=0.01)), TorchAdam(**settings(learn_rate=0.01))
    model, expected = toy_model(), train_toy(reference, steps=4, overflow_at=0)
    for step in (1, 2):
        set_grads(model, step)
        ours.finish_update(model)
    twin = copy.deepcopy(ours)
    before = {key: value.copy() for key, value in ours.mom1.items()}
    for step in (3, 4):
        set_grads(model, step)
        twin.finish_update(model)
    assert all(np.array_equal(ours.mom1[key], value) for key, value in before.items())
    assert_same_params(expected, model)
    assert state(twin).keys() == state(reference).keys()
