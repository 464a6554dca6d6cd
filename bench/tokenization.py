"""How spaCy's tokenizer meets GENIA's tokens: the text of each sentence (its tokens joined by
single spaces, as the JSON Lines files and their DocBins hold it) through ``nlp.make_doc``,
against the gold tokens: tokens split further, entities whose boundaries fall inside a spaCy
token (which a pipeline trained on spaCy's tokens can never predict), and the most common
splits; for spaCy's default English tokenizer and for ``spacy-nested-mrc.Tokenizer.v1`` with
``split_hyphens = false`` (the shipped configs'), side by side.

    python bench/tokenization.py ../shared/data/genia/train.jsonl ../shared/data/genia/dev.jsonl \
        --out bench/results/data_genia/tokenization_genia
"""
import argparse
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Dict

import spacy

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader, unaligned_spans

TOKENIZERS = {
    "spacy_default": {"@tokenizers": "spacy.Tokenizer.v1"},
    "keep_hyphens": {"@tokenizers": "spacy-nested-mrc.Tokenizer.v1", "split_hyphens": False},
}


def measure(path: str, lang: str, tokenizer: str) -> Dict[str, Any]:
    nlp = spacy.blank(lang, config={"nlp": {"tokenizer": TOKENIZERS[tokenizer]}})
    gold_tokens = spacy_tokens = sentences = changed = entities = split_entities = 0
    lost: Counter = Counter()
    splits: Counter = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NMW003 is what this script counts itself
        for eg in create_jsonl_reader(Path(path))(nlp):
            sentences += 1
            gold_tokens += len(eg.reference)
            spacy_tokens += len(eg.predicted)
            changed += len(eg.reference) != len(eg.predicted)
            starts = {t.idx for t in eg.predicted}
            for token in eg.reference:
                inner = [i for i in range(token.idx + 1, token.idx + len(token)) if i in starts]
                if inner:
                    splits[token.text] += 1
            group = eg.reference.spans.get("nested", [])
            entities += len(group)
            for span in group:
                pieces = eg.predicted.char_span(span.start_char, span.end_char)
                split_entities += pieces is not None and len(pieces) != len(span)
            for span in unaligned_spans(eg.reference, eg.predicted, "nested"):
                lost[span.label_] += 1
    return {
        "file": path,
        "tokenizer": tokenizer,
        "sentences": sentences,
        "sentences_tokenized_otherwise": changed,
        "gold_tokens": gold_tokens,
        "spacy_tokens": spacy_tokens,
        "entities": entities,
        "entities_not_aligned": sum(lost.values()),
        "not_aligned_by_label": dict(lost),
        "entities_with_more_spacy_tokens": split_entities,
        "most_split_tokens": splits.most_common(15),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    results = [measure(path, args.lang, name) for name in TOKENIZERS for path in args.files]
    lines = ["| tokenizer | file | sentences | retokenized | gold tokens | spaCy tokens | entities "
             "| not aligned | entities in more tokens |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r['tokenizer']} | {Path(r['file']).name} | {r['sentences']} "
            f"| {r['sentences_tokenized_otherwise']} "
            f"| {r['gold_tokens']} | {r['spacy_tokens']} | {r['entities']} "
            f"| {r['entities_not_aligned']} | {r['entities_with_more_spacy_tokens']} |")
    for r in results[:: len(args.files)]:
        lines += ["", f"Gold tokens {r['tokenizer']} splits most often in {Path(r['file']).name}: "
                  + ", ".join(f"`{t}` {n}" for t, n in r["most_split_tokens"]) + "."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(results, indent=2))
        Path(f"{args.out}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
