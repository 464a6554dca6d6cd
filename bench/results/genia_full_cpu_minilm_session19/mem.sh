#!/bin/bash
# session 19: every-step trim at all 15,023 sentences, one epoch, one thread each, two side by side
cd /work/main && source .venv/bin/activate
cfg=$1
/usr/bin/time -v python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs $cfg --sizes 15023 --remedies trim1 --threads 1 --work bench/work_memory_$cfg --out bench/results/train_memory_cpu_minilm_${cfg}_trim_every_step_full > bench/work_s19/mem_$cfg.log 2>&1
echo "mem $cfg done $(date)" >> bench/work_s19/chain.log
