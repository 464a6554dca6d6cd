"""The memory of the data itself in `spacy train`: the resident size that the training
examples add when held in a list, as spaCy's training loop holds them (``list(corpus(nlp))``
in ``create_train_batches``), with the alignments that training computes; each size in a
fresh process.

    python bench/corpus_memory.py --train ../shared/data/genia/train.jsonl \\
        --sizes 1500 5000 15023 --out bench/results/memory_cpu_minilm/corpus_memory_genia
"""
import argparse
import gc
import json
import os
import subprocess
import sys

from benchlib.configs import CONFIGS
from benchlib.memory import rss_mb
from benchlib.outputs import write_table


def one_size(train: str, config_name: str, size: int) -> dict:
    from spacy import util
    from spacy.util import load_config, registry

    overrides = {"paths.train": train, "paths.dev": train, "paths.train_limit": size}
    config = load_config(CONFIGS[config_name], overrides=overrides, interpolate=True)
    nlp = util.load_model_from_config(config, auto_fill=True)
    reader = registry.resolve({"reader": config["corpora"]["train"]})["reader"]
    key = config["corpora"]["train"]["spans_key"]
    gc.collect()
    before = rss_mb(os.getpid())
    examples = list(reader(nlp))
    listed = rss_mb(os.getpid())
    for eg in examples:  # the alignment training computes (and the example caches)
        eg.get_aligned_spans_y2x(eg.reference.spans[key], allow_overlap=True)
    aligned = rss_mb(os.getpid())
    return {"config": config_name, "sentences": len(examples),
            "examples_mb": round(listed - before), "with_alignment_mb": round(aligned - before)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--config", default="mrc_packed")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1500, 5000, 15023])
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)  # one size, in a child
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.size:
        print(json.dumps(one_size(args.train, args.config, args.size)))
        return
    rows = []
    for size in args.sizes:
        done = subprocess.run([sys.executable, __file__, "--train", args.train, "--config",
                               args.config, "--size", str(size)],
                              capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    lines = ["Resident size of the training examples held in a list, as `spacy train` holds "
             f"them ({args.config} config's reader and tokenizer), each size in a fresh "
             "process:", "", "| sentences | examples MB | with alignments MB | KB a sentence |",
             "|---|---|---|---|"]
    for r in rows:
        per = r["with_alignment_mb"] * 1024 / max(1, r["sentences"])
        lines.append(f"| {r['sentences']} | {r['examples_mb']} | {r['with_alignment_mb']} | "
                     f"{per:.1f} |")
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
