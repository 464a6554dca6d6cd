"""Where ``nlp.pipe`` spends its time, by stage: a trained pipeline over GENIA dev sentences under
cProfile, each function's own time (tottime) given to the stage its code belongs to. Each
pipeline is profiled as configured (the encoder runs windows by length) and with
``max_pass_tokens = 0`` (one encoder call a pass, as before).

    python bench/pipe_profile.py --dev ../shared/data/genia/dev.jsonl \\
        --pipelines mrc_packed=PATH locate_label=PATH \\
        --out bench/results/speed_cpu_minilm/pipe_profile_cpu_minilm
"""

import argparse
import cProfile
import pstats
from typing import Dict, List, Tuple

import spacy
import torch
from benchlib.configs import budget_key, load_overrides
from benchlib.data import read_texts
from benchlib.outputs import write_table
from benchlib.pipelines import add_pipeline_arguments

# (stage, substrings of a function's file or name), first match wins
STAGES: List[Tuple[str, Tuple[str, ...]]] = [
    ("spaCy tokenizer", ("tokenizer.pyx", "spacy/tokenizer", "make_doc")),
    ("wordpiece tokenizer", ("tokenization_utils", "tokenizers/", "transformers/tokenization")),
    ("encoder (torch)", ("torch/nn/", "transformers/", "torch/_")),
    ("heads", ("torch_module.py", "layers.py")),
    ("decoding", ("decode.py", "spans.py")),
    ("windows and rows", ("rows.py", "layout.py", "span_getters.py", "spacy_transformers/",
                          "passes.py", "encoder/hf.py")),
    ("span groups and scores", ("component.py", "spacy/tokens/span_group", "calibration.py")),
]


def stage_of(filename: str, function: str) -> str:
    where = f"{filename} {function}"
    for stage, needles in STAGES:
        if any(needle in where for needle in needles):
            return stage
    return "other (Python, thinc, numpy)"


def profile(nlp, texts: List[str], batch_size: int) -> Tuple[float, Dict[str, float]]:
    profiler = cProfile.Profile()
    profiler.enable()
    list(nlp.pipe(texts, batch_size=batch_size))
    profiler.disable()
    stats = pstats.Stats(profiler)
    by_stage: Dict[str, float] = {}

    def add(stage: str, seconds: float) -> None:
        by_stage[stage] = by_stage.get(stage, 0.0) + seconds

    for (filename, _, function), (_, _, own, _, callers) in stats.stats.items():
        if filename != "~" or not callers:
            add(stage_of(filename, function), own)
            continue
        # a built-in (a torch op, a tokenizer call) counts where its caller's code is
        for (caller_file, _, caller_function), timing in callers.items():
            add(stage_of(caller_file, caller_function), timing[2])
    return sum(by_stage.values()), by_stage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pipeline_arguments(parser)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = read_texts(args.dev, args.sentences)
    rows = []
    for item in args.pipelines:
        name, path = item.split("=", 1)
        overrides = load_overrides(args.set, name)
        for variant, budget in (("by length", {}), ("one call a pass", {budget_key(path): 0})):
            nlp = spacy.load(path, config={**overrides, **budget})
            list(nlp.pipe(texts[:64], batch_size=args.batch_size))  # warm-up
            total, by_stage = profile(nlp, texts, args.batch_size)
            rows.append({"pipeline": name, "variant": variant, "seconds": total,
                         "stages": by_stage})
    stages = [stage for stage, _ in STAGES] + ["other (Python, thinc, numpy)"]
    lines = [
        f"# nlp.pipe by stage: {len(texts)} GENIA dev sentences, batches of "
        f"{args.batch_size}, {args.threads} torch threads (cProfile: each function's own "
        "time, a built-in's in its caller's stage)",
        "",
        "| pipeline | variant | total s | " + " | ".join(stages) + " |",
        "|---|---|---|" + "---|" * len(stages),
    ]
    for row in rows:
        shares = [f"{100 * row['stages'].get(stage, 0.0) / row['seconds']:.1f}%"
                  for stage in stages]
        lines.append(f"| {row['pipeline']} | {row['variant']} | {row['seconds']:.1f} | "
                     + " | ".join(shares) + " |")
    lines += ["", "Profiling slows the Python parts more than torch's kernels: read the shares "
              "as where time goes, not as speeds (bench/encoder_floor.py times the pipelines)."]
    write_table(args.out, rows, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
