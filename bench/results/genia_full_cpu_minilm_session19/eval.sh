#!/bin/bash
# session 19: after spancat at 2e-4: all full-data rows in one process, then both scorers on the same predictions
cd /work/main && source .venv/bin/activate
while pgrep -f "spancat_hy_lr2e4=spancat" >/dev/null; do sleep 15; done
echo "eval start $(date)" >> bench/work_s19/chain.log
W=bench/work_full
/usr/bin/time -v python bench/genia_bench.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --train-limit 15023 --batch-words 400 --threads 2 --speed-rounds 1 --work $W --epochs 2 --phase evaluate --out bench/results/genia_full_cpu_minilm_session19 --models mrc_packed_lr2e4_tuned=mrc_packed ll_hn_lr2e4_tuned=locate_label spancat_hy_lr2e4=spancat spancat_hy3=spancat > bench/work_s19/final_eval.log 2>&1
echo "eval done $(date)" >> bench/work_s19/chain.log
python bench/common_scorer.py --dev $W/dev.spacy --threads 2 --pipelines mrc_packed_lr2e4_tuned=$W/mrc_packed_lr2e4_tuned/model-last ll_hn_lr2e4_tuned=$W/ll_hn_lr2e4_tuned/model-last spancat_hy_lr2e4=$W/spancat_hy_lr2e4/model-last spancat_hy3=$W/spancat_hy3/model-last --out bench/results/common_scorer_cpu_minilm_session19 > bench/work_s19/common_scorer19.log 2>&1
echo "common scorer done $(date)" >> bench/work_s19/chain.log
