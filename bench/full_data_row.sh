#!/bin/bash
# One shipped CPU config for one epoch on all of GENIA train, as a full-data row: the run
# through train_memory.py (so it also gives the config's peak RSS at 15,023 sentences), then
# `tune` on dev, then genia_bench's evaluate phase (gold tokens, spaCy's tokenizer, `spacy
# evaluate`, speed against the bare encoder) and both span scorers (common_scorer.py).
#
#   bash bench/full_data_row.sh CONFIG ROW OUT [GATE_GRID]
#   bash bench/full_data_row.sh mrc mrc_1ep bench/results/accuracy_genia_cpu_minilm/genia_full_cpu_minilm_mrc_1ep
#
# CONFIG: a genia_bench config name (mrc, multi_ner, mrc_packed, locate_label); ROW: the row's
# name in bench/work_full; OUT: the results' path prefix. Data paths: TRAIN and DEV in the
# environment (default ../shared/data/genia/{train,dev}.jsonl); the learning rate is
# genia_bench's default (1e-4), decayed to 0 over the epoch.
set -euo pipefail
CONFIG=$1 ROW=$2 OUT=$3 GRID=${4:-0.3,0.4,0.5}
TRAIN=${TRAIN:-../shared/data/genia/train.jsonl}
DEV=${DEV:-../shared/data/genia/dev.jsonl}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
W=bench/work_full
MEM=bench/work_memory_full
mkdir -p "$W" "$MEM" "$OUT"
log() { echo "$1 $(date)" | tee -a "$OUT/chain.log"; }

log "train $CONFIG"
python bench/train_memory.py --train "$TRAIN" --dev "$DEV" --configs "$CONFIG" --sizes 15023 \
  --remedies trim1 --threads 2 --work "$MEM" --out "bench/results/memory_cpu_minilm/train_memory_cpu_minilm_${CONFIG}_full"
rm -rf "${W:?}/$ROW" && cp -r "$MEM/mem_${CONFIG}_15023_trim1" "$W/$ROW"
log "tune"
python -m spacy_nested_mrc tune "$W/$ROW/model-last" "$DEV" --output "$W/${ROW}_tuned/model-last" \
  --gate-grid "$GRID" --report "$OUT/tuning_$ROW.json" > "$OUT/tune_$ROW.log" 2>&1
log "evaluate"
python bench/genia_bench.py --train "$TRAIN" --dev "$DEV" --train-limit 15023 --batch-words 400 \
  --threads 2 --speed-rounds 1 --work "$W" --epochs 1 --phase evaluate --out "$OUT" \
  --models "${ROW}_tuned=$CONFIG" > "$OUT/final_eval.log" 2>&1
log "both scorers"
python bench/common_scorer.py --dev "$W/dev.spacy" --threads 2 \
  --pipelines "${ROW}_tuned=$W/${ROW}_tuned/model-last" --out "${OUT}_common_scorer" \
  > "$OUT/common_scorer.log" 2>&1
log "done"
