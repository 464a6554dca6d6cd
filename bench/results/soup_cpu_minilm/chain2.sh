#!/usr/bin/env bash
# after teacher_100: continue_100 (one thread) beside Locate-and-Label's fast path on all of
# GENIA (one thread); then the last stage at two seeds side by side, and their average
set -uo pipefail
cd /work/run_tree1
. .venv/bin/activate
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
W=bench/work_curve OUT=/work/out52 C=../shared/data/biomed-ner T=../shared/data/genia/train.jsonl D=../shared/data/genia/dev.jsonl
mkdir -p $W/silver && touch $W/silver/none.jsonl
while pgrep -f "train_row.sh teacher_100" >/dev/null; do sleep 20; done
date
python bench/curves/silver.py $W/teacher_100_tuned $C --out $W/silver/none.jsonl --configs-only --start-from $W/teacher_100_tuned --silver-weight 0 --write-config configs/mrc_packed_cpu.cfg=$W/silver/continue_100.cfg > $OUT/config_continue.log 2>&1
bash bench/curves/train_row.sh continue_100 $W/silver/continue_100.cfg $T 2816 $W $OUT &
(
  OMP_NUM_THREADS=1 python -m spacy evaluate $W/teacher_100_tuned $W/dev.spacy --output $OUT/evaluate_teacher_100_tuned.json > $OUT/evaluate_teacher_100_tuned.log 2>&1
  OMP_NUM_THREADS=1 /usr/bin/time -v python -m spacy train configs/locate_label_cpu.cfg --output $W/ll_fast_100 \
    --paths.train $T --paths.dev $D --training.optimizer.@optimizers spacy-nested-mrc.TorchAdam.v1 \
    --components.transformer.model.freeze_word_embeddings true \
    --components.transformer.model.transformer_config.attention_probs_dropout_prob 0.0 > $OUT/train_ll_fast_100.log 2>&1
  OMP_NUM_THREADS=1 python -m spacy_nested_mrc tune $W/ll_fast_100/model-best $D --output $W/ll_fast_100_tuned --gate-grid 0.3,0.4,0.5 --report $OUT/tuning_ll_fast_100.json > $OUT/tune_ll_fast_100.log 2>&1
  OMP_NUM_THREADS=1 python -m spacy evaluate $W/ll_fast_100_tuned $W/dev.spacy --output $OUT/evaluate_ll_fast_100_tuned.json > $OUT/evaluate_ll_fast_100_tuned.log 2>&1
  date; echo ll done
) &
wait
date
OMP_NUM_THREADS=1 python -m spacy evaluate $W/continue_100_tuned $W/dev.spacy --output $OUT/evaluate_continue_100_tuned.json > $OUT/evaluate_continue_100_tuned.log 2>&1 &
python bench/curves/silver.py $W/continue_100_tuned $C --out $W/silver/none.jsonl --configs-only --start-from $W/continue_100_tuned --silver-weight 0 --write-config configs/mrc_packed_cpu.cfg=$W/silver/continuelow_100.cfg > $OUT/config_continuelow.log 2>&1
wait
bash bench/curves/train_row.sh continuelow_100 $W/silver/continuelow_100.cfg $T 1408 $W $OUT --training.optimizer.learn_rate.initial_rate 0.00005 &
bash bench/curves/train_row.sh continuelow_s1_100 $W/silver/continuelow_100.cfg $T 1408 $W $OUT --training.optimizer.learn_rate.initial_rate 0.00005 --system.seed 1 &
wait
date
for r in continuelow_100 continuelow_s1_100; do
  OMP_NUM_THREADS=1 python -m spacy evaluate $W/${r}_tuned $W/dev.spacy --output $OUT/evaluate_${r}_tuned.json > $OUT/evaluate_${r}_tuned.log 2>&1 &
done
wait
OMP_NUM_THREADS=2 /usr/bin/time -v python -m spacy_nested_mrc average $W/continuelow_100/model-best $W/continuelow_s1_100/model-best --output $W/soup_100 > $OUT/average_soup_100.log 2>&1
OMP_NUM_THREADS=2 python -m spacy_nested_mrc tune $W/soup_100 $D --output $W/soup_100_tuned --gate-grid 0.3,0.4,0.5 --report $OUT/tuning_soup_100.json > $OUT/tune_soup_100.log 2>&1
OMP_NUM_THREADS=2 python -m spacy evaluate $W/soup_100_tuned $W/dev.spacy --output $OUT/evaluate_soup_100_tuned.json > $OUT/evaluate_soup_100_tuned.log 2>&1
date; echo chain done
