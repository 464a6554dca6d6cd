#!/usr/bin/env bash
# One row of the learning curves (#52): `spacy train` on one thread under /usr/bin/time -v, a
# schedule of STEPS updates (warm-up a tenth, linear decay, a dev evaluation every STEPS/4),
# then, for nested_mrc_ner pipelines, `tune` on dev. Extra arguments are config overrides.
#   bash bench/curves/train_row.sh NAME CONFIG TRAIN_JSONL STEPS WORK OUT [--section.key value ...]
# Writes OUT/train_NAME.log (the training and its time -v), WORK/NAME/model-best and, tuned,
# WORK/NAME_tuned (OUT/tuning_NAME.json).
set -euo pipefail
name=$1 config=$2 train=$3 steps=$4 work=$5 out=$6
shift 6
dev=${DEV:-../shared/data/genia/dev.jsonl}
mkdir -p "$work" "$out"
export OMP_NUM_THREADS=${THREADS:-1}
/usr/bin/time -v python -m spacy train "$config" --output "$work/$name" \
  --paths.train "$train" --paths.dev "$dev" \
  --training.max_steps "$steps" --training.max_epochs 0 --training.eval_frequency $((steps / 4)) \
  --training.optimizer.learn_rate.warmup_steps $((steps / 10)) \
  --training.optimizer.learn_rate.total_steps "$steps" "$@" \
  > "$out/train_$name.log" 2>&1
if grep -q nested_mrc_ner "$work/$name/model-best/config.cfg"; then
  python -m spacy_nested_mrc tune "$work/$name/model-best" "$dev" --output "$work/${name}_tuned" \
    --gate-grid 0.3,0.4,0.5 --report "$out/tuning_$name.json" > "$out/tune_$name.log" 2>&1
fi
