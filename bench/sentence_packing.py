"""Reading sentence by sentence at the cost of windows: several sentences in one encoder
sequence (``pack_wordpieces``, each attending to its own questions and itself) against one
sentence a sequence and against the old windows (the text read as one, ``split_sentences =
false``), timed interleaved on one thread with untrained pipelines built from the shipped CPU
configs (initialized on a few GENIA sentences, as ``spacy train`` would before its first step).

    OMP_NUM_THREADS=1 python bench/sentence_packing.py --train ../shared/data/genia/train.jsonl \\
        --dev ../shared/data/genia/dev.jsonl \\
        --out bench/results/sentence_packing_cpu_minilm/sentence_packing_cpu_minilm

Cases: the packed MRC (``configs/mrc_packed_cpu.cfg``) over the first ``--abstracts`` GENIA
dev abstract fragments (dev sentences grouped by their "doc" field, each fragment one raw
text), and the per-label MRC (``configs/mrc_cpu.cfg``) over one raw document of
``--sentences`` short GENIA dev sentences (at most ``--short-tokens`` tokens each, in order,
repeated if too few). The readings, switched on the same pipeline between runs:

- ``packed_N``: sentence by sentence (the pipe finds the sentences), packed into sequences
  of up to N wordpieces (``pack_wordpieces = N``, one per ``--pack-wordpieces``);
- ``alone``: sentence by sentence, one sentence a sequence (``pack_wordpieces = 0``);
- ``windows``: the text as one, in windows of the whole room (``split_sentences = false``);
- with ``--apart``, ``apart_packed_N`` and ``apart_alone``: the same with the questions read
  apart from the text (``questions.attend_to_text = false``), where a sequence's sentences
  share one copy of its questions (a model trained that way reads so; an untrained one times
  the same arithmetic).

Each round runs every reading once, in turn; the ratios are taken within a round (so a busy
machine slows the readings of a round alike) and given as median [min, max]. Every packed
reading must predict the spans of ``alone`` (``apart_packed_N``: of ``apart_alone``;
checked, with the largest score difference). Untrained heads find few spans;
``--heads-noise S`` draws the heads' weights from N(0, S) (seeded), so that many spans are
found and the check has something to compare (the timings are then of that many spans).
"""
import argparse
import statistics
from dataclasses import replace
from typing import Any, Callable, Dict, List

from benchlib.configs import CONFIGS
from benchlib.data import abstracts, read_records
from benchlib.outputs import write_table
from benchlib.speed import interleaved

ALONE, WINDOWS, APART = "alone", "windows", "apart_"


def short_document(dev: str, n_sentences: int, max_tokens: int) -> str:
    """``n_sentences`` GENIA dev sentences of at most ``max_tokens`` tokens, in order
    (repeated as needed), joined into one text."""
    short = [" ".join(r["tokens"]) for r in read_records(dev) if len(r["tokens"]) <= max_tokens]
    return " ".join((short * (n_sentences // max(1, len(short)) + 1))[:n_sentences])


def untrained(config_name: str, args: argparse.Namespace) -> Any:
    """The pipeline of a shipped CPU config, initialized on ``--init-limit`` train sentences."""
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    from spacy_nested_mrc.encoder.hf import resolve_encoder

    overrides = {"paths.train": args.train, "paths.dev": args.dev,
                 "paths.train_limit": args.init_limit,
                 "paths.encoder": resolve_encoder(args.encoder)}
    if args.precision:
        overrides["components.nested_mrc_ner.model.encoder.precision"] = args.precision
    return init_nlp(load_config(CONFIGS[config_name], overrides=overrides, interpolate=False),
                    use_gpu=-1)


def set_reading(nlp: Any, reading: str) -> None:
    """Switch the pipe to a reading: its ``split_sentences`` and its model's
    ``pack_wordpieces`` and ``attend_to_text`` (settings a config at load governs, set here
    between runs)."""
    from spacy_nested_mrc.types import SETTINGS

    pipe = nlp.get_pipe("nested_mrc_ner")
    apart = reading.startswith(APART)
    reading = reading[len(APART):] if apart else reading
    pipe.cfg["split_sentences"] = reading != WINDOWS
    budget = int(reading[len("packed_"):]) if reading.startswith("packed_") else 0
    blocks = pipe.model.attrs[SETTINGS]
    pipe.model.attrs[SETTINGS] = replace(
        blocks, windows=replace(blocks.windows, pack_wordpieces=budget),
        questions=replace(blocks.questions, attend_to_text=not apart))


def add_heads_noise(nlp: Any, scale: float) -> None:
    """Draw the heads' weights from N(0, scale), seeded: heads that find many spans."""
    import torch

    torch.manual_seed(0)
    heads = nlp.get_pipe("nested_mrc_ner").model.get_ref("heads").attrs["torch_module"]
    with torch.no_grad():
        for parameter in heads.parameters():
            parameter.normal_(0.0, scale)


def reader(nlp: Any, texts: List[str], reading: str, batch_size: int) -> Callable[[], Any]:
    def run() -> List[Any]:
        set_reading(nlp, reading)
        return list(nlp.pipe(texts, batch_size=batch_size))

    return run


def spans_of(docs: List[Any]) -> List[tuple]:
    return [(d, s.start_char, s.end_char, s.label_, float(score)) for d, doc in enumerate(docs)
            for s, score in zip(doc.spans["nested"], doc.spans["nested"].attrs["scores"])]


def case(name: str, nlp: Any, texts: List[str], args: argparse.Namespace) -> Dict[str, Any]:
    packed = [f"packed_{b}" for b in args.pack_wordpieces]
    readings = packed + [ALONE, WINDOWS]
    if args.apart:
        readings += [APART + reading for reading in packed] + [APART + ALONE]
    if args.heads_noise:
        add_heads_noise(nlp, args.heads_noise)
    runs = {reading: reader(nlp, texts, reading, args.batch_size) for reading in readings}
    found = {reading: spans_of(run()) for reading, run in runs.items()}  # also the warm-up
    checks = {}
    for reading in readings:
        if reading.endswith(ALONE) or reading == WINDOWS:
            continue
        checks[reading] = compare(found[reading],
                                  found[APART + ALONE if reading.startswith(APART) else ALONE])
    seconds = interleaved(runs, args.repeats, warm_up=False)
    return {"case": name, "texts": len(texts), "checks": checks,
            "tokens": sum(len(nlp.make_doc(t)) for t in texts),
            "seconds": {k: [round(v, 2) for v in vs] for k, vs in seconds.items()},
            "over_windows": {k: [t / w for t, w in zip(vs, seconds[WINDOWS])]
                             for k, vs in seconds.items()},
            "over_alone": {k: [t / a for t, a in zip(vs, seconds[ALONE])]
                           for k, vs in seconds.items()}}


def compare(got: List[tuple], alone: List[tuple]) -> Dict[str, Any]:
    """How a reading's spans (doc, start, end, label, score) compare with reading alone:
    whether they are the same, how many differ, the largest score difference of those
    found by both."""
    mine = {s[:4]: s[4] for s in got}
    theirs = {s[:4]: s[4] for s in alone}
    both = mine.keys() & theirs.keys()
    return {"same_spans": mine.keys() == theirs.keys(), "spans": len(theirs),
            "differing": len(mine.keys() ^ theirs.keys()),
            "max_score_difference": max((abs(mine[k] - theirs[k]) for k in both), default=0.0)}


def spread(values: List[float]) -> str:
    return f"{statistics.median(values):.2f}x [{min(values):.2f}, {max(values):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--abstracts", type=int, default=150)
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--short-tokens", type=int, default=12)
    parser.add_argument("--init-limit", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cases", nargs="+", default=["mrc_packed", "mrc"])
    parser.add_argument("--pack-wordpieces", type=int, nargs="+", default=[64, 128, 256],
                        help="the budgets of packed sequences to time")
    parser.add_argument("--apart", action="store_true",
                        help="also time the readings with the questions read apart")
    parser.add_argument("--heads-noise", type=float, default=0.0,
                        help="draw the heads' weights from N(0, S): many spans to compare")
    parser.add_argument("--precision", default=None,
                        help="the encoder's precision, over the config's (fp32: exact checks)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    texts = {"mrc_packed": abstracts(args.dev)[: args.abstracts],
             "mrc": [short_document(args.dev, args.sentences, args.short_tokens)]}
    rows = [case(name, untrained(name, args), texts[name], args) for name in args.cases]
    lines = ["| config | texts | tokens | reading | seconds | / windows | / alone "
             "| same spans as alone (spans, differing, max score diff of the common) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for reading, seconds in row["seconds"].items():
            check = row["checks"].get(reading)
            same = "" if check is None else (
                f"{check['same_spans']} ({check['spans']} spans, {check['differing']} "
                f"differing, {check['max_score_difference']:.2g})")
            lines.append(
                f"| {row['case']} | {row['texts']} | {row['tokens']} | {reading} "
                f"| {statistics.median(seconds):.2f} | {spread(row['over_windows'][reading])} "
                f"| {spread(row['over_alone'][reading])} | {same} |")
    lines += ["", f"{args.threads} thread(s), {args.repeats} interleaved rounds after a warm-up; "
              "seconds are medians, ratios median [min, max] of the rounds' own ratios; "
              f"heads' noise {args.heads_noise}; precision {args.precision or 'as configured'}."]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
