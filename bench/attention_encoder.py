"""The bare encoder's training step (forward and backward, bf16 autocast) and prediction with
each attention implementation, interleaved in one process: Hugging Face's eager attention
against torch's scaled_dot_product_attention (sdpa), with the encoder's attention dropout on
and off (its hidden dropout stays on), one thread.

    python bench/attention_encoder.py --rows 24 --length 120 --repeats 5 \\
        --out bench/results/attention_cpu_minilm/attention_encoder
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers
from benchlib.machine import machine

from spacy_nested_mrc.encoder.hf import resolve_encoder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--rows", type=int, default=24)
    parser.add_argument("--length", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    path = resolve_encoder(args.encoder)
    variants = {}
    for implementation in ("sdpa", "eager"):
        for attention_dropout in (0.1, 0.0):
            config = transformers.AutoConfig.from_pretrained(
                path, hidden_dropout_prob=0.1, attention_probs_dropout_prob=attention_dropout)
            model = transformers.AutoModel.from_pretrained(
                path, config=config, attn_implementation=implementation)
            variants[f"{implementation}, attention dropout {attention_dropout}"] = model
    torch.manual_seed(0)
    ids = torch.randint(1000, 20000, (args.rows, args.length))
    mask = torch.ones_like(ids)
    mask[: args.rows // 2, 2 * args.length // 3 :] = 0  # half the rows shorter

    def train_step(model) -> None:
        model.train()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        hidden.float().sum().backward()

    def predict(model) -> None:
        model.eval()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            model(input_ids=ids, attention_mask=mask)

    rows = []
    for task in (train_step, predict):
        seconds = {name: [] for name in variants}
        for model in variants.values():
            task(model)  # warm-up
        for _ in range(args.repeats):
            for name, model in variants.items():
                start = time.perf_counter()
                task(model)
                seconds[name].append(time.perf_counter() - start)
        base = statistics.median(seconds["sdpa, attention dropout 0.1"])
        for name, times in seconds.items():
            rows.append({"task": task.__name__, "variant": name,
                         "median_ms": 1000 * statistics.median(times),
                         "over_sdpa_with_dropout": statistics.median(times) / base})
    lines = [f"`{' '.join(sys.argv)}`", "",
             f"{args.rows} rows of {args.length} wordpieces (half of them {2 * args.length // 3}), "
             f"bf16 autocast, {args.threads} thread(s), {args.repeats} interleaved repeats after "
             "a warm-up; hidden dropout 0.1 in training. Prediction runs without dropout "
             "(both dropout rows are the same model there).", "",
             "| task | variant | median ms | over sdpa with attention dropout |",
             "|---|---|---|---|",
             *[f"| {r['task']} | {r['variant']} | {r['median_ms']:.0f} | "
               f"{r['over_sdpa_with_dropout']:.2f} |" for r in rows], "",
             f"Machine: {machine()}"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"command": " ".join(sys.argv),
                                                    "machine": machine(), "rows": rows},
                                                   indent=1) + "\n")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
