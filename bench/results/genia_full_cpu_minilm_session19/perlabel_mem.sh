#!/bin/bash
# session 19: per-label MRC and Multi-NER training memory at 1,500 sentences, one epoch, shipped trim (every 50), one thread, as a third process
cd /work/main && source .venv/bin/activate
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs mrc multi_ner --sizes 1500 --remedies trim --threads 1 --work bench/work_memory_perlabel --out bench/results/train_memory_cpu_minilm_per_label > bench/work_s19/perlabel_mem.log 2>&1
echo "perlabel mem done $(date)" >> bench/work_s19/chain.log
