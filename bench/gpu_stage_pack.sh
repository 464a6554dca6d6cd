#!/usr/bin/env bash
# Cut what a GPU run needs into pieces of at most PIECE_MIB (default 54; the working tree and one
# piece must fit the device's 64 MiB a call) under .stage/p1, p2, ...: the wheels of
# ../shared/tools/gpu-stage.sh (run it first), GENIA train/dev, the dev DocBin, one fp16 encoder
# and, for gpu_rows.py's adapted_* rows, the text files to adapt on (into data/text/).
#   bash bench/gpu_stage_pack.sh TRAIN_JSONL DEV_JSONL DEV_SPACY ENCODER_NAME [PIECE_MIB [TEXT ...]]
# Carry one piece a call (carry: [".stage/pN"]) with `mkdir -p /tmp/stage && cp -r .stage/pN
# /tmp/stage/`, back to back; the last one travels with bench/gpu_device_run.sh's call.
set -euo pipefail
train=$1 dev=$2 dev_spacy=$3 encoder=$4 piece=${5:-54}; shift 5 2>/dev/null || shift $#
S=.stage; tmp=$(mktemp -d); cut=$(mktemp -d)
mkdir -p $tmp/data $tmp/enc
mkdir -p $tmp/data/text; for text in "$@"; do cp -L "$text" $tmp/data/text/; done
cp "$train" $tmp/data/train.jsonl; cp "$dev" $tmp/data/dev.jsonl; cp "$dev_spacy" $tmp/data/dev.spacy
cp -r $S/w1 $S/w2 $tmp/
for d in $(ls -d $S/e-$encoder-* | sort -V); do cat $d/part; done | tar -x -C $tmp/enc
rm -rf $S/p*
tar -c -C $tmp . | split -b ${piece}M -d -a 1 - $cut/part.
i=1; for f in $(ls $cut/part.* | sort -V); do mkdir -p $S/p$i; mv $f $S/p$i/part; i=$((i + 1)); done
rm -rf $tmp $cut; du -sh $S/p*
