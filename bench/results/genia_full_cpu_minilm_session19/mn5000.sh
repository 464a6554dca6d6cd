#!/bin/bash
# session 19: Multi-NER as shipped (gradient checkpointing, trim every step), 5,000 sentences, one epoch, two threads
cd /work/main && source .venv/bin/activate
echo "mn5000 start $(date)" >> bench/work_s19/chain.log
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs multi_ner --sizes 5000 --remedies trim1 --threads 2 --work bench/work_memory_perlabel --out bench/results/train_memory_cpu_minilm_multi_ner_5000 > bench/work_s19/mn5000.log 2>&1
echo "mn5000 done $(date)" >> bench/work_s19/chain.log
