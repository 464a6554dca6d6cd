#!/bin/bash
# the resident size (MiB) of each training process every 15 s, until both have ended
while pgrep -f "^python -m spacy train .*epoch1_" > /dev/null; do
  for P in fp32 bf16; do
    PID=$(pgrep -f "^python -m spacy train .*epoch1_$P" | head -1)
    [ -n "$PID" ] && echo -e "$(date +%s)\t$(( $(grep VmRSS /proc/$PID/status 2>/dev/null | awk '{print $2}') / 1024 ))" >> /work/runs/s5/rss_epoch1_mrc_packed_$P.tsv
  done
  sleep 15
done
