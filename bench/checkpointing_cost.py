"""What gradient checkpointing costs in training time: two pipelines of one shipped config,
initialized alike, one with ``gradient_checkpointing = true``, take turns on the same GENIA
batches in one process (so machine noise hits both alike); the time of each ``nlp.update``
is kept, the first steps are left out as warm-up.

    python bench/checkpointing_cost.py --train ../shared/data/genia/train.jsonl \
        --config mrc --steps 40 \
        --out bench/results/speed_cpu_minilm/checkpointing_cost_cpu_minilm_mrc

Peak memory is not measured here (one process holds both pipelines): ``train_memory.py
--set components.nested_mrc_ner.model.encoder.gradient_checkpointing=true`` does that.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from benchlib.configs import CONFIGS
from benchlib.machine import machine


def build(config_name: str, train: str, limit: int, checkpointing: bool):
    """The shipped config's pipeline, initialized on the first ``limit`` train sentences."""
    from spacy.training.initialize import init_nlp
    from spacy.util import fix_random_seed, load_config

    overrides = {"paths.train": train, "paths.dev": train, "paths.train_limit": limit}
    config = load_config(CONFIGS[config_name], overrides=overrides, interpolate=False)
    # the encoder's setting: a shared transformer's, Locate-and-Label's own transformer's, else
    # the model's (the MRC family's encoder block)
    if "transformer" in config["components"]:
        encoder = config["components"]["transformer"]["model"]
    else:
        model = config["components"]["nested_mrc_ner"]["model"]
        encoder = model["tok2vec"]["transformer"] if "tok2vec" in model else model
    encoder["gradient_checkpointing"] = checkpointing
    fix_random_seed(0)
    return init_nlp(config, use_gpu=-1), config.interpolate()


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--config", default="mrc", choices=sorted(CONFIGS))
    parser.add_argument("--limit", type=int, default=1500, help="training sentences read")
    parser.add_argument("--steps", type=int, default=40, help="updates of each pipeline")
    parser.add_argument("--warmup", type=int, default=3, help="first steps left out")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import torch
    from spacy.util import registry, resolve_dot_names

    from spacy_nested_mrc.encoder.hf import hf_transformers

    torch.set_num_threads(args.threads)
    pipelines = {flag: build(args.config, args.train, args.limit, flag) for flag in (False, True)}
    nlp, config = pipelines[False]
    training = registry.resolve(config["training"], validate=False)
    (corpus,) = resolve_dot_names(config, ["corpora.train"])
    batches = list(training["batcher"](corpus(nlp)))[: args.steps]
    optimizers = {flag: pipelines[flag][0].resume_training() for flag in pipelines}
    seconds: Dict[bool, List[float]] = {False: [], True: []}
    for step, batch in enumerate(batches):
        for flag in (False, True) if step % 2 == 0 else (True, False):
            pipe_nlp = pipelines[flag][0]
            start = time.perf_counter()
            pipe_nlp.update(batch, sgd=optimizers[flag], drop=0.1)
            if step >= args.warmup:
                seconds[flag].append(time.perf_counter() - start)
    for flag, (pipe_nlp, _) in pipelines.items():  # each trained as asked
        models = [pipe.model for _, pipe in pipe_nlp.pipeline if hasattr(pipe, "model")]
        assert all(t.is_gradient_checkpointing == flag
                   for model in models for t in hf_transformers(model))
    total = {flag: sum(times) for flag, times in seconds.items()}
    result: Dict[str, Any] = {
        "config": args.config,
        "steps_timed": len(seconds[False]),
        "seconds_without": round(total[False], 2),
        "seconds_with": round(total[True], 2),
        "ratio_with_to_without": round(total[True] / total[False], 3),
        "median_step_ratio": round(statistics.median(
            b / a for a, b in zip(seconds[False], seconds[True])), 3),
        "settings": vars(args),
        "machine": machine(),
    }
    print(json.dumps(result))
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2))
    out.with_suffix(".md").write_text(
        f"Training time with and without gradient checkpointing, `{args.config}` config, "
        f"{result['steps_timed']} updates each on the same GENIA batches, taking turns in one "
        f"process (first {args.warmup} left out):\n\n"
        "| without s | with s | with / without | median step ratio |\n|---|---|---|---|\n"
        f"| {result['seconds_without']} | {result['seconds_with']} | "
        f"{result['ratio_with_to_without']} | {result['median_step_ratio']} |\n\n"
        f"Machine: {result['machine']}\n"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
