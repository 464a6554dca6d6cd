#!/bin/bash
# Samples the resident set size of a process every N seconds until it exits:
#   bench/rss_sampler.sh PID SECONDS > out.tsv   (columns: seconds since start, RSS MB)
pid=$1; every=${2:-30}; start=$(date +%s)
echo -e "seconds\trss_mb"
while [ -e /proc/$pid/status ]; do
  rss=$(awk '/VmRSS/ {print int($2/1024)}' /proc/$pid/status 2>/dev/null)
  [ -n "$rss" ] && echo -e "$(( $(date +%s) - start ))\t$rss"
  sleep "$every"
done
