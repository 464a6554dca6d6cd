#!/usr/bin/env bash
# The intermediate training of #52 (configs/mrc_biomed_cpu.cfg on the eleven biomedical corpora,
# natural questions, one thread, under /usr/bin/time -v) and its zero-shot row on GENIA dev
# (bench/curves/zero_shot.sh: GENIA's labels by their questions, tuned on dev).
# Paths relative to the repository root.
#   bash bench/curves/intermediate.sh WORK OUT [BIOMED]
set -euo pipefail
work=$1 out=$2 biomed=${3:-../shared/data/biomed-ner}
cd "$(dirname "$0")/../.."
mkdir -p "$work" "$out"
OMP_NUM_THREADS=${THREADS:-1} /usr/bin/time -v python -m spacy train configs/mrc_biomed_cpu.cfg \
  --output "$work/biomed_natural" --paths.biomed "$biomed" > "$out/train_biomed_natural.log" 2>&1
bash bench/curves/zero_shot.sh "$work/biomed_natural/model-best" zeroshot_0 "$work" "$out"
