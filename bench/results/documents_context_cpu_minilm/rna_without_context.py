"""Does the packed MRC trained on abstracts with context 32 (full_ctx32_b800) find RNA when it
reads the dev sentences with context 0? Output: rna_without_context.log (context at inference
32, then 0; our scorer; the isolated dev sentences).

    python bench/results/documents_context_cpu_minilm/rna_without_context.py TUNED_PIPELINE
"""

import sys
from pathlib import Path

import spacy
import torch
from spacy.training import Corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from context_eval import KeepingScorer  # noqa: E402

from spacy_nested_mrc.scoring.scorer import score_nested  # noqa: E402

DEV_SENTENCES = "bench/work/genia_docs/dev.sentences.spacy"

torch.set_num_threads(1)
for context in (32, 0):
    nlp = spacy.load(sys.argv[1],
                     config={"components": {"nested_mrc_ner": {"model": {"context": context}}}})
    examples = list(Corpus(DEV_SENTENCES)(nlp))
    scorer = KeepingScorer(nlp=nlp)
    nlp.evaluate(examples, scorer=scorer)
    scores = score_nested(scorer.examples)
    per_type = {k: round(100 * v["f"], 1) for k, v in scores["spans_nested_per_type"].items()}
    print(context, round(100 * scores["spans_nested_f"], 2), per_type, flush=True)
