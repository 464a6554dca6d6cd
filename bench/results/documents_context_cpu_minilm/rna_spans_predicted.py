"""What does a trained pipeline predict at GENIA dev's gold RNA spans, read in their abstracts
(the file's sentence boundaries)? Per pipeline, the labels predicted at exactly each gold RNA
span's characters ("-": nothing there), counted. Output: rna_spans_predicted.log.

    python bench/results/documents_context_cpu_minilm/rna_spans_predicted.py \\
        bench/work/genia_docs/dev.documents.spacy 300 \\
        bench/work/full_base/tuned bench/work/full_ctx32_b800/tuned
"""

import sys
from collections import Counter

import spacy
import torch

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader

torch.set_num_threads(1)
documents, limit, pipelines = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for path in pipelines:
    nlp = spacy.load(path)
    examples = list(create_jsonl_reader(documents, limit=limit)(nlp))
    counts: Counter = Counter()
    for example, doc in zip(examples, nlp.pipe([eg.predicted for eg in examples], batch_size=8)):
        predicted: dict = {}
        for span in doc.spans["nested"]:
            predicted.setdefault((span.start_char, span.end_char), []).append(span.label_)
        for span in example.reference.spans["nested"]:
            if span.label_ == "RNA":
                counts[",".join(predicted.get((span.start_char, span.end_char), ["-"]))] += 1
    print(path, f"first {limit} dev abstracts:", dict(counts.most_common()), flush=True)
