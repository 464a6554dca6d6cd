#!/bin/bash
# session 19 slot A: spaCy's spancat at lr 2e-4, 2 epochs, GENIA's hyphen convention (the shipped Locate-and-Label schedule), after the L&L memory run
cd /work/main && source .venv/bin/activate
while pgrep -f "mem_locate_label_15023_trim1" >/dev/null; do sleep 20; done
echo "slotA start $(date)" >> bench/work_s19/chain.log
/usr/bin/time -v python bench/genia_bench.py --phase train --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl --train-limit 15023 --batch-words 400 --learn-rate 2e-4 --threads 1 --work bench/work_full --epochs 2 --model spancat_hy_lr2e4=spancat --set 'spancat_hy_lr2e4:nlp.tokenizer={"@tokenizers":"spacy-nested-mrc.Tokenizer.v1","split_hyphens":false}' > bench/work_full/spancat_hy_lr2e4.log 2>&1
echo "slotA spancat done $(date)" >> bench/work_s19/chain.log
