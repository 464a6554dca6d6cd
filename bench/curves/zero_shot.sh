#!/usr/bin/env bash
# The zero-shot row of #52: the pipeline of the intermediate training alone (configs/
# mrc_biomed_cpu.cfg, no GENIA sentence seen) given GENIA's five labels by their questions
# (the "genia" preset) with the `relabel` command, then tuned on dev and scored as the other rows.
#   bash bench/curves/zero_shot.sh INTERMEDIATE NAME WORK OUT
set -euo pipefail
intermediate=$1 name=$2 work=$3 out=$4
dev=${DEV:-../shared/data/genia/dev.jsonl}
export OMP_NUM_THREADS=${THREADS:-1}
python -m spacy_nested_mrc relabel "$intermediate" "$work/$name" \
  --labels DNA,RNA,cell_line,cell_type,protein > "$out/relabel_$name.log" 2>&1
python -m spacy_nested_mrc tune "$work/$name" "$dev" --output "$work/${name}_tuned" \
  --gate-grid 0.3,0.4,0.5 --report "$out/tuning_$name.json" > "$out/tune_$name.log" 2>&1
