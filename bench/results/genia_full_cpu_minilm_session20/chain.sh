#!/bin/bash
# session 20: after Multi-NER's one epoch on all of GENIA train (train_memory.py, which also
# gives #17's peak RSS at 15,023 sentences): tune it on dev, then score it (gold tokens,
# spaCy's tokenizer, `spacy evaluate`, speed against the bare encoder) and apply both scorers
cd /work/main && source .venv/bin/activate
W=bench/work_full
S=bench/work_s20
mkdir -p $S
while pgrep -f "train_memory.py" >/dev/null; do sleep 15; done
echo "trained $(date)" >> $S/chain.log
rm -rf $W/multi_ner_1ep && cp -r bench/work_memory_perlabel/mem_multi_ner_15023_trim1 $W/multi_ner_1ep
python -m spacy_nested_mrc tune $W/multi_ner_1ep/model-last ../shared/data/genia/dev.jsonl \
  --output $W/multi_ner_1ep_tuned/model-last --gate-grid 0.3,0.4,0.5 \
  --report $S/tuning_multi_ner_1ep.json > $S/tune_multi_ner_1ep.log 2>&1
echo "tuned $(date)" >> $S/chain.log
/usr/bin/time -v python bench/genia_bench.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl \
  --train-limit 15023 --batch-words 400 --threads 2 --speed-rounds 1 --work $W --epochs 1 --phase evaluate \
  --out bench/results/genia_full_cpu_minilm_session20 --models multi_ner_1ep_tuned=multi_ner > $S/final_eval.log 2>&1
echo "evaluated $(date)" >> $S/chain.log
python bench/common_scorer.py --dev $W/dev.spacy --threads 2 \
  --pipelines multi_ner_1ep_tuned=$W/multi_ner_1ep_tuned/model-last \
  --out bench/results/common_scorer_cpu_minilm_session20 > $S/common_scorer20.log 2>&1
echo "common scorer done $(date)" >> $S/chain.log
