#!/bin/bash
# session 19: Locate-and-Label training memory with a trim every 10 steps at 1,500 and 5,000 sentences, one epoch, one thread; after the per-label 5,000 run
cd /work/main && source .venv/bin/activate
while pgrep -f "gc_mem.sh" >/dev/null; do sleep 15; done
echo "trim10 start $(date)" >> bench/work_s19/chain.log
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs locate_label --sizes 1500 5000 --remedies trim10 --threads 1 --work bench/work_memory_locate_label --out bench/results/train_memory_cpu_minilm_locate_label_trim_every_10 > bench/work_s19/trim10.log 2>&1
echo "trim10 done $(date)" >> bench/work_s19/chain.log
