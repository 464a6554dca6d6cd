log=/work/runs/s7/cpu_mpnet/train_mrc_packed_mpnet_bf16.log
until grep -qE "^\s+[0-9]+\s+1056\s" $log; do sleep 5; done
date; echo "1056 printed"
# model-best is written after the row is printed: wait until its files stop changing
sleep 20
while [ $(( $(date +%s) - $(find /work/runs/s7/cpu_mpnet/full/model-best -type f -printf '%T@\n' | sort -n | tail -1 | cut -d. -f1) )) -lt 20 ]; do sleep 5; done
date; ls -la --time-style=+%T /work/runs/s7/cpu_mpnet/full/model-best
kill -TERM 14155; echo killed; date
