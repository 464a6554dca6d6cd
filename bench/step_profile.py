"""Where a training step of a shipped CPU config spends its time, as ``spacy train`` runs it:
the config's ``[training.before_update]`` callback, ``nlp.update`` without an optimizer (the
config's dropout), ``finish_update`` of every trainable pipe with the pipe's optimizer and
``step_schedules``, in spaCy's loop's order. The config is built twice from the same seed,
once with its ``[training.optimizer]`` as written (thinc's ``Adam.v1``: before) and once with
``spacy-nested-mrc.TorchAdam.v1`` (after), each stepped on the same GENIA batches in turn;
after the warm-up steps every step runs inside ``torch.profiler`` (CPU, no shapes).

An operator's self time goes to the part of the step it ran in (``record_function`` ranges
around the parts and around the pipe's ``get_loss``); inside ``nlp.update`` it goes to its
group by name (or to that of the nearest operator around it that has one), and the update's
time in no operator is Python (the pipe's own batch preparation, thinc's layers, the
profiler's bookkeeping). Example and batch preparation is
the time of reading the train file into Examples and batching it, a step's share (spaCy reads
the corpus once and batches it every epoch: an upper bound). The kernel's share of each part
(system time, minor page faults) comes from ``getrusage`` around it.

    python bench/step_profile.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --warmup 3 --steps 16 --threads 1 \\
        --out bench/results/step_profile_cpu_minilm/step_profile_mrc_packed
"""
import argparse
import resource
import statistics
import sys
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List

import torch
from benchlib.outputs import write_table
from benchlib.training import OPTIMIZERS, add_training_arguments, batches, pipes_by_optimizer
from spacy.util import fix_random_seed, registry

from spacy_nested_mrc.runtime import dropout as dropout_module

# group -> operator names (lower case, without the namespace) it takes whole, and the parts of
# names that put an operator in it; the first group that matches wins
GROUPS = [
    ("matrix products", {"mm", "addmm", "bmm", "linear", "matmul", "baddbmm", "addbmm",
                         "einsum"}, ("mkldnn", "onednn", "scaled_dot_product")),
    ("dropout", set(), ("dropout", "bernoulli")),
    ("norms and activations", set(), ("layer_norm", "gelu", "softmax", "tanh", "sigmoid",
                                      "relu", "threshold_backward", "erf", "silu")),
    ("dtype conversions", {"to", "_to_copy", "copy_"}, ()),
    ("indexing, gather, scatter", set(), ("index", "gather", "scatter", "embedding", "masked",
                                          "nonzero", "take", "select_backward",
                                          "slice_backward")),
]
PARTS = ("before_update", "update", "loss", "finish_update")
ORDER = ["matrix products", "optimizer", "dropout", "norms and activations",
         "dtype conversions", "loss", "indexing, gather, scatter", "other ops",
         "Python (update, in no op)", "release callback", "example/batch preparation"]


def group_of(name: str) -> str:
    """The group of an operator inside ``nlp.update`` (outside the loss)."""
    bare = name.split("::")[-1].lower()
    for group, names, parts in GROUPS:
        if bare in names or any(p in bare for p in parts):
            return group
    return "other ops"


def named_dropout() -> None:
    """The package's CPU dropout (``runtime.dropout.masked_dropout``: a random draw, a
    compare and a ``where``, none named dropout) inside a ``masked_dropout`` range, so its
    operators count as dropout (its backward is ``_MaskedDropoutBackward``)."""
    original = dropout_module.masked_dropout

    def masked_dropout(x, p, training):
        with torch.profiler.record_function("masked_dropout"):
            return original(x, p, training)

    dropout_module.masked_dropout = masked_dropout


def enclosing_group(event) -> str:
    """The group of an operator, or else that of the nearest operator around it that has one
    (``aten::dropout``'s ``mul`` is dropout, ``aten::linear``'s ``empty`` a matrix product)."""
    while event is not None and not event.name.startswith("part::"):
        group = group_of(event.name)
        if group != "other ops":
            return group
        event = event.cpu_parent
    return "other ops"


@contextmanager
def part(name: str, walls: Dict[str, float], kernel: Dict[str, float]) -> Iterator[None]:
    """Wall seconds, system seconds and minor page faults of a part of the step."""
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    with torch.profiler.record_function(f"part::{name}"):
        yield
    walls[name] = walls.get(name, 0.0) + time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    kernel[f"{name}_system_s"] = after.ru_stime - before.ru_stime
    kernel[f"{name}_minor_faults"] = after.ru_minflt - before.ru_minflt


def with_loss_range(nlp) -> None:
    """Each trainable pipe's ``get_loss`` inside a ``part::loss`` range."""
    for _, proc in nlp.pipeline:
        if hasattr(proc, "get_loss") and getattr(proc, "is_trainable", False):
            def get_loss(*args, original=proc.get_loss, **kwargs):
                with torch.profiler.record_function("part::loss"):
                    return original(*args, **kwargs)
            proc.get_loss = get_loss


def before_update_of(nlp):
    """The config's ``[training.before_update]`` callback, as ``spacy train`` resolves it."""
    section = nlp.config["training"].get("before_update")
    return registry.resolve({"callback": section})["callback"] if section else None


def train_step(nlp, optimizer, batch, step: int, callback, drop: float) -> Dict[str, Any]:
    """One step of spaCy's training loop (``train_while_improving``), its parts timed."""
    walls: Dict[str, float] = {}
    kernel: Dict[str, float] = {}
    losses: Dict[str, float] = {}
    if callback is not None:
        with part("before_update", walls, kernel):
            callback(nlp, {"step": step, "epoch": 0})
    with part("update", walls, kernel):
        nlp.update(batch, drop=drop, losses=losses, sgd=False)
    with part("finish_update", walls, kernel):
        for _, proc in nlp.pipeline:
            if getattr(proc, "is_trainable", False) and proc.model not in (True, False, None):
                proc.finish_update(optimizer)
        optimizer.step_schedules()
    return {"walls": walls, "kernel": kernel, "loss": float(sum(losses.values()))}


def grouped(prof, others: Dict[str, float]) -> Dict[str, float]:
    """Self seconds by group: each event to the innermost ``part::`` range around it; the
    operators of "other ops" by name added to ``others``."""
    totals: Dict[str, float] = {}
    outside = 0.0
    for event in prof.events():
        owner = event
        while owner is not None and not owner.name.startswith("part::"):
            owner = owner.cpu_parent
        seconds = event.self_cpu_time_total / 1e6
        if owner is None:
            outside += seconds
            continue
        where = owner.name[len("part::"):]
        if where == "update":
            key = "Python (update, in no op)" if event is owner else enclosing_group(event)
            if key == "other ops":
                others[event.name] = others.get(event.name, 0.0) + seconds
        else:
            key = {"loss": "loss", "finish_update": "optimizer",
                   "before_update": "release callback"}[where]
        totals[key] = totals.get(key, 0.0) + seconds
    totals["outside any part"] = outside
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_training_arguments(parser)
    parser.add_argument("--warmup", type=int, default=3, help="steps before profiling")
    parser.add_argument("--steps", type=int, default=16, help="profiled steps")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n_steps = args.warmup + args.steps
    pipes = pipes_by_optimizer(args.config, args.train, args.precision, args.encoder,
                               args.words, n_steps, dict(args.overrides))
    named_dropout()
    nlp0 = pipes["thinc"][0]
    start = time.perf_counter()
    prepared = batches(nlp0, args.train, args.words, n_steps)
    preparation = (time.perf_counter() - start) / len(prepared)
    drop = float(nlp0.config["training"]["dropout"])
    callbacks = {}
    for name, (nlp, _, _) in pipes.items():
        with_loss_range(nlp)
        callbacks[name] = before_update_of(nlp)
    results: Dict[str, List[Dict[str, Any]]] = {name: [] for name in pipes}
    others: Dict[str, Dict[str, float]] = {name: {} for name in pipes}
    for step in range(n_steps + 1):
        for name, (nlp, optimizer, data) in pipes.items():
            fix_random_seed(step)  # the same dropout masks in both runs
            if step < args.warmup:
                train_step(nlp, optimizer, data[step], step, callbacks[name], drop)
                continue
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        record_shapes=False) as prof:
                result = train_step(nlp, optimizer, data[step], step, callbacks[name], drop)
            result["groups"] = grouped(prof, others[name])
            result["ops"] = len(prof.events())
            results[name].append(result)
            print(name, step, f"{sum(result['walls'].values()):.2f}s", flush=True)

    rows: List[Dict[str, Any]] = []
    tables: Dict[str, Dict[str, float]] = {}
    for name, steps in results.items():
        per_step: Dict[str, float] = {}
        for result in steps:
            for key, seconds in result["groups"].items():
                per_step[key] = per_step.get(key, 0.0) + seconds / len(steps)
        wall = statistics.mean(sum(r["walls"].values()) for r in steps)
        per_step["example/batch preparation"] = preparation
        tables[name] = {**per_step, "step": wall + preparation}
        rows.append({"optimizer": OPTIMIZERS[name], "steps": len(steps),
                     "step_wall_s_mean": wall, "step_wall_s_median":
                     statistics.median(sum(r["walls"].values()) for r in steps),
                     "groups_s_per_step": per_step, "preparation_s_per_step": preparation,
                     "parts_wall_s": [r["walls"] for r in steps],
                     "parts_kernel": [r["kernel"] for r in steps],
                     "losses": [r["loss"] for r in steps],
                     "ops_per_step": statistics.mean(r["ops"] for r in steps),
                     "other_ops_s_per_step": {n: t / len(steps) for n, t in others[name].items()}})
    kernel = {name: {key: statistics.mean(r["kernel"].get(key, 0.0) for r in steps)
                     for key in steps[0]["kernel"]} for name, steps in results.items()}
    before, after = tables["thinc"], tables["torch"]
    lines = [f"A {args.precision} training step of `{args.config}` as `spacy train` runs it "
             f"(its before_update callback, `nlp.update` with dropout {drop}, finish_update "
             f"with the optimizer), {args.threads} thread(s), the same GENIA batches of about "
             f"{args.words} words for both optimizers in turn; {args.warmup} warm-up steps, then "
             f"{args.steps} steps profiled (torch.profiler, CPU, no shapes). ms a step (mean) "
             "and share of the step.", "",
             "| group | Adam.v1 ms | share | TorchAdam.v1 ms | share |", "|---|---|---|---|---|"]
    for key in [*ORDER, "outside any part"]:
        b, a = before.get(key, 0.0), after.get(key, 0.0)
        lines.append(f"| {key} | {1000 * b:.0f} | {100 * b / before['step']:.1f}% | "
                     f"{1000 * a:.0f} | {100 * a / after['step']:.1f}% |")
    lines.append(f"| **step** | **{1000 * before['step']:.0f}** | 100% | "
                 f"**{1000 * after['step']:.0f}** | 100% |")
    lines += ["", "The kernel's part, a step (mean; `getrusage` around each part):", "",
              "| part | Adam.v1 system ms | minor faults | TorchAdam.v1 system ms | minor faults |",
              "|---|---|---|---|---|"]
    for key in PARTS:
        if f"{key}_system_s" in kernel["thinc"]:
            lines.append(
                f"| {key} | {1000 * kernel['thinc'][f'{key}_system_s']:.0f} | "
                f"{kernel['thinc'][f'{key}_minor_faults']:,.0f} | "
                f"{1000 * kernel['torch'][f'{key}_system_s']:.0f} | "
                f"{kernel['torch'][f'{key}_minor_faults']:,.0f} |")
    top = sorted(others["torch"], key=lambda n: -others["torch"][n])[:12]
    lines += ["", "The largest of the other ops, ms a step:", "",
              "| operator | Adam.v1 | TorchAdam.v1 |", "|---|---|---|",
              *[f"| `{n}` | {1000 * others['thinc'].get(n, 0.0) / args.steps:.0f} | "
                f"{1000 * others['torch'][n] / args.steps:.0f} |" for n in top]]
    lines += ["", f"Operators recorded a step: {rows[0]['ops_per_step']:,.0f} (Adam.v1), "
              f"{rows[1]['ops_per_step']:,.0f} (TorchAdam.v1). Groups: "
              + "; ".join(f"{g}: {', '.join(sorted(n) + [f'*{p}*' for p in parts])}"
                          for g, n, parts in GROUPS)
              + "; loss: every op and the Python of the pipe's `get_loss`; optimizer: the "
              "whole of `finish_update` and `step_schedules`; release callback: the whole of "
              "the config's `before_update`; other ops: the remaining operators in "
              "`nlp.update`, the autograd engine's own included. An operator of no group "
              "counts in the group of the nearest operator around it that has one (the "
              "`mul` inside `aten::dropout` is dropout); the backward's operators run under "
              "the autograd engine, so they count by their own names."]
    write_table(args.out, rows, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
