#!/bin/bash
# session 19: Multi-NER training memory at 1,500 sentences with gradient checkpointing and a trim every step, one thread, third process
cd /work/main && source .venv/bin/activate
python bench/train_memory.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --configs multi_ner --sizes 1500 --remedies trim1 --threads 1 --set components.nested_mrc_ner.model.gradient_checkpointing=true --tag gc --work bench/work_memory_perlabel --out bench/results/train_memory_cpu_minilm_multi_ner_checkpointing > bench/work_s19/mn_gc.log 2>&1
echo "multi_ner gc done $(date)" >> bench/work_s19/chain.log
