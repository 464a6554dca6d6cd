"""Silver labels for self-training (#52): a pipeline trained on a GENIA subset labels sentences
of the other corpora with GENIA's labels, and a student trains on the subset and these
sentences together (``--write-config``).

The sentences are drawn, seeded, from the named corpora's train files in proportion to their
sizes, and read on the corpus's own tokens (a Doc built from them, so the pipeline's tokenizer
is not used). Each written record holds the tokens, the pipeline's entities and
``"labels"``: the pipeline's labels, so the student is taught them on these sentences and
nothing of the corpus's own labels.

    python bench/curves/silver.py WORK/teacher_10_tuned ../shared/data/biomed-ner \\
        --corpora bc2gm,bionlp11epi --sentences 6000 --seed 0 --out WORK/silver.jsonl \\
        --write-config configs/mrc_packed_cpu.cfg=WORK/student.cfg \\
        --gold-weight 1 --silver-weight 1

The student's gold file stays the config's own ``${paths.train}`` unless ``--gold`` names one.
With ``--start-from PIPELINE`` the written configs start from that pipeline's weights (the
teacher's: the student trains on from where the teacher ended); with ``--silver-weight 0``
they read the gold file alone (the same continued training without silver, its control).
"""
import argparse
import json
import random
from pathlib import Path
from typing import Dict, List, Optional

import spacy
import srsly
from spacy.tokens import Doc
from spacy.util import load_config

from spacy_nested_mrc.files import open_bytes


def read_corpus(path: Path) -> List[List[str]]:
    """The token lists of a JSON Lines file (plain or gzipped)."""
    with open_bytes(path) as handle:
        return [json.loads(line)["tokens"] for line in handle if line.strip()]


def draw(root: Path, names: List[str], n: int, seed: int) -> List[Dict]:
    """n sentences drawn from the corpora in proportion to their sizes, without repeats."""
    pool = []
    for name in names:
        pool.extend({"corpus": name, "tokens": tokens}
                    for tokens in read_corpus(root / name / "train.jsonl.gz") if tokens)
    rng = random.Random(seed)
    return rng.sample(pool, min(n, len(pool)))


def teacher_labels(pipeline: str) -> List[str]:
    """The pipeline's labels in label-id order, as its pipe saved them."""
    return list(srsly.read_json(Path(pipeline) / "nested_mrc_ner" / "cfg")["labels"])


def label(pipeline: str, records: List[Dict], spans_key: str, batch_size: int) -> List[Dict]:
    """The records with the pipeline's entities and its labels, as the student reads them."""
    nlp = spacy.load(pipeline)
    labels = sorted(nlp.get_pipe("nested_mrc_ner").labels)
    docs = (Doc(nlp.vocab, words=record["tokens"]) for record in records)
    labelled = []
    for record, doc in zip(records, nlp.pipe(docs, batch_size=batch_size)):
        entities = [{"start": span.start, "end": span.end, "type": span.label_}
                    for span in doc.spans[spans_key]]
        labelled.append({"tokens": record["tokens"], "entities": entities, "labels": labels,
                         "corpus": record["corpus"]})
    return labelled


def write_config(base: Path, gold: str, silver: Path, weights: Dict[str, float], size: int,
                 start_from: Optional[Path], labels: List[str], out: Path) -> None:
    """base with its train corpus replaced by the gold and silver files drawn at weights (the
    gold file alone where the silver weight is 0), starting from the pipeline start_from's
    weights where given (``start_from.v1``: the teacher's, to train on from where it ended)."""
    config = load_config(base, interpolate=False)
    train = dict(config["corpora"]["train"])
    if weights["silver"] > 0:
        config["corpora"]["train"] = {
            "@readers": "spacy-nested-mrc.MixedCorpus.v1",
            "weights": weights,
            "size": size,
            "seed": 0,
            "corpora": {
                "gold": {**train, "path": gold},
                "silver": {**train, "path": str(silver.resolve()), "limit": 0},
            },
        }
    else:
        config["corpora"]["train"] = {**train, "path": gold}
    if start_from is not None:
        config["initialize"]["after_init"] = {
            "@callbacks": "spacy-nested-mrc.start_from.v1",
            "path": str(start_from.resolve()),
            "labels": labels,
            "component": "nested_mrc_ner",
        }
    out.parent.mkdir(parents=True, exist_ok=True)
    config.to_disk(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline", help="the trained (tuned) teacher pipeline")
    parser.add_argument("corpora_root", type=Path, help="../shared/data/biomed-ner")
    parser.add_argument("--corpora", help="comma-separated corpus folders (to label)")
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spans-key", default="nested")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--write-config", action="append", default=[], metavar="BASE=OUT",
                        help="write OUT: the training config BASE with the student's train "
                             "corpus (repeat)")
    parser.add_argument("--gold", default="${paths.train}",
                        help="the gold train file of the student's config")
    parser.add_argument("--gold-weight", type=float, default=1.0)
    parser.add_argument("--silver-weight", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=0,
                        help="examples a pass of the student's reader (0: all together)")
    parser.add_argument("--start-from", type=Path,
                        help="a trained pipeline (the teacher) the written configs start from")
    parser.add_argument("--configs-only", action="store_true",
                        help="label nothing: write the --write-config files around the silver "
                             "file already at --out")
    args = parser.parse_args()
    if args.configs_only:
        if not args.out.exists():
            raise SystemExit(f"--configs-only needs the silver file at {args.out}")
    elif not args.corpora:
        raise SystemExit("--corpora names the corpora to label (or give --configs-only)")
    else:
        records = draw(args.corpora_root, args.corpora.split(","), args.sentences, args.seed)
        labelled = label(args.pipeline, records, args.spans_key, args.batch_size)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(r) + "\n" for r in labelled), encoding="utf8")
        mentions = sum(len(r["entities"]) for r in labelled)
        print(f"wrote {len(labelled)} sentences, {mentions} silver mentions, to {args.out}")
    labels = teacher_labels(args.pipeline) if args.start_from is not None else []
    for pair in args.write_config:
        base, _, out = pair.partition("=")
        if not out:
            raise SystemExit(f"--write-config takes BASE=OUT, got {pair!r}")
        write_config(Path(base), args.gold, args.out,
                     {"gold": args.gold_weight, "silver": args.silver_weight}, args.size,
                     args.start_from, labels, Path(out))
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
