#!/usr/bin/env bash
# The one command of a lent GPU machine's run (bench/gpu_stage_pack.sh staged its pieces): unpack
# the wheels, data and encoder carried into /tmp/stage, install them and this project, run the
# GPU-marked tests and bench/gpu_rows.py side by side, and pack their outputs into
# $OUT/results.tar.gz (the device returns 8 files at most).
#   bash bench/gpu_device_run.sh STUDY DEADLINE_SECONDS [gpu_rows.py options ...]
set -u
study=$1 deadline=$2; shift 2
export PYTHONUNBUFFERED=1
mkdir -p /tmp/stage /tmp/st /tmp/res
cp -r .stage/p* /tmp/stage/ 2>/dev/null
cat $(ls -d /tmp/stage/p* | sort -V | sed 's|$|/part|') | tar -x -C /tmp/st || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    /tmp/st/w1/*.whl /tmp/st/w2/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site
python3 -c 'import spacy, spacy_transformers, transformers, torch; print(spacy.__version__,
transformers.__version__, torch.__version__, torch.cuda.get_device_name(0))' || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > /tmp/res/gpu.csv
python3 -m pytest tests/cli/test_train_cli.py -m gpu -p no:cacheprovider -q \
    > /tmp/res/gpu_tests.log 2>&1 &
tests=$!
python3 bench/gpu_rows.py --study "$study" --deadline "$deadline" --gpu-id 0 \
    --work /tmp/work --out /tmp/res/rows "$@" 2>&1 | tee /tmp/res/gpu_rows.log
wait $tests; echo "gpu tests rc $?" >> /tmp/res/gpu_tests.log; tail -3 /tmp/res/gpu_tests.log
tar -czf "$OUT/results.tar.gz" -C /tmp/res .
