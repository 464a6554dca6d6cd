"""Where a pipeline's dev F1 through spaCy's tokenizer (``spacy evaluate``'s protocol) and on
the corpus's own tokens (``--gold-preproc``) part: the same pipeline predicts dev both ways,
and the spans found only one way are listed with whether they are gold. GENIA's tokens are
whitespace-split and split at every annotation boundary, so a span with a boundary inside one
of them (``IL-6`` in ``IL-6/interferon-gamma``) can never be gold; with spaCy's finer tokens a
pipeline can predict it, and our scorer counts it as a false positive.

    python bench/curves/token_gap.py PIPELINE bench/work_curve/dev.spacy --out OUT
"""
import argparse
import json
from pathlib import Path

import spacy
from spacy.tokens import Doc, DocBin


def char_spans(doc: Doc, key: str) -> set:
    return {(s.start_char, s.end_char, s.label_) for s in doc.spans.get(key, [])}


def aligned(ref: Doc, start: int, end: int) -> bool:
    """RETURNS (bool): whether characters [start, end) begin and end at the corpus's tokens."""
    return (start in {t.idx for t in ref}) and (end in {t.idx + len(t) for t in ref})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("dev", help="a .spacy DocBin of dev, a doc a sentence")
    parser.add_argument("--key", default="nested")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    args = parser.parse_args()
    nlp = spacy.load(args.pipeline)
    refs = list(DocBin().from_disk(args.dev).get_docs(nlp.vocab))
    ways = {
        "spaCy's tokenizer": nlp.pipe([ref.text for ref in refs], batch_size=args.batch_size),
        "the corpus's tokens": nlp.pipe(
            [Doc(nlp.vocab, words=[t.text for t in ref], spaces=[bool(t.whitespace_) for t in ref])
             for ref in refs], batch_size=args.batch_size),
    }
    found = {way: [char_spans(doc, args.key) for doc in docs] for way, docs in ways.items()}
    gold = [char_spans(ref, args.key) for ref in refs]
    n_gold = sum(len(g) for g in gold)
    rows, only = [], {}
    for way, spans in found.items():
        tp = sum(len(s & g) for s, g in zip(spans, gold))
        predicted = sum(len(s) for s in spans)
        p, r = tp / max(predicted, 1), tp / max(n_gold, 1)
        rows.append({"way": way, "tp": tp, "predicted": predicted, "p": p, "r": r,
                     "f": 2 * p * r / (p + r) if p + r else 0.0})
        other = [o for w, o in found.items() if w != way][0]
        only[way] = [{"text": ref.text[s:e], "label": label, "gold": (s, e, label) in g,
                      "inside_a_token": not aligned(ref, s, e)}
                     for ref, mine, theirs, g in zip(refs, spans, other, gold)
                     for s, e, label in sorted(mine - theirs)]
    report = {"pipeline": args.pipeline, "dev": args.dev, "n_gold": n_gold, "rows": rows,
              "only": only}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [f"# {args.pipeline} on {args.dev} ({n_gold} gold entities), our scorer", "",
             "| tokens | true positives | predicted | P | R | F1 |", "|---|---|---|---|---|---|"]
    lines += [f"| {row['way']} | {row['tp']} | {row['predicted']} | {100 * row['p']:.2f} | "
              f"{100 * row['r']:.2f} | {100 * row['f']:.2f} |" for row in rows]
    for way, spans in only.items():
        lines += ["", f"Found only with {way}: {len(spans)} spans, "
                      f"{sum(s['gold'] for s in spans)} of them gold, "
                      f"{sum(s['inside_a_token'] for s in spans)} with a boundary inside one "
                      "of the corpus's tokens. The first 30:", ""]
        lines += [f"- `{s['text']}` {s['label']}{' (gold)' if s['gold'] else ''}"
                  for s in spans[:30]]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:6]))


if __name__ == "__main__":
    main()
