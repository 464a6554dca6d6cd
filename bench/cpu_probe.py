"""What this CPU offers bf16, before any bf16 figure is read: its vector flags, oneDNN's own
check (``runtime.precision.cpu_has_bf16``: where it is false, ``precision = "bf16"`` and
``"auto"`` train and predict in fp32), and one MiniLM-sized matrix product timed in fp32 and
in bf16 on one thread.

    python bench/cpu_probe.py > bench/results/FOLDER/cpu_probe.txt
"""
import platform
import re
import time
from pathlib import Path

import torch

from spacy_nested_mrc.runtime.precision import cpu_has_bf16

ROWS, INNER, COLUMNS = 512, 384, 1536  # a MiniLM feed-forward product over 512 wordpieces


def main() -> None:
    torch.set_num_threads(1)
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"model name\s*:\s*(.*)", info)
    print("cpu:", model.group(1) if model else platform.processor())
    print("flags:", " ".join(sorted(set(re.findall(r"\b(avx\w*|amx\w*)\b", info)))))
    print("oneDNN bf16 (cpu_has_bf16):", cpu_has_bf16())
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(ROWS, INNER, dtype=dtype)
        b = torch.randn(INNER, COLUMNS, dtype=dtype)
        for _ in range(3):
            a @ b
        start, repeats = time.perf_counter(), 20
        for _ in range(repeats):
            a @ b
        seconds = (time.perf_counter() - start) / repeats
        gflops = 2 * ROWS * INNER * COLUMNS / seconds / 1e9
        print(f"{dtype}: {ROWS}x{INNER} @ {INNER}x{COLUMNS}, one thread: "
              f"{seconds * 1e3:.2f} ms, {gflops:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
