"""How much of a Locate-and-Label training step its heads take, and how many seed spans they
score per token: the measure of a change to the heads alone (their first layer by parts in
training, as prediction's filter takes it, saves work in proportion to seed spans per token).

Each step is ``nlp.update`` as ``spacy train`` runs it (the config's dropout, its optimizer);
the heads' inputs of the step are kept, and after it the heads' forward, loss and backward
are timed again on them alone (the token vectors detached, so nothing of the encoder), in the
same process and thread.

    python bench/heads_share.py configs/locate_label_cpu.cfg \\
        --train ../shared/data/genia/train.jsonl --steps 12 --threads 1 \\
        --set training.optimizer.@optimizers=spacy-nested-mrc.TorchAdam.v1 \\
        --set components.transformer.model.freeze_word_embeddings=true \\
        --out bench/results/step_amd_bf16_cpu_minilm/heads_share_locate_label
"""
import argparse
import statistics
import time
from typing import Any, Dict, List

import torch
from benchlib.outputs import write_table
from benchlib.training import add_training_arguments, batches, build
from spacy.util import fix_random_seed

from spacy_nested_mrc.models.locate_label.torch_module import LocateLabelHeads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_training_arguments(parser)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--drop", type=float, default=0.1, help="spacy train's dropout")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    nlp = build(args.config, args.train, args.precision, args.encoder, dict(args.overrides))
    data = batches(nlp, args.train, args.words, args.steps)
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: [eg for batch in data for eg in batch])
    kept: List[Dict[str, Any]] = []
    forward = LocateLabelHeads.forward

    def keeping(self, tokens, *rest, **named):
        if self.training:
            kept.append({"heads": self, "tokens": [t.detach() for t in tokens],
                         "rest": rest, "named": named})
        return forward(self, tokens, *rest, **named)

    LocateLabelHeads.forward = keeping
    rows = []
    for i, batch in enumerate(data):
        kept.clear()
        start = time.perf_counter()
        nlp.update(batch, sgd=optimizer, drop=args.drop)
        step = time.perf_counter() - start
        assert len(kept) == 1, "one training pass of the heads a step"
        call = kept[0]
        tokens = [t.clone().requires_grad_(True) for t in call["tokens"]]
        autocast = torch.autocast("cpu", dtype=torch.bfloat16,
                                  enabled=args.precision == "bf16")
        start = time.perf_counter()
        with autocast:
            scored = forward(call["heads"], tokens, *call["rest"], **call["named"])
            loss = call["heads"].loss_of(scored)
        loss.backward()
        heads = time.perf_counter() - start
        call["heads"].zero_grad(set_to_none=True)
        if i == 0:  # warm-up
            continue
        n_tokens = sum(len(t) for t in tokens)
        n_seeds = len(call["rest"][0] if call["rest"] else call["named"]["seed_doc"])
        rows.append({"step_s": step, "heads_s": heads, "tokens": n_tokens, "seeds": n_seeds,
                     "classified": int(scored.scores[2].shape[0])})
    LocateLabelHeads.forward = forward
    share = [r["heads_s"] / r["step_s"] for r in rows]
    per_token = [r["seeds"] / r["tokens"] for r in rows]
    lines = [
        f"# Locate-and-Label's heads in a training step ({args.precision}, {args.threads} "
        f"thread(s), batches of about {args.words} words, {len(rows)} steps after one)",
        "",
        "| step | tokens | seed spans | spans classified | seeds per token | step ms | "
        "heads fwd+bwd ms | heads' share |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {i + 1} | {r['tokens']} | {r['seeds']} | {r['classified']} | "
          f"{r['seeds'] / r['tokens']:.2f} | {1000 * r['step_s']:.0f} | "
          f"{1000 * r['heads_s']:.0f} | {r['heads_s'] / r['step_s']:.1%} |"
          for i, r in enumerate(rows)),
        "",
        f"Median: {statistics.median(per_token):.2f} seed spans a token, the heads "
        f"{statistics.median(share):.1%} of a step (forward, loss and backward timed again "
        "alone on the step's detached token vectors; the step includes the optimizer).",
    ]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
