"""Training memory of the MRC query model against the number of labels.

    python bench/label_memory.py --train ../shared/data/genia/train.jsonl \
        --labels 1 5 18 --steps 10 --out bench/results/memory_cpu_minilm/label_memory_cpu_minilm

For each label count, one process trains ``--steps`` updates of ``--batch`` GENIA sentences
(labels beyond GENIA's five are copies with their own names and the same questions, so every
label costs a full encoder pass) and reports its peak RSS and seconds per update. The model
splits each batch into passes of ``max_rows`` sequences, so peak memory should stay flat while
time grows with the labels.
"""
import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

from benchlib.pipelines import copied_queries


def run_one(args: argparse.Namespace) -> dict:
    import spacy
    import torch
    from spacy.training import Example
    from spacy.util import fix_random_seed

    from spacy_nested_mrc.corpora.jsonl import read_jsonl

    torch.set_num_threads(args.threads)
    fix_random_seed(0)
    queries = copied_queries(args.n_labels)
    labels = list(queries)
    nlp = spacy.blank("en")
    nlp.add_pipe("nested_mrc_ner", config={"model": {"queries": queries,
                                                     "max_rows": args.max_rows}})
    docs = list(read_jsonl(args.train, nlp.vocab, "nested", limit=args.batch * args.steps))
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    for label in labels:
        nlp.get_pipe("nested_mrc_ner").add_label(label)
    # gold spans of labels left out are reported (NMW002) and not learned: expected here
    warnings.filterwarnings("ignore", message=r"\[NMW002\]")
    no_spans = Example(nlp.make_doc("none"), nlp.make_doc("none"))
    optimizer = nlp.initialize(lambda: [no_spans])  # the labels are the ones added above
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    for step in range(args.steps):
        batch = examples[step * args.batch : (step + 1) * args.batch]
        nlp.update(batch, sgd=optimizer)
    seconds = (time.perf_counter() - start) / args.steps
    return {
        "labels": args.n_labels,
        "docs_per_pass": nlp.get_pipe("nested_mrc_ner").model.attrs["docs_per_pass"],
        "seconds_per_update": round(seconds, 2),
        "rss_after_init_mb": round(rss_before),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--labels", type=int, nargs="+", default=[1, 5, 18])
    parser.add_argument("--n-labels", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-rows", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.n_labels:
        print(json.dumps(run_one(args)))
        return
    rows = []
    for n in args.labels:
        command = [sys.executable, __file__, "--train", args.train, "--n-labels", str(n),
                   "--steps", str(args.steps), "--batch", str(args.batch),
                   "--max-rows", str(args.max_rows), "--threads", str(args.threads)]
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    lines = [
        f"MRC training, {args.steps} updates of {args.batch} GENIA train sentences, "
        f"max_rows {args.max_rows}, all-MiniLM-L6-v2, torch threads {args.threads}.",
        "",
        "| labels | docs per pass | s / update | RSS after init MB | peak RSS MB |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['labels']} | {r['docs_per_pass']} | {r['seconds_per_update']} "
                     f"| {r['rss_after_init_mb']} | {r['peak_rss_mb']} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps({"settings": vars(args), "rows": rows},
                                                       indent=2))
        Path(f"{args.out}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
