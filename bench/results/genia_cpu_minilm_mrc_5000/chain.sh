#!/bin/bash
# session 20: the per-label MRC config (mrc_cpu.cfg, as shipped) after one epoch on the first
# 5,000 GENIA sentences (the pipeline of #17's memory run, train_memory_cpu_minilm_per_label_checkpointing.md):
# tuned on dev and scored, as far as the per-label MRC got on these 2 cores (a subset run)
cd /work/main && source .venv/bin/activate
W=bench/work_full
O=bench/results/genia_cpu_minilm_mrc_5000
rm -rf $W/mrc_5000_1ep && cp -r bench/work_memory_perlabel/mem_mrc_5000_trim1_gc $W/mrc_5000_1ep
echo "start $(date)" >> $O/chain.log
python -m spacy_nested_mrc tune $W/mrc_5000_1ep/model-last ../shared/data/genia/dev.jsonl \
  --output $W/mrc_5000_1ep_tuned/model-last --gate-grid 0.4,0.5 \
  --report $O/tuning_mrc_5000_1ep.json > $O/tune_mrc_5000_1ep.log 2>&1
echo "tuned $(date)" >> $O/chain.log
python bench/genia_bench.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl \
  --train-limit 5000 --batch-words 400 --threads 2 --speed-rounds 1 --work $W --epochs 1 --phase evaluate \
  --out $O --models mrc_5000_1ep_tuned=mrc > $O/final_eval.log 2>&1
echo "evaluated $(date)" >> $O/chain.log
