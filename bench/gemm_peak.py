"""How much faster bf16 can make a matrix product on this CPU: the ceiling of every bf16
speed-up the precision issue (#38) asks for.

CPUs with ``avx512_bf16`` and no AMX (these machines: the flags are recorded) multiply bf16
with one instruction (``vdpbf16ps``) that does two multiply-adds per 32-bit lane where fp32's
fused multiply-add does one, so a product bound by arithmetic can run at most about 2x its
fp32 self. This study times, interleaved in one process (the minimum of ``--repeats``):

- ``torch.mm`` in fp32 and in bf16 (inputs already bf16) and fp32 inputs under bf16 autocast
  (the cast included, as the pipes run it), on the shapes of all-MiniLM-L6-v2 and
  all-mpnet-base-v2 at 1,024 wordpieces a pass and on a large square product;
- the bare encoder's forward and backward over a batch of random wordpieces (the issue's
  "32 x 48" measurement), fp32 against bf16 autocast.

    python bench/gemm_peak.py --threads 1 --out bench/results/precision_cpu_minilm/gemm_peak
"""
import argparse
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import torch
from benchlib.outputs import write_table
from benchlib.speed import interleaved

from spacy_nested_mrc.encoder.hf import resolve_encoder

# (name, rows, inner, columns): rows are wordpieces in one encoder pass
SHAPES: List[Tuple[str, int, int, int]] = [
    ("MiniLM attention projection", 1024, 384, 384),
    ("MiniLM feed-forward in", 1024, 384, 1536),
    ("MiniLM feed-forward out", 1024, 1536, 384),
    ("mpnet attention projection", 1024, 768, 768),
    ("mpnet feed-forward in", 1024, 768, 3072),
    ("square", 2048, 2048, 2048),
]


def cpu_flags() -> List[str]:
    """The CPU's bf16, AMX and AVX-512 foundation flags, from /proc/cpuinfo."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        return []
    found = set(re.findall(r"\b(avx512_bf16|avx512f|amx_\w+)\b", info.read_text()))
    return sorted(found)


def product_runs(rows: int, inner: int, columns: int, calls: int
                 ) -> Dict[str, Callable[[], Any]]:
    """``calls`` products of (rows, inner) x (inner, columns) in each precision."""
    a = torch.randn(rows, inner)
    b = torch.randn(inner, columns)
    a16, b16 = a.bfloat16(), b.bfloat16()

    def fp32() -> None:
        for _ in range(calls):
            torch.mm(a, b)

    def bf16() -> None:
        for _ in range(calls):
            torch.mm(a16, b16)

    def autocast() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for _ in range(calls):
                torch.mm(a, b)

    return {"fp32": fp32, "bf16": bf16, "bf16 autocast": autocast}


def encoder_runs(name: str, batch: int, length: int) -> Dict[str, Callable[[], Any]]:
    """Forward and backward of the encoder over (batch, length) random wordpieces."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(resolve_encoder(name)).train()
    torch.manual_seed(0)
    ids = torch.randint(1000, model.config.vocab_size, (batch, length))
    mask = torch.ones_like(ids)

    def step(enabled: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled):
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        hidden.float().pow(2).mean().backward()
        model.zero_grad(set_to_none=True)

    return {"fp32": lambda: step(False), "bf16 autocast": lambda: step(True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="products a timed run")
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=48)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    flags = cpu_flags()
    lines = [f"# bf16 against fp32 matrix products, {args.threads} thread(s)", "",
             f"CPU flags: {', '.join(flags) or 'unknown'}; "
             f"`torch.ops.mkldnn._is_mkldnn_bf16_supported()`: "
             f"{torch.ops.mkldnn._is_mkldnn_bf16_supported()}", "",
             f"Minimum of {args.repeats} interleaved runs of {args.calls} products each.", "",
             "| shape (rows x inner x columns) | fp32 GFLOP/s | bf16 GFLOP/s | bf16 autocast "
             "GFLOP/s | bf16 / fp32 speed-up | autocast / fp32 |",
             "|---|---|---|---|---|---|"]
    products = []
    for label, rows, inner, columns in SHAPES:
        seconds = interleaved(product_runs(rows, inner, columns, args.calls), args.repeats)
        flop = 2.0 * rows * inner * columns * args.calls
        rate = {k: flop / min(v) / 1e9 for k, v in seconds.items()}
        products.append({"shape": label, "rows": rows, "inner": inner, "columns": columns,
                         "gflops": rate, "seconds": seconds})
        lines.append(f"| {label} ({rows} x {inner} x {columns}) | {rate['fp32']:.1f} | "
                     f"{rate['bf16']:.1f} | {rate['bf16 autocast']:.1f} | "
                     f"{rate['bf16'] / rate['fp32']:.2f}x | "
                     f"{rate['bf16 autocast'] / rate['fp32']:.2f}x |")
    seconds = interleaved(encoder_runs(args.encoder, args.batch, args.length), args.repeats)
    best = {k: min(v) for k, v in seconds.items()}
    lines += ["", f"{args.encoder}, forward and backward of {args.batch} x {args.length} "
              f"wordpieces: fp32 {best['fp32']:.3f} s, bf16 autocast "
              f"{best['bf16 autocast']:.3f} s ({best['fp32'] / best['bf16 autocast']:.2f}x)"]
    encoder = {"encoder": args.encoder, "batch": args.batch, "length": args.length,
               "seconds": seconds, "flags": flags}
    write_table(args.out, [*products, encoder], lines)


if __name__ == "__main__":
    main()
