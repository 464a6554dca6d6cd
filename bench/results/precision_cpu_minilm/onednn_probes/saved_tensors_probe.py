"""The bytes of the tensors autograd keeps for the backward pass in each of six training
steps of the shipped packed MRC config (all-MiniLM-L6-v2, about 400 GENIA words a step, one
thread), each distinct storage counted once, by dtype. Run from the repository root, with
PRECISION fp32 or bf16:

    P=bench/results/precision_cpu_minilm/onednn_probes
    OMP_NUM_THREADS=1 python $P/saved_tensors_probe.py PRECISION > $P/saved_tensors_PRECISION.json
"""
import json
import sys
from collections import defaultdict
from functools import partial

import spacy
import torch
from spacy.util import fix_random_seed, load_config

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader

TRAIN = "../shared/data/genia/train.jsonl"


def pack(tensor: torch.Tensor, seen: dict) -> torch.Tensor:
    """Note the storage of a tensor saved for the backward pass."""
    storage = tensor.untyped_storage()
    seen[(storage.data_ptr(), tensor.dtype)] = (storage.nbytes(), str(tensor.dtype))
    return tensor


def unpack(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def main(precision: str) -> None:
    torch.set_num_threads(1)
    config = load_config("configs/mrc_packed_cpu.cfg", interpolate=False, overrides={
        "paths.train": TRAIN, "paths.dev": TRAIN,
        "components.nested_mrc_ner.model.encoder.precision": precision})
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = [eg for _, eg in zip(range(600), create_jsonl_reader(TRAIN)(nlp))]
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples[:200])
    batcher = spacy.util.registry.batchers.get("spacy.batch_by_words.v1")(
        size=400, tolerance=0.2, discard_oversize=False)
    steps = []
    for _, batch in zip(range(6), batcher(examples)):
        seen: dict = {}
        with torch.autograd.graph.saved_tensors_hooks(partial(pack, seen=seen), unpack):
            nlp.update(list(batch), sgd=optimizer, drop=0.1)
        by_dtype = defaultdict(int)
        for nbytes, dtype in seen.values():
            by_dtype[dtype] += nbytes
        steps.append({k: round(v / 2**20, 1) for k, v in by_dtype.items()})
    print(json.dumps({"precision": precision, "saved_mib_by_dtype_per_step": steps}))


if __name__ == "__main__":
    main(sys.argv[1])
