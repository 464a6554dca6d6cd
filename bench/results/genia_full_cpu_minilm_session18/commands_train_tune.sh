#!/bin/bash
# session 18: Locate-and-Label on all of GENIA with hard negatives (2 hard + 3 random per positive), 2 epochs, lr 1e-4 and 2e-4, one thread each; then tune on dev and spacy evaluate
cd /work/main && source .venv/bin/activate
one() {
  n=$1; lr=$2
  rm -rf bench/work_full/$n
  /usr/bin/time -v python bench/genia_bench.py --phase train --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --train-limit 15023 --batch-words 400 --learn-rate $lr --threads 1 --work bench/work_full --epochs 2 --model $n=locate_label --set $n:components.nested_mrc_ner.model.hard_negative_ratio=2.0 --set $n:components.nested_mrc_ner.model.negative_ratio=3.0 > bench/work_full/$n.log 2>&1
  echo "trained $n $(date)" >> bench/work_full/chain_s18.log
  OMP_NUM_THREADS=1 python -m spacy_nested_mrc tune bench/work_full/$n/model-last ../shared/data/genia/dev.jsonl \
    --output bench/work_full/${n}_tuned/model-last --gate-grid 0.2,0.4,0.6 --report bench/work_full/tuning_$n.json > bench/work_full/tune_$n.log 2>&1
  echo "tuned $n $(date)" >> bench/work_full/chain_s18.log
  OMP_NUM_THREADS=1 python -m spacy evaluate bench/work_full/${n}_tuned/model-last bench/work_full/dev.spacy --output bench/work_full/${n}_tuned_spacy_evaluate.json > bench/work_full/${n}_tuned_spacy_evaluate.log 2>&1
  echo "evaluated $n $(date)" >> bench/work_full/chain_s18.log
}
one ll_hn 1e-4 &
one ll_hn_lr2e4 2e-4 &
wait
