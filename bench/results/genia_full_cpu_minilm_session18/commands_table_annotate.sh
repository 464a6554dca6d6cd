#!/bin/bash
# session 18: after both hard-negative Locate-and-Label runs are tuned and scored: the full-data table (all rows in one process), then the annotate bench (int8/ONNX speed and F1, engines on 1,000 abstracts, resume) with the better Locate-and-Label
cd /work/main && source .venv/bin/activate
while [ ! -s bench/work_full/ll_hn_tuned_spacy_evaluate.json ] || [ ! -s bench/work_full/ll_hn_lr2e4_tuned_spacy_evaluate.json ] || pgrep -f "spacy evaluate" >/dev/null; do sleep 15; done
B="python bench/genia_bench.py --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --train-limit 15023 --batch-words 400 --threads 2 --speed-rounds 1 --work bench/work_full"
/usr/bin/time -v $B --epochs 2 --phase evaluate --out bench/results/genia_full_cpu_minilm_session18 --models ll_hn_tuned=locate_label ll_hn_lr2e4_tuned=locate_label locate_label_hy_tuned=locate_label mrc_packed_lr2e4_tuned=mrc_packed spancat_hy3=spancat > bench/work_full/final_eval_session18.log 2>&1
echo "final eval $(date)" >> bench/work_full/chain_s18.log
best=$(python - <<'PY'
import json
rows = {n: json.load(open(f"bench/work_full/{n}_spacy_evaluate.json"))["spans_nested_f"]
        for n in ("ll_hn_tuned", "ll_hn_lr2e4_tuned", "locate_label_hy_tuned")}
print(max(rows, key=rows.get))
PY
)
echo "annotate bench with $best $(date)" >> bench/work_full/chain_s18.log
python bench/annotate_bench.py --pipeline locate_label=bench/work_full/$best/model-last --baseline spancat=bench/work_full/spancat_hy3/model-last --dev ../shared/data/genia/dev.jsonl --parts speed engines resume --engine-docs 1000 --resume-docs 1000 --out bench/results/annotate_cpu_minilm_session18 > bench/work_full/annotate_session18.log 2>&1
echo "annotate bench done $(date)" >> bench/work_full/chain_s18.log
