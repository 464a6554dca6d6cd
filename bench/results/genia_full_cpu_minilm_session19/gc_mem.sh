#!/bin/bash
# session 19: per-label MRC training memory at 1,500 and 5,000 sentences with gradient checkpointing and a trim every step, one epoch, one thread; after the per-label probe
cd /work/main && source .venv/bin/activate
while pgrep -f "perlabel_mem.sh" >/dev/null; do sleep 20; done
echo "gc mem start $(date)" >> bench/work_s19/chain.log
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs mrc --sizes 1500 5000 --remedies trim1 --threads 1 --set components.nested_mrc_ner.model.gradient_checkpointing=true --tag gc --work bench/work_memory_perlabel --out bench/results/train_memory_cpu_minilm_per_label_checkpointing > bench/work_s19/gc_mem.log 2>&1
echo "gc mem done $(date)" >> bench/work_s19/chain.log
