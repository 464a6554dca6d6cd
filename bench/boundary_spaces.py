"""Where GENIA's annotation boundaries fall inside a word of the raw text: the spaces that the
JSON Lines text adds. The JSON Lines records split tokens at whitespace and at every ``cons``
boundary, and a converted doc's text is its tokens joined by single spaces, so a boundary
inside a word (``Ras/protein kinase C``, ``Ras`` a protein) is a space in the text a pipeline
reads in ``spacy evaluate``, where raw text has none. This counts, over the official XML's
sentences, the boundaries inside words (no whitespace and no sentence edge on either side),
those of the five types' entities among them, and the characters beside them.

    python bench/boundary_spaces.py ../shared/data/genia/raw/GENIAcorpus3.02.train_dev.xml.gz \\
        --out bench/results/data_genia/boundary_spaces
"""
import argparse
from collections import Counter
from pathlib import Path

from benchlib.outputs import write_table

from spacy_nested_mrc.corpora.genia_xml import read_genia_xml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", type=Path, help="GENIA 3.02 XML (.xml, .xml.gz or the .tgz)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sentences = words_split = every = entity = 0
    beside: Counter = Counter()
    # the converter's records with their spacing: tokens are split at whitespace and at every
    # cons boundary, so a token boundary without a space is a cons boundary inside a word
    for record in read_genia_xml(args.xml, spaces=True):
        sentences += 1
        tokens, spaces = record["tokens"], record["spaces"]
        cuts = {i for i in range(1, len(tokens)) if not spaces[i - 1]}
        kept = {at for e in record["entities"] for at in (e["start"], e["end"]) if at in cuts}
        every += len(cuts)
        entity += len(kept)
        words_split += bool(cuts)
        for at in kept:
            left, right = tokens[at - 1][-1], tokens[at][0]
            beside[left if not left.isalnum() else right if not right.isalnum()
                   else "letter|letter"] += 1
    rows = [{"sentences": sentences, "sentences_with_one": words_split,
             "inside_words": every, "of_entities": entity,
             "beside": dict(beside.most_common())}]
    lines = [
        f"# GENIA `cons` boundaries inside words of the raw text ({args.xml.name})",
        "",
        "| sentences | sentences with one | boundaries inside words | of the five types' "
        "entities |",
        "|---|---|---|---|",
        f"| {sentences:,} | {words_split:,} | {every:,} | {entity:,} |",
        "",
        "The entities' boundaries inside words by the character beside them (the one that is "
        "not a letter or digit; `letter|letter` where both are):",
        "",
        "| character | boundaries |",
        "|---|---|",
        *(f"| `{char}` | {n:,} |" for char, n in beside.most_common(15)),
    ]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
