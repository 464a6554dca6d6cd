"""A training config made of two others, for the spancat rows of the learning curves (#52):
spaCy's spancat (``bench/configs/spancat_cpu.cfg``) trained on the intermediate corpora as the
packed MRC's intermediate reads them (``configs/mrc_biomed_cpu.cfg``'s ``[corpora]`` and
``paths.biomed``), and then on GENIA with its transformer taken from that training
(``[components.transformer] source``, a fresh spancat for GENIA's labels: spancat cannot
change its labels once trained). spaCy's spancat has no notion of a record's own label set,
so on the intermediate corpora it learns every label a corpus does not annotate as "no
entity": that is the comparison #52 asks for ("where it can take it").

    python bench/curves/compose_config.py bench/configs/spancat_cpu.cfg \\
        --corpora-from configs/mrc_biomed_cpu.cfg --out WORK/spancat_biomed.cfg
    python bench/curves/compose_config.py bench/configs/spancat_cpu.cfg \\
        --source transformer=WORK/spancat_biomed_1000/model-last --out WORK/spancat_from_biomed.cfg
"""
import argparse
from pathlib import Path

from spacy.util import load_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the config to start from")
    parser.add_argument("--corpora-from", default=None,
                        help="a config whose [corpora] (and the paths they name) replace base's")
    parser.add_argument("--source", action="append", default=[], metavar="COMPONENT=PIPELINE",
                        help="take COMPONENT from a trained PIPELINE (repeat)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    config = load_config(args.base, interpolate=False)
    if args.corpora_from:
        other = load_config(args.corpora_from, interpolate=False)
        config["corpora"] = other["corpora"]
        for name, value in other["paths"].items():
            config["paths"].setdefault(name, value)
    for item in args.source:
        component, _, pipeline = item.partition("=")
        if component not in config["components"]:
            raise SystemExit(f"{args.base} has no component {component!r}")
        config["components"][component] = {"source": str(Path(pipeline).resolve())}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    config.to_disk(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
