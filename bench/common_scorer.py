"""Every pipeline's dev predictions through ``spacy evaluate``'s protocol, scored by both span
scorers: ours (``spacy-nested-mrc.nested_scorer.v1``, exact characters: a predicted span that
does not fit the gold tokens is a false positive) and spaCy's ``spacy.spancat_scorer.v1``
(``Scorer.score_spans``: such a span is dropped before counting).

``spacy evaluate`` scores each pipeline with its own component's scorer, so its F1 of spancat
and of ``nested_mrc_ner`` come from different rules. This script predicts once per pipeline
(the dev DocBin read by ``spacy.Corpus.v1`` as the CLI reads it: the text through the
pipeline's tokenizer) and applies both rules to the same predictions.

    python bench/common_scorer.py --dev bench/work_full/dev.spacy \
        --pipelines mrc=bench/work_full/mrc_packed_lr2e4_tuned/model-last \
        spancat=bench/work_full/spancat_hy3/model-last \
        --spans-key nested --out bench/results/accuracy_genia_cpu_minilm/common_scorer_cpu_minilm
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

from benchlib.machine import machine
from benchlib.scoring import score_pipeline


def table(results: Dict[str, Dict[str, Any]], dev: str) -> str:
    lines = [
        f"Dev predictions through `spacy evaluate`'s protocol (`{dev}` read by `spacy.Corpus.v1`:"
        " the text through each pipeline's tokenizer), scored by both span scorers.",
        "`ours`: exact characters, a predicted span that does not fit the gold tokens counts as"
        " a false positive; `spaCy`: `spacy.spancat_scorer.v1` (`Scorer.score_spans`), which"
        " drops such spans before counting. `spacy evaluate` applies each component's own"
        " scorer: `ours` to nested_mrc_ner, `spaCy` to spancat.",
        "",
        "| pipeline | P ours | R ours | F1 ours | P spaCy | R spaCy | F1 spaCy | predicted spans"
        " | not aligned to gold tokens |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        o, s = r["ours"], r["spacy"]
        lines.append(
            f"| {name} | {o['p']:.1f} | {o['r']:.1f} | {o['f']:.1f} | {s['p']:.1f} | "
            f"{s['r']:.1f} | {s['f']:.1f} | {r['predicted_spans']} | {r['unaligned_spans']} |"
        )
    return "\n".join(lines + ["", f"Machine: {machine()}", ""])


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", required=True, help="dev set as a DocBin (.spacy)")
    parser.add_argument("--pipelines", nargs="+", required=True, help="NAME=PATH ...")
    parser.add_argument("--spans-key", default="nested")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    results = {}
    for item in args.pipelines:
        name, _, path = item.partition("=")
        results[name] = score_pipeline(path, args.dev, args.spans_key, args.batch_size)
        print(name, json.dumps(results[name]), flush=True)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(
        {"dev": args.dev, "machine": machine(), "pipelines": dict(p.partition("=")[::2]
                                                                  for p in args.pipelines),
         "results": results}, indent=2))
    out.with_suffix(".md").write_text(table(results, args.dev))


if __name__ == "__main__":
    main(sys.argv[1:])
