"""Score trained pipelines on GENIA dev inside its abstracts and as isolated sentences, in one
process: the question of "Documents, not sentences" (does reading the neighbouring sentences
help, and how should a user pass a document?).

Each pipeline is scored four ways, each predicted through ``nlp.evaluate`` as ``spacy
evaluate`` runs it and scored by ours (``nested_scorer.v1``; text given as context only is not
scored), whatever the pipeline's own scorer (spaCy's spancat, say: its F1 is kept beside as
``own_scorer_f``):

- ``abstracts_raw``: ``spacy evaluate`` on the dev documents DocBin: each abstract as raw text
  through spaCy's tokenizer, no sentence boundaries (``nlp(abstract)``);
- ``abstracts_sentencizer``: the same with spaCy's ``sentencizer`` put first in the pipeline;
- ``abstracts_sentences``: the same abstracts with the file's sentence boundaries (the JSON
  Lines reader's documents, as in training);
- ``sentences``: ``spacy evaluate`` on the dev sentences alone (each sentence one doc).

    python bench/context_eval.py --documents DEV_DOCUMENTS.spacy --sentences DEV.spacy \
        --pipelines ctx=training/ctx/model-best base=training/base/model-best --out PREFIX

The DocBins come from ``python -m spacy_nested_mrc convert-genia RAW_XML DIR --documents``
then ``convert DIR/dev.documents.jsonl`` (documents) and ``convert dev.jsonl --sentences``.
"""

import argparse
import json
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List

import spacy
import torch
from benchlib.outputs import write_table
from spacy.scorer import Scorer
from spacy.training import Corpus, Example

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.scoring.scorer import score_nested

SPANS_KEY = "nested"
WAYS = ("abstracts_raw", "abstracts_sentencizer", "abstracts_sentences", "sentences")


def examples_of(way: str, nlp: Any, documents: Path, sentences: Path, limit: int) -> List[Any]:
    """The dev examples of one way of passing it: spaCy's own ``Corpus`` (what ``spacy
    evaluate`` reads: raw text, no sentence boundaries) or our reader (the file's
    boundaries); with ``abstracts_sentencizer`` a sentencizer is put first in ``nlp``."""
    if way == "abstracts_sentencizer":
        nlp.add_pipe("sentencizer", first=True)
    if way == "abstracts_sentences":
        return list(create_jsonl_reader(documents, limit=limit)(nlp))
    return list(Corpus(str(sentences if way == "sentences" else documents), limit=limit)(nlp))


class KeepingScorer(Scorer):
    """spaCy's ``Scorer`` that keeps the examples it scores: ``nlp.evaluate`` predicts into
    copies of the examples it is given, so their predictions are only seen here."""

    examples: List[Example] = []

    def score(self, examples: Iterable[Example], *, per_component: bool = False
              ) -> Dict[str, Any]:
        self.examples = list(examples)
        return super().score(self.examples, per_component=per_component)


def score_ways(name: str, path: Path, documents: Path, sentences: Path,
               ways: List[str], limit: int = 0) -> List[Dict[str, Any]]:
    """RETURNS: one row per way of passing dev (see the module docstring), each scored by
    ``nlp.evaluate`` as ``spacy evaluate`` does, timed from prediction to scores."""
    rows = []
    for way in ways:
        nlp = spacy.load(path)
        examples = examples_of(way, nlp, documents, sentences, limit)
        start = time.perf_counter()
        scorer = KeepingScorer(nlp=nlp)
        own = nlp.evaluate(examples, scorer=scorer)
        seconds = time.perf_counter() - start
        # one scorer for every pipeline: ours leaves out text given as context only, where
        # spaCy's spancat scorer counts every span predicted there as a false positive
        scores = score_nested(scorer.examples, spans_key=SPANS_KEY)
        words = sum(len(eg.reference) for eg in examples)
        rows.append({
            "pipeline": name,
            "way": way,
            "own_scorer_f": own.get(f"spans_{SPANS_KEY}_f"),
            "p": scores["spans_nested_p"],
            "r": scores["spans_nested_r"],
            "f": scores["spans_nested_f"],
            "nested_r": scores.get("spans_nested_nested_r"),
            "per_type": {label: value["f"] for label, value in
                         (scores.get("spans_nested_per_type") or {}).items()},
            "seconds": round(seconds, 1),
            "words_per_second": round(words / seconds, 1),
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: List[Dict[str, Any]], args: argparse.Namespace) -> List[str]:
    pct = lambda v: "-" if v is None else f"{100 * v:.2f}"  # noqa: E731
    labels = sorted({label for row in rows for label in row["per_type"]})
    lines = [
        "| pipeline | way | P | R | F1 | nested R | " + " | ".join(labels)
        + " | words/s |",
        "|---" * (7 + len(labels)) + "|",
    ]
    for row in rows:
        lines.append(
            f"| {row['pipeline']} | {row['way']} | {pct(row['p'])} | {pct(row['r'])} | "
            f"**{pct(row['f'])}** | {pct(row['nested_r'])} | "
            + " | ".join(pct(row["per_type"].get(label)) for label in labels)
            + f" | {row['words_per_second']} |"
        )
    lines += ["", f"Pipelines: {', '.join(args.pipelines)}; documents {args.documents}; "
              f"sentences {args.sentences}; torch threads {args.threads}; "
              f"{'GPU ' + str(args.gpu_id) if args.gpu_id >= 0 else 'CPU'}."]
    return lines


def check_keeping_scorer() -> None:
    """``nlp.evaluate`` predicts into copies of the examples; ``KeepingScorer`` keeps those,
    so our scorer sees the predictions (scoring the originals gave 0 for everything)."""
    from spacy.language import Language
    from spacy.tokens import Span

    @Language.component("first_token_is_protein")
    def first_token_is_protein(doc):
        doc.spans[SPANS_KEY] = [Span(doc, 0, 1, label="protein")]
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("first_token_is_protein")
    reference = nlp.make_doc("IL-2 binds")
    reference.spans[SPANS_KEY] = [Span(reference, 0, 1, label="protein")]
    examples = [Example(nlp.make_doc("IL-2 binds"), reference)]
    scorer = KeepingScorer(nlp=nlp)
    nlp.evaluate(examples, scorer=scorer)
    assert score_nested(scorer.examples, spans_key=SPANS_KEY)["spans_nested_f"] == 1.0
    assert score_nested(examples, spans_key=SPANS_KEY)["spans_nested_f"] == 0.0
    print("KeepingScorer keeps nlp.evaluate's predictions")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the scores are of the predictions, and exit")
    parser.add_argument("--documents", type=Path)
    parser.add_argument("--sentences", type=Path)
    parser.add_argument("--pipelines", nargs="+", metavar="NAME=PATH")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="first N docs (0: all)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="GPU to run on (-1: CPU)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.check:
        check_keeping_scorer()
        return
    if not (args.documents and args.sentences and args.pipelines):
        parser.error("--documents, --sentences and --pipelines are required")
    torch.set_num_threads(args.threads)
    if args.gpu_id >= 0:
        spacy.require_gpu(args.gpu_id)
    rows: List[Dict[str, Any]] = []
    for item in args.pipelines:
        name, path = item.split("=", 1)
        rows.extend(score_ways(name, Path(path), args.documents, args.sentences, args.ways,
                               args.limit))
    report_lines = markdown(rows, args)
    print("\n".join(report_lines))
    write_table(args.out, rows, ["# GENIA dev in its abstracts and as sentences", ""]
                + report_lines)

if __name__ == "__main__":
    main()
