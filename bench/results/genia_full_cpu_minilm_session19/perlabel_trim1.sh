#!/bin/bash
# session 19: per-label MRC training memory at 1,500 sentences with a trim every step and no gradient checkpointing (to separate the two), one thread, third process
cd /work/main && source .venv/bin/activate
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs mrc --sizes 1500 --remedies trim1 --threads 1 --work bench/work_memory_perlabel --out bench/results/train_memory_cpu_minilm_per_label_trim_every_step > bench/work_s19/perlabel_trim1.log 2>&1
echo "perlabel trim1 done $(date)" >> bench/work_s19/chain.log
