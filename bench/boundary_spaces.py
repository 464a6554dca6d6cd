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
from contextlib import ExitStack
from pathlib import Path
from typing import Set

from benchlib.outputs import write_table

# the parser and the flattening of the converter itself, so the text and offsets are its own
from spacy_nested_mrc.corpora.genia_xml import _flatten, _open_source, _parse, genia_type


def inside_word(text: str, at: int) -> bool:
    """Whether offset ``at`` of ``text`` lies between two characters that are not spaces."""
    return 0 < at < len(text) and not text[at - 1].isspace() and not text[at].isspace()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", type=Path, help="GENIA 3.02 XML (.xml, .xml.gz or the .tgz)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sentences = words_split = 0
    every: Set = set()
    entity: Set = set()
    beside: Counter = Counter()
    with ExitStack() as stack:
        for event, element in _parse(_open_source(args.xml, stack), args.xml):
            if event != "end" or element.tag != "sentence":
                continue
            sentences += 1
            text, cons = _flatten(element)
            element.clear()
            cuts = {at for c in cons for at in (c.start, c.end) if inside_word(text, at)}
            kept = {at for c in cons if genia_type(c.sem)
                    for at in (c.start, c.end) if inside_word(text, at)}
            every |= {(sentences, at) for at in cuts}
            entity |= {(sentences, at) for at in kept}
            words_split += len(cuts) > 0
            beside.update(text[at - 1] if not text[at - 1].isalnum() else text[at]
                          if not text[at].isalnum() else "letter|letter" for at in kept)
    rows = [{"sentences": sentences, "sentences_with_one": words_split,
             "inside_words": len(every), "of_entities": len(entity),
             "beside": dict(beside.most_common())}]
    lines = [
        f"# GENIA `cons` boundaries inside words of the raw text ({args.xml.name})",
        "",
        "| sentences | sentences with one | boundaries inside words | of the five types' "
        "entities |",
        "|---|---|---|---|",
        f"| {sentences:,} | {words_split:,} | {len(every):,} | {len(entity):,} |",
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
