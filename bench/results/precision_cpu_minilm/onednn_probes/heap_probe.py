"""The resident size and glibc's heap (``mallinfo2``: its arena, the part in use, the free
part, the memory maps) every 5 of 45 training steps of the shipped packed MRC config
(all-MiniLM-L6-v2, about 400 GENIA words a step, one thread), the C heap's free memory given
back before each step as the config does. Run from the repository root:

    OMP_NUM_THREADS=1 python bench/results/precision_cpu_minilm/onednn_probes/heap_probe.py \\
        PRECISION ONEDNN_CAPACITY MMAP_THRESHOLD [LRU_CAPACITY]

ONEDNN_CAPACITY bounds oneDNN's primitive cache; LRU_CAPACITY, if given, is set as
``LRU_CACHE_CAPACITY`` from Python after torch is imported, before the first product (the
cache of torch's mkldnn operators); MMAP_THRESHOLD 0 leaves glibc's.
"""
import ctypes
import json
import os
import sys

import spacy
import torch
from spacy.util import fix_random_seed, load_config

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.runtime.memory import (
    peak_rss_mb,
    release_free_memory,
    set_mmap_threshold,
)

TRAIN = "../shared/data/genia/train.jsonl"
FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
          "fordblks", "keepcost")


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS]


def resident_mib() -> int:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def main(precision: str, onednn: int, mmap: int, lru: str = "") -> None:
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(onednn)
    if lru:
        os.environ["LRU_CACHE_CAPACITY"] = lru
    if mmap:
        set_mmap_threshold(mmap)
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    torch.set_num_threads(1)
    config = load_config("configs/mrc_packed_cpu.cfg", interpolate=False, overrides={
        "paths.train": TRAIN, "paths.dev": TRAIN, "initialize.before_init": None,
        "components.nested_mrc_ner.model.encoder.precision": precision})
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = [eg for _, eg in zip(range(3000), create_jsonl_reader(TRAIN)(nlp))]
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples[:200])
    batcher = spacy.util.registry.batchers.get("spacy.batch_by_words.v1")(
        size=400, tolerance=0.2, discard_oversize=False)
    rows = []
    for step, batch in zip(range(45), batcher(examples)):
        release_free_memory()
        nlp.update(list(batch), sgd=optimizer, drop=0.1)
        if step % 5 == 4:
            heap = libc.mallinfo2()
            rows.append({"step": step + 1, "rss": resident_mib(), "heap_arena": heap.arena >> 20,
                         "heap_used": heap.uordblks >> 20, "heap_free": heap.fordblks >> 20,
                         "mmapped": heap.hblkhd >> 20})
    print(json.dumps({"variant": sys.argv[1:], "peak": round(peak_rss_mb()), "rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
