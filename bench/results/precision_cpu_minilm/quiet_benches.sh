#!/bin/bash
# run once the full-data trainings are done: the pairs' dev scores, then the speed studies on a quiet machine
set -x
cd /work/main/bench && . ../.venv/bin/activate
ADAPT=$(pgrep -f "^python -m spacy_nested_mrc adapt" | head -1)
[ -n "$ADAPT" ] && kill -STOP $ADAPT
R=results/precision_cpu_minilm
OMP_NUM_THREADS=2 python encoder_rows.py --dev /work/runs/s3/dev.spacy --out $R/full_data_pairs \
 --row "packed MRC|all-MiniLM-L6-v2|fp32|/work/runs/s6/mrc_packed_fp32/model-best|$R/train_full_mrc_packed_fp32.log" \
 --row "packed MRC|all-MiniLM-L6-v2|bf16|/work/runs/mrc_packed_bf16/model-best|$R/train_mrc_packed_bf16.log" \
 --row "Locate-and-Label|all-MiniLM-L6-v2|fp32|/work/runs/locate_label_fp32/model-best|$R/train_locate_label_fp32.log" \
 --row "Locate-and-Label|all-MiniLM-L6-v2|bf16|/work/runs/s6/locate_label_bf16/model-best|$R/train_full_locate_label_bf16.log"
python gemm_peak.py --threads 1 --repeats 5 --calls 10 --out $R/gemm_peak_quiet
python encoder_floor.py --dev ../../shared/data/genia/dev.jsonl --pipelines mrc_packed=/work/runs/mrc_packed_bf16_tuned locate_label=/work/runs/locate_label_fp32_tuned --precisions fp32 bf16 --repeats 3 --threads 2 --out $R/encoder_floor_fp32_bf16_heads
python annotate_bench.py --pipeline mrc_packed=/work/runs/mrc_packed_bf16_tuned --pipeline locate_label=/work/runs/locate_label_fp32_tuned --dev ../../shared/data/genia/dev.jsonl --variants float bf16 int8 onnx_int8 --parts speed variants --rounds 2 --threads 2 --out $R/annotate_variants_alternated
[ -n "$ADAPT" ] && kill -CONT $ADAPT
