"""GENIA dev as written against dev as the JSON Lines files hold it (tokens joined by single
spaces, so each annotation boundary inside a word is a space: ``Ras /protein``), through
``spacy evaluate``'s protocol, for trained pipelines: with their own tokenizer and with
spaCy's default English one. Both dev files come from one reading of the official XML
(``read_genia_xml(..., spaces=True)``, the dev split of ``genia_split``), dev as joined tokens
being its records without ``"spaces"``: the same sentences, tokens and entities, so the rows
differ only in the text a pipeline reads.

    python bench/raw_spacing.py ../shared/data/genia/raw/GENIAcorpus3.02.train_dev.xml.gz \\
        bench/work_curve/teacher_10_tuned --out bench/results/data_genia/raw_spacing
"""
import argparse
import json
import tempfile
from pathlib import Path

from benchlib.outputs import write_table
from benchlib.scoring import score_pipeline

from spacy_nested_mrc.corpora.genia_xml import genia_split, read_genia_xml
from spacy_nested_mrc.corpora.jsonl import convert

TOKENIZERS = {"own": None, "spacy_default": {"@tokenizers": "spacy.Tokenizer.v1"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xml", type=Path, help="the GENIA 3.02 XML (train and dev sentences)")
    parser.add_argument("pipelines", nargs="+", help="trained pipelines")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        written = [r for i, r in enumerate(read_genia_xml(args.xml, spaces=True))
                   if genia_split(i) == "dev"]
        joined = [{k: v for k, v in r.items() if k != "spaces"} for r in written]
        dev = {}
        for text, records in (("joined", joined), ("written", written)):
            lines = Path(tmp) / f"dev_{text}.jsonl"
            lines.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                             encoding="utf-8")
            dev[text] = str(Path(tmp) / f"dev_{text}.spacy")
            convert(lines, dev[text], show_progress=False, group_by=None)
        for pipeline in args.pipelines:
            for text, tokenizer in (("joined", "own"), ("written", "own"),
                                    ("written", "spacy_default")):
                scored = score_pipeline(pipeline, dev[text], "nested", args.batch_size,
                                        TOKENIZERS[tokenizer])
                rows.append({"pipeline": pipeline, "text": text, "tokenizer": tokenizer,
                             **scored})
                print(rows[-1], flush=True)
    lines = [
        "# GENIA dev as written against its tokens joined by spaces, through `spacy "
        "evaluate`'s protocol",
        "",
        "| pipeline | dev text | tokenizer | P | R | F1 | F1 (spaCy's scorer) | predicted "
        "spans not on gold tokens |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| `{r['pipeline']}` | {r['text']} | {r['tokenizer']} | {r['ours']['p']:.2f} | "
          f"{r['ours']['r']:.2f} | {r['ours']['f']:.2f} | {r['spacy']['f']:.2f} | "
          f"{r['unaligned_spans']} |" for r in rows),
        "",
        "F1: our scorer (exact characters); `own`: the pipeline's tokenizer, `spacy_default`: "
        "spaCy's English tokenizer with its hyphen rules.",
    ]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
