"""Inference speed against the right floor: trained pipelines through ``nlp.pipe`` on GENIA dev
sentences, beside the bare encoder over the same sentences sorted by length (the floor) and in
input order (the older reference), in one process, interleaved, best of ``--repeats``.

Each pipeline runs twice: as configured (the encoder runs a batch's windows by length, in calls
of at most ``max_pass_tokens`` padded wordpieces) and with ``max_pass_tokens = 0`` (one call per
pass in the batch's order, as before prediction by length), and the two must write the same
spans with the same scores (to 1e-5). The packed MRC's floor counts the sentences' own
wordpieces only, not its questions' (about 10 a sequence with index questions).

    python bench/encoder_floor.py --dev ../shared/data/genia/dev.jsonl \\
        --pipelines mrc_packed=PATH locate_label=PATH \\
        --out bench/results/speed_cpu_minilm/encoder_floor_cpu_minilm
"""

import argparse
import statistics
from typing import Any, Callable, Dict, List, Tuple

import spacy
import torch
from benchlib.configs import budget_key, load_overrides
from benchlib.data import read_texts
from benchlib.outputs import write_table
from benchlib.pipelines import add_pipeline_arguments, predictions, same_predictions
from benchlib.speed import bare_encoder, interleaved
from spacy.util import dot_to_dict

from spacy_nested_mrc.annotate.loading import load_annotator


def onnx_encoder(name: str, quantize: bool = False, by_length: bool = False):
    """``benchlib.speed.bare_encoder`` in ONNX Runtime: the encoder exported as the pipelines'
    ``runtime = "onnxruntime"`` exports it (int8 with ``quantize``, as ``quantize = "int8"``
    does), over the sentences sorted by length or not."""
    import numpy as np
    import onnxruntime
    from transformers import AutoModel, AutoTokenizer

    from spacy_nested_mrc.encoder.hf import resolve_encoder
    from spacy_nested_mrc.encoder.onnx import export_encoder

    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(name))
    transformer = AutoModel.from_pretrained(resolve_encoder(name)).eval()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = onnxruntime.InferenceSession(export_encoder(transformer, quantize), options,
                                           providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def run(docs, batch_size: int) -> None:
        words = [[t.text for t in d] for d in docs]
        if by_length:
            lengths = [len(w) for w in tokenizer(words, is_split_into_words=True)["input_ids"]]
            words = [words[k] for k in sorted(range(len(words)), key=lengths.__getitem__)]
        for i in range(0, len(words), batch_size):
            batch = tokenizer(words[i : i + batch_size], is_split_into_words=True,
                              padding=True, truncation=True, return_tensors="np")
            session.run(None, {k: v.astype(np.int64) for k, v in batch.items() if k in names})

    return run


def read_gold(path: str, limit: int) -> List[set]:
    """Per sentence, its gold spans (start, end, label) in the file's tokens, which the
    pipelines' tokenizer keeps on these texts where it agrees (a span it cannot align counts
    as missed, as ``nlp(text)`` meets it)."""
    import srsly

    gold = []
    for record in srsly.read_jsonl(path):
        gold.append({(e["start"], e["end"], e["type"]) for e in record["entities"]})
        if len(gold) == limit:
            break
    return gold


def against(a: List[Tuple[list, list]], b: List[Tuple[list, list]], gold: List[set]
            ) -> Dict[str, Any]:
    """How the predictions ``b`` compare with ``a`` (the same pipeline in fp32): the share
    of spans both write, the largest score difference on those, and each one's F1 on the
    gold spans (token offsets of the spaCy tokenization of the joined tokens)."""
    both = union = 0
    worst = 0.0
    for (spans_a, scores_a), (spans_b, scores_b) in zip(a, b):
        sa, sb = dict(zip(spans_a, scores_a)), dict(zip(spans_b, scores_b))
        both += len(set(sa) & set(sb))
        union += len(set(sa) | set(sb))
        worst = max([worst, *(abs(sa[k] - sb[k]) for k in set(sa) & set(sb))])

    def f1(predicted: List[Tuple[list, list]]) -> float:
        found = sum(len(set(spans)) for spans, _ in predicted)
        right = sum(len(set(spans) & g) for (spans, _), g in zip(predicted, gold))
        total = sum(len(g) for g in gold)
        return 200 * right / (found + total) if found + total else 0.0

    return {"identical_spans": both / max(union, 1), "max_score_difference": worst,
            "f1_reference": f1(a), "f1": f1(b)}


def spread(row: Dict[str, Any], seconds: Dict[str, List[float]]) -> str:
    """The median and the lowest of a run's x floor over the rounds, each round's time set
    against its floor's time in that round (rounds interleave the runs)."""
    ratios = sorted(f / t for t, f in zip(seconds[row["system"]], seconds[row["floor"]]))
    return f"{statistics.median(ratios):.2f}, {ratios[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pipeline_arguments(parser)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--runtime", default="torch", choices=["torch", "onnxruntime"],
                        help="onnxruntime: every encoder, the floor's too, in ONNX Runtime")
    parser.add_argument("--quantize", default=None, choices=["int8"],
                        help="int8: every encoder, the floor's too, with int8 weights")
    parser.add_argument("--precisions", nargs="+", default=["fp32"], choices=["fp32", "bf16"],
                        help="run every encoder, the floor's too, in each (torch runtime); "
                        "each pipeline beside the floor of its own precision")
    parser.add_argument("--floor-pass-tokens", type=int, default=0,
                        help="also time the floor in calls of at most this many padded "
                        "wordpieces, the pipes' max_pass_tokens cut (torch runtime); each "
                        "pipeline is then set against the faster of its precision's floors")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = read_texts(args.dev, args.sentences)
    int8 = args.quantize == "int8"
    blank = spacy.blank("en")
    docs = [blank.make_doc(text) for text in texts]
    floor = onnx_encoder if args.runtime == "onnxruntime" else bare_encoder
    runtime = None if args.runtime == "torch" else args.runtime
    several = len(args.precisions) > 1
    floors: Dict[str, str] = {}  # run label -> its floor's label
    floors_of: Dict[str, List[str]] = {}  # a floor's label -> the floors it is the faster of
    runs: Dict[str, Callable[[], Any]] = {}
    checks: Dict[str, Dict[str, Any]] = {}
    outputs: Dict[Tuple[str, str], List[Tuple[list, list]]] = {}
    for p, precision in enumerate(args.precisions):
        tag = f" [{precision}]" if several else ""
        floor_label = f"bare encoder, sorted by length (floor){tag}"
        options = {"precision": precision} if precision != "fp32" else {}
        runs[floor_label] = lambda run=floor(args.encoder, quantize=int8, by_length=True,
                                             **options): run(docs, args.batch_size)
        floors[floor_label] = floor_label
        if args.floor_pass_tokens and args.runtime == "torch":
            cut = (f"bare encoder, sorted by length, calls of at most {args.floor_pass_tokens} "
                   f"wordpieces (floor){tag}")
            runs[cut] = lambda run=bare_encoder(args.encoder, quantize=int8, by_length=True,
                                                pass_tokens=args.floor_pass_tokens,
                                                **options): run(docs, args.batch_size)
            floors[cut] = cut
            floors_of[floor_label] = [floor_label, cut]
        if p == 0:
            label = f"bare encoder, input order{tag}"
            runs[label] = lambda run=floor(args.encoder, quantize=int8, **options): run(
                docs, args.batch_size)
            floors[label] = floor_label
        for item in args.pipelines:
            name, path = item.split("=", 1)
            overrides = load_overrides(args.set, name)
            key = budget_key(path)
            if key is None:
                if p == 0:
                    nlp = spacy.load(path, config=overrides)
                    runs[name] = lambda nlp=nlp: list(nlp.pipe(texts, batch_size=args.batch_size))
                    floors[name] = floor_label
                continue
            chosen = precision if several or precision != "fp32" else None
            by_length = load_annotator(path, quantize=args.quantize, runtime=runtime,
                                       config=dot_to_dict(overrides), precision=chosen)
            variants = [(f"{name}, by length{tag}", by_length)]
            outputs[(name, precision)] = predictions(by_length, texts, args.batch_size)
            if p == 0:
                one_call = load_annotator(path, quantize=args.quantize, runtime=runtime,
                                          config=dot_to_dict({**overrides, key: 0}),
                                          precision=chosen)
                checks[name] = same_predictions(outputs[(name, precision)],
                                                predictions(one_call, texts, args.batch_size))
                variants.append((f"{name}, one call a pass{tag}", one_call))
            else:
                checks[f"{name}{tag} against {args.precisions[0]}"] = against(
                    outputs[(name, args.precisions[0])], outputs[(name, precision)],
                    read_gold(args.dev, args.sentences))
            for label, nlp in variants:
                runs[label] = lambda nlp=nlp: list(nlp.pipe(texts, batch_size=args.batch_size))
                floors[label] = floor_label
    seconds = interleaved(runs, args.repeats)
    rows = []
    for label, times in seconds.items():
        speed = len(texts) / min(times)
        own = floors[label]
        if label not in floors_of.get(own, [own]):  # a pipeline: the faster floor
            own = min(floors_of.get(own, [own]), key=lambda f: min(seconds[f]))
        own_floor = len(texts) / min(seconds[own])
        rows.append({"system": label, "sentences_per_s": speed, "x_floor": speed / own_floor,
                     "floor": own, "seconds": times,
                     "spread_s": [min(times), statistics.median(times), max(times)]})
    lines = [
        f"# Inference against the length-sorted encoder: {len(texts)} GENIA dev sentences, "
        f"batches of {args.batch_size}, {args.threads} threads, best of {args.repeats}, "
        f"encoders in {args.runtime}{', int8' if int8 else ''}"
        f"{', ' + ' and '.join(args.precisions) if several else ''}",
        "",
        "| system | sentences/s | x floor (of its precision) | x floor, median and slowest "
        "repeats |",
        "|---|---|---|---|",
        *[f"| {r['system']} | {r['sentences_per_s']:.1f} | {r['x_floor']:.2f} | "
          f"{spread(r, seconds):s} |" for r in rows],
        "",
        "x floor: best repeat over the best repeat of the floor (the faster floor of its "
        "precision for a pipeline); the spread sets each repeat against the floor's repeat of "
        "the same round.",
        "",
        "Predictions by length against one call a pass (spans equal; largest score difference),",
        "and of each precision against the first (identical spans; F1 on these sentences):",
        "",
        *[f"- {name}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                    for k, v in c.items()) for name, c in checks.items()],
    ]
    write_table(args.out, [*rows, {"checks": checks}], lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
