"""thinc's Adam.v1 against spacy-nested-mrc.TorchAdam.v1 (the same arithmetic, every torch
parameter stepped at once) on a shipped CPU config, in one process, interleaved:

- the optimizer step alone: the pipe's gradients of one GENIA batch, set again before each
  step, then ``finish_update`` with each optimizer in turn; also TorchAdam without the word
  embeddings' gradient (what updating only a batch's rows, or freezing them, could save at
  most);
- whole training steps: the config built twice from the same seed in one precision, its
  ``[training.optimizer]`` as written (Adam.v1) and with the name swapped, each updated on the
  same GENIA train batches in turn, as ``spacy train`` batches them. The losses and the
  parameters at the end tell whether the two trained alike.

    python bench/optimizer_step.py configs/mrc_packed_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --steps 30 --repeats 20 --threads 1 \\
        --out bench/results/optimizer_cpu_minilm/optimizer_step_mrc_packed
"""
import argparse
import statistics
import sys
import time
from typing import Any, Dict, List

import numpy as np
import torch
from benchlib.outputs import write_table
from benchlib.speed import timed
from benchlib.training import OPTIMIZERS, add_training_arguments, pipes_by_optimizer
from spacy.util import fix_random_seed


def trained_pipes(args) -> Dict[str, Any]:
    """Per optimizer: the config's pipeline, its optimizer (as ``nlp.initialize`` makes it
    from ``[training.optimizer]``) and the batches."""
    return pipes_by_optimizer(args.config, args.train, args.precision, args.encoder,
                              args.words, args.steps, dict(args.overrides))


def torch_parameters(nlp, ending: str = "") -> List[torch.nn.Parameter]:
    """The torch parameters of the pipeline's models (those whose name ends with
    ``ending``: ``word_embeddings.weight``, the encoders' word-embedding matrices)."""
    found = {id(p): p for _, proc in nlp.pipeline if hasattr(proc, "model")
             for node in proc.model.walk() for shim in node.shims
             for name, p in shim._model.named_parameters() if name.endswith(ending)}
    return list(found.values())


def gradients(nlp, batch) -> None:
    """The gradients of one batch, as ``nlp.update`` makes them, without a step."""
    for _, proc in nlp.pipeline:
        if getattr(proc, "is_trainable", False):
            proc.update(batch, sgd=None, drop=0.1, losses={})


def step_alone(pipes: Dict[str, Any], repeats: int) -> Dict[str, List[float]]:
    """Seconds of ``finish_update`` alone, each optimizer on its own pipeline, from the same
    gradients (one batch's, computed once on each and set again before each step)."""
    runs, saved = {}, {}
    for name, (nlp, optimizer, data) in pipes.items():
        gradients(nlp, data[0])
        params = torch_parameters(nlp)
        saved[name] = [(p, p.grad.clone()) for p in params if p.grad is not None]

        def step(nlp=nlp, optimizer=optimizer, name=name, skip=()):
            for param, grad in saved[name]:
                param.grad = None if any(param is s for s in skip) else grad.clone()
            procs = [proc for _, proc in nlp.pipeline if hasattr(proc, "finish_update")
                     and getattr(proc, "is_trainable", False)]
            return lambda: [proc.finish_update(optimizer) for proc in procs]

        runs[name] = step
        if name == "torch":
            embeddings = torch_parameters(nlp, "word_embeddings.weight")
            runs["torch_no_word_embeddings"] = lambda step=step, e=embeddings: step(skip=e)
    seconds: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(repeats + 1):
        for name, prepare in runs.items():
            seconds[name].append(timed(prepare()))
    return {name: times[1:] for name, times in seconds.items()}


def training_steps(pipes: Dict[str, Any], steps: int) -> Dict[str, Any]:
    """Seconds and losses of ``nlp.update`` (with its optimizer step) per step, in turn."""
    seconds: Dict[str, List[float]] = {name: [] for name in pipes}
    losses: Dict[str, List[float]] = {name: [] for name in pipes}
    for step in range(steps + 1):
        for name, (nlp, optimizer, data) in pipes.items():
            fix_random_seed(step)  # the same dropout masks in both runs
            start = time.perf_counter()
            result = nlp.update(data[step], sgd=optimizer, drop=0.1)
            took = time.perf_counter() - start
            optimizer.step_schedules()
            if step:  # the first warms up
                seconds[name].append(took)
                losses[name].append(float(sum(result.values())))
    return {"seconds": seconds, "losses": losses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_training_arguments(parser)
    parser.add_argument("--steps", type=int, default=30, help="training steps, timed")
    parser.add_argument("--repeats", type=int, default=20, help="optimizer steps alone")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pipes = trained_pipes(args)
    alone = step_alone(pipes, args.repeats)
    # the step alone moved the weights: build again, so both train from the same start
    pipes = trained_pipes(args)
    trained = training_steps(pipes, args.steps)
    params = [torch_parameters(pipes[name][0]) for name in OPTIMIZERS]
    gap = max(float((a - b).detach().abs().max()) for a, b in zip(*params))
    moved = max(float(p.detach().abs().max()) for p in params[0])
    n_params = sum(p.numel() for p in params[0])

    rows: List[Dict[str, Any]] = []
    base = statistics.median(alone["thinc"])
    for name, times in alone.items():
        rows.append({"part": "optimizer step", "optimizer": name, "repeats": len(times),
                     "median_ms": 1000 * statistics.median(times),
                     "min_ms": 1000 * min(times),
                     "over_thinc": statistics.median(times) / base})
    base_steps = trained["seconds"]["thinc"]
    for name, times in trained["seconds"].items():
        ratios = [t / b for t, b in zip(times, base_steps)]
        rows.append({"part": f"{args.precision} training step", "optimizer": name,
                     "repeats": len(times), "median_ms": 1000 * statistics.median(times),
                     "min_ms": 1000 * min(times),
                     "over_thinc": sum(times) / sum(base_steps),
                     "median_step_ratio": statistics.median(ratios),
                     "mean_loss": statistics.mean(trained["losses"][name])})
    loss_gap = max(abs(a - b) / max(abs(a), 1e-9) for a, b in
                   zip(trained["losses"]["thinc"], trained["losses"]["torch"]))
    lines = [
        f"{type(pipes['thinc'][1]).__name__} (Adam.v1) against "
        f"{type(pipes['torch'][1]).__name__} (TorchAdam.v1) on `{args.config}`: "
        f"{n_params / 1e6:.1f}M torch parameters, {args.threads} thread(s).", "",
        f"Optimizer step alone: {args.repeats} interleaved repeats from one batch's gradients."
        f" Training steps: {args.steps} batches of about {args.words} words in "
        f"{args.precision}, each optimizer's pipeline in turn, after one warm-up step; "
        "`over thinc` is the total time over thinc's, `median step ratio` the median of the "
        "per-step ratios.", "",
        "| part | optimizer | repeats | median ms | min ms | over thinc | median step ratio "
        "| mean loss |", "|---|---|---|---|---|---|---|---|",
        *[f"| {r['part']} | {r['optimizer']} | {r['repeats']} | {r['median_ms']:.1f} | "
          f"{r['min_ms']:.1f} | {r['over_thinc']:.3f} | "
          f"{r.get('median_step_ratio', float('nan')):.3f} | "
          f"{r.get('mean_loss', float('nan')):.3f} |" for r in rows], "",
        f"Trained alike: the largest relative gap between the two runs' losses at a step "
        f"{loss_gap:.2e}; the largest parameter gap at the end {gap:.2e} (parameters up to "
        f"{moved:.2f}).",
    ]
    rows.append({"part": "agreement", "loss_relative_gap_max": loss_gap,
                 "parameter_gap_max": gap, "parameter_abs_max": moved,
                 "losses": trained["losses"], "step_seconds": trained["seconds"],
                 "alone_seconds": alone, "torch_parameters": n_params})
    write_table(args.out, rows, lines)
    return 0 if np.isfinite(gap) else 1


if __name__ == "__main__":
    sys.exit(main())
