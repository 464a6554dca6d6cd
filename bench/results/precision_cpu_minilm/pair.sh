#!/bin/bash
# full-data runs completing #38's precision pairs: packed MRC in fp32 (its bf16 run exists), Locate-and-Label in bf16 (its fp32 run exists)
cd /work/main
. .venv/bin/activate
export PYTHONPATH=/work/runs/s6/snap OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
S=/work/runs/s6/snap
( /usr/bin/time -v python -m spacy train $S/configs/mrc_packed_cpu.cfg --output /work/runs/s6/mrc_packed_fp32 \
   --paths.train ../shared/data/genia/train.jsonl --paths.dev ../shared/data/genia/dev.jsonl \
   --components.nested_mrc_ner.model.encoder.precision fp32 > /work/runs/s6/train_mrc_packed_fp32.log 2>&1 ) &
P1=$!
( /usr/bin/time -v python -m spacy train $S/configs/locate_label_cpu.cfg --output /work/runs/s6/locate_label_bf16 \
   --paths.train ../shared/data/genia/train.jsonl --paths.dev ../shared/data/genia/dev.jsonl \
   --components.transformer.model.precision bf16 --components.nested_mrc_ner.model.heads.precision bf16 \
   > /work/runs/s6/train_locate_label_bf16.log 2>&1 ) &
P2=$!
( while true; do for N in mrc_packed_fp32 locate_label_bf16; do
    PID=$(pgrep -f "^python -m spacy train .*output /work/runs/s6/$N" | head -1)
    [ -n "$PID" ] && echo -e "$(date +%s)\t$(awk '/VmRSS/{printf "%d", $2/1024}' /proc/$PID/status 2>/dev/null)" >> /work/runs/s6/rss_$N.tsv
  done; sleep 15; done ) &
S2=$!
wait $P1 $P2
kill $S2
