#!/bin/bash
# one full-data epoch of the shipped packed MRC config in fp32 and bf16, side by side, one thread each
cd /work/main
. .venv/bin/activate
export PYTHONPATH=/work/runs/s5/snap OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for P in fp32 bf16; do
  ( /usr/bin/time -v python -m spacy train /work/runs/s5/snap/configs/mrc_packed_cpu.cfg \
      --output /work/runs/s5/epoch1_$P --paths.train ../shared/data/genia/train.jsonl \
      --paths.dev ../shared/data/genia/dev.jsonl \
      --components.nested_mrc_ner.model.encoder.precision $P --training.max_epochs 1 \
      > /work/runs/s5/train_epoch1_mrc_packed_$P.log 2>&1 ) &
  PIDS="$PIDS $!"
done
# resident size of each training every 15 s
( while true; do for P in fp32 bf16; do
    PID=$(pgrep -f "output /work/runs/s5/epoch1_$P" | head -1)
    [ -n "$PID" ] && echo -e "$(date +%s)\t$(grep VmRSS /proc/$PID/status 2>/dev/null | awk '{print $2}')" >> /work/runs/s5/rss_epoch1_mrc_packed_$P.tsv
  done; sleep 15; done ) &
SAMPLER=$!
wait $PIDS
kill $SAMPLER
