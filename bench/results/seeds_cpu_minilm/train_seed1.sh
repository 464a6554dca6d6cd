#!/usr/bin/env bash
# The MiniLM rows again with another seed (system.seed 1): the packed MRC (configs/mrc_packed_cpu.cfg,
# bf16) and spaCy's spancat at its best MiniLM schedule, one thread each, side by side; then the
# packed MRC tuned on dev and both scored by bench/encoder_rows.py.
#   bash bench/results/seeds_cpu_minilm/train_seed1.sh TRAIN_JSONL DEV_JSONL DEV_SPACY ENCODER WORK
set -u
train=$1 dev=$2 dev_spacy=$3 encoder=$4 work=$5
out=$(dirname "$0"); mkdir -p "$work"
export OMP_NUM_THREADS=1
/usr/bin/time -v python -m spacy train configs/mrc_packed_cpu.cfg --output "$work/mrc_packed" \
    --paths.train "$train" --paths.dev "$dev" --paths.encoder "$encoder" --system.seed 1 \
    > "$out/train_mrc_packed_seed1.log" 2>&1 &
mrc=$!
/usr/bin/time -v python -m spacy train bench/configs/spancat_cpu.cfg --output "$work/spancat" \
    --paths.train "$train" --paths.dev "$dev" --paths.encoder "$encoder" --system.seed 1 \
    --nlp.tokenizer '{"@tokenizers":"spacy-nested-mrc.Tokenizer.v1","split_hyphens":false}' \
    --training.batcher.size.start 400 --training.batcher.size.stop 400 \
    --training.optimizer.learn_rate.warmup_steps 281 \
    --training.optimizer.learn_rate.total_steps 2816 \
    --training.optimizer.learn_rate.initial_rate 0.0001 \
    > "$out/train_spancat_seed1.log" 2>&1 &
spancat=$!
wait $mrc
python -m spacy_nested_mrc tune "$work/mrc_packed/model-best" "$dev_spacy" --output "$work/mrc_packed_tuned" \
    --gate-grid 0.3,0.4,0.5 --report "$out/tuning_mrc_packed_seed1.json" > "$out/tune_mrc_packed_seed1.log" 2>&1
wait $spancat
python bench/encoder_rows.py --dev "$dev_spacy" \
    --row "mrc_packed_seed1|all-MiniLM-L6-v2|bf16|$work/mrc_packed_tuned|$out/train_mrc_packed_seed1.log" \
    --row "spancat_seed1|all-MiniLM-L6-v2|fp32|$work/spancat/model-best|$out/train_spancat_seed1.log" \
    --out "$out/encoder_rows_seed1"
