. /work/main/.venv/bin/activate
export PYTHONPATH=/work/runs/s7/snap OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 PYTHONUNBUFFERED=1
cd /work/runs/s7/snap
/usr/bin/time -v python -m spacy train configs/mrc_packed_cpu.cfg --output /work/runs/s7/cpu_mpnet/full \
  --paths.encoder /root/.cache/nested-ner-encoders/all-mpnet-base-v2 \
  --paths.train /work/shared/data/genia/train.jsonl --paths.dev /work/shared/data/genia/dev.jsonl \
  --training.batcher.size.start 800 --training.batcher.size.stop 800 \
  --training.optimizer.learn_rate.initial_rate 1e-4 --training.optimizer.learn_rate.warmup_steps 141 \
  --training.optimizer.learn_rate.total_steps 1408 --training.eval_frequency 352
