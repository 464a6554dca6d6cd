#!/bin/bash
# session 17: training memory with encoder calls by length (max_pass_tokens = 1024, shipped), packed MRC, 1 epoch, one thread, beside the two lr runs
cd /work/main && source .venv/bin/activate
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs mrc_packed --sizes 1500 15023 --remedies trim --threads 1 --work bench/work_memory --out bench/results/train_memory_cpu_minilm_by_length > bench/work_full/train_memory_by_length.log 2>&1
