"""Training time per step of two checkouts of the package, each in processes of its own, on
the same batches: the code before a change against the code after it, as ``spacy train``
steps (the config's ``before_update`` callback, ``nlp.update`` with the config's dropout,
every pipe's ``finish_update`` with the config's optimizer, ``step_schedules``). The runs
alternate (A B B A ...) so a noisy machine slows both alike; a step's time is its median
over the rounds, and each step of a variant is set against the same step of the first.

    python bench/step_across_versions.py --train ../shared/data/genia/train.jsonl \\
        --steps 16 --rounds 4 --threads 1 \\
        --variant "before git:616eb7d configs/locate_label_cpu.cfg \\
                   components.transformer.model.precision=fp32 ..." \\
        --variant "now . configs/locate_label_cpu.cfg" \\
        --out bench/results/step_xeon_cpu_minilm/step_across_versions_locate_label

A variant is "NAME CHECKOUT CONFIG [SECTION.KEY=JSON ...]": CHECKOUT (a folder, or
``git:COMMIT`` for a worktree of this repository at that commit, made under
``bench/work_versions/``) has its package imported (it leads ``PYTHONPATH``) and CONFIG read
from it. The worker (``--worker``) uses spaCy's interfaces only, so checkouts of different
versions run the same loop. Batches: the train
file in its order (``paths.train_limit`` sentences read), cut by the config's batcher; the
words of every batch are recorded, and the checkouts must agree on them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve()
PACKAGE = "spacy_nested_mrc"


def worker(args: argparse.Namespace) -> None:
    """One run: build the config's pipeline with the overrides, initialize it as ``spacy
    train`` does, then time ``args.steps`` + 1 steps (the first warms up); print JSON."""
    import torch
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config, registry, resolve_dot_names

    torch.set_num_threads(args.threads)
    use_checkouts_registrations(Path(args.checkout))
    overrides = dict(json.loads(args.overrides))
    config = load_config(args.config, overrides=overrides, interpolate=False)
    nlp = init_nlp(config)
    resolved = nlp.config.interpolate()
    training = registry.resolve(resolved["training"], schema=ConfigSchemaTraining)
    (corpus,) = resolve_dot_names(resolved, [training["train_corpus"]])
    batches: List[list] = []
    for batch in training["batcher"](corpus(nlp)):
        batches.append(list(batch))
        if len(batches) == args.steps + 1:
            break
    optimizer = training["optimizer"]
    before_update = training["before_update"]
    seconds: List[float] = []
    losses: List[float] = []
    for step, batch in enumerate(batches):
        found: Dict[str, float] = {}
        start = time.perf_counter()
        if before_update is not None:
            before_update(nlp, {"step": step, "epoch": 0})
        nlp.update(batch, drop=training["dropout"], sgd=False, losses=found)
        for _, proc in nlp.pipeline:
            if hasattr(proc, "finish_update"):
                proc.finish_update(optimizer)
        optimizer.step_schedules()
        seconds.append(time.perf_counter() - start)
        losses.append(float(sum(found.values())))
    words = [sum(len(eg.reference) for eg in batch) for batch in batches]
    print(json.dumps({"seconds": seconds[1:], "losses": losses[1:], "words": words[1:]}))


def use_checkouts_registrations(checkout: Path) -> None:
    """Register the functions the checkout's own ``setup.cfg`` names as entry points, and stop
    spaCy's and thinc's registries from loading the installed version's entry points of the
    package, whose targets need not exist in another checkout (other packages' stay)."""
    import configparser
    import importlib

    import catalogue
    import thinc.api
    from spacy.util import registry

    setup = configparser.ConfigParser()
    setup.read(checkout / "setup.cfg")
    for group, lines in setup["options.entry_points"].items():
        owner, _, kind = group.partition("_")
        table = getattr(registry if owner == "spacy" else thinc.api.registry, kind)
        for line in filter(None, (line.strip() for line in lines.splitlines())):
            name, _, target = (part.strip() for part in line.partition("="))
            module, _, attribute = target.partition(":")
            function = getattr(importlib.import_module(module), attribute)
            if kind != "factories":  # a factory registers itself as its module loads
                table.register(name, func=function)
    installed = catalogue.Registry._get_entry_points

    def others(self: catalogue.Registry) -> list:
        return [point for point in installed(self) if not point.value.startswith(PACKAGE)]

    catalogue.Registry._get_entry_points = others  # type: ignore[method-assign]


def checkout_path(spec: str) -> Path:
    """A variant's checkout: a folder, or ``git:COMMIT``, a worktree of this repository at
    COMMIT under ``bench/work_versions/`` (made the first time, then reused)."""
    if not spec.startswith("git:"):
        return Path(spec).resolve()
    commit = spec[len("git:"):]
    path = HERE.parent / "work_versions" / commit
    if not path.exists():
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach",
                        str(path), commit], check=True, capture_output=True)
    return path


def run_variant(variant: Dict[str, Any], args: argparse.Namespace) -> Dict[str, Any]:
    checkout = checkout_path(variant["checkout"])
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]))
    train = str(Path(args.train).resolve())  # the worker runs in the checkout
    overrides = {"paths.train": train, "paths.dev": train,
                 "paths.train_limit": args.sentences, "paths.encoder": args.encoder_path,
                 **variant["overrides"]}
    command = [sys.executable, str(HERE), "--worker", "--checkout", str(checkout), "--config",
               str(checkout / variant["config"]), "--overrides", json.dumps(overrides),
               "--steps", str(args.steps), "--threads", str(args.threads)]
    done = subprocess.run(command, env=env, cwd=checkout, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{variant['name']} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse_variant(text: str) -> Dict[str, Any]:
    from benchlib.training import override

    name, checkout, config, *settings = text.split()
    return {"name": name, "checkout": checkout, "config": config,
            "overrides": dict(map(override, settings))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--checkout", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--overrides", help=argparse.SUPPRESS)
    parser.add_argument("--train")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sentences", type=int, default=600, help="train sentences read")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    sys.path.insert(0, str(HERE.parent))
    from benchlib.machine import machine
    from benchlib.outputs import write_outputs
    from benchlib.training import step_cells, step_times

    from spacy_nested_mrc.encoder.hf import resolve_encoder

    args.encoder_path = resolve_encoder(args.encoder)
    variants = [parse_variant(v) for v in args.variant]
    runs: Dict[str, List[Dict[str, Any]]] = {v["name"]: [] for v in variants}
    for round_ in range(args.rounds):
        order = variants if round_ % 2 == 0 else variants[::-1]
        for variant in order:
            runs[variant["name"]].append(run_variant(variant, args))
            print(f"round {round_ + 1} {variant['name']}: "
                  f"{sum(runs[variant['name']][-1]['seconds']):.1f} s", file=sys.stderr)
    base = variants[0]["name"]
    words = runs[base][0]["words"]
    for name, done in runs.items():
        if any(run["words"] != words for run in done):
            sys.exit(f"{name}'s batches differ from {base}'s: {done[0]['words']} != {words}")
    step_s = {name: [statistics.median(s) for s in zip(*(r["seconds"] for r in done))]
              for name, done in runs.items()}
    rows = []
    for variant in variants:
        name = variant["name"]
        per_round = [sum(r["seconds"]) / sum(b["seconds"])
                     for r, b in zip(runs[name], runs[base])]
        rows.append({
            **variant, **step_times(step_s[name], step_s[base]),
            "over_base_by_round": per_round,
            "mean_loss": statistics.mean(runs[name][0]["losses"]),
        })
    report = {"command": " ".join(sys.argv), "machine": machine(), "words": words,
              "rows": rows, "runs": runs}
    lines = [f"`{report['command']}`", "",
             f"{args.steps} steps of {min(words)}-{max(words)} words (the config's batcher over "
             f"the first {args.sentences} train sentences), after one warm-up step, "
             f"{args.threads} thread(s), each variant in its own process, {args.rounds} rounds "
             "in alternating order. A step's time is its median over the rounds. `over "
             f"{base}`: total over the baseline's; `median step ratio`: the median of the "
             "per-step ratios (quartiles beside it); `by round`: each round's total ratio.", "",
             "| variant | checkout | overrides | s/step (median) | total s | "
             f"over {base} | median step ratio (quartiles) | by round | mean loss |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        settings, times = step_cells(r)
        by_round = " ".join(f"{x:.3f}" for x in r["over_base_by_round"])
        lines.append(f"| {r['name']} | {r['checkout']} | {settings} | {times} | {by_round} | "
                     f"{r['mean_loss']:.3f} |")
    lines += ["", f"Machine: {report['machine']}"]
    write_outputs(args.out, report, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
