"""Evaluation a person can read: P/R/F overall and per type, nested vs non-nested recall,
F1 by entity length, errors by kind with examples; as JSON, Markdown and PNG plots.

Spans are compared exactly (start and end character, label), as by the registered scorer,
whose overall numbers this report repeats; the predicted doc may be tokenized otherwise than
the gold one (``spacy evaluate``, or our reader's default). Lengths are counted in gold tokens.
"""
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
from spacy.scorer import PRFScore
from spacy.training import Example

from ..scoring.scorer import char_spans, score_nested
from ..types import DEFAULT_SPANS_KEY

LENGTH_BUCKETS: Tuple[Tuple[str, int, int], ...] = (
    ("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4", 4, 4), ("5-9", 5, 9), ("10+", 10, 10**9),
)
ERROR_KINDS = ("wrong_boundary", "wrong_type", "wrong_boundary_and_type", "missed", "spurious")


def length_bucket(length: int) -> str:
    """RETURNS (str): the name of the length bucket of a span of ``length`` tokens."""
    return next(name for name, low, high in LENGTH_BUCKETS if low <= length <= high)


@dataclass
class ErrorExample:
    kind: str
    sentence: str
    gold: Optional[Tuple[str, str]]
    predicted: Optional[Tuple[str, str]]


@dataclass
class Report:
    """What ``evaluate_examples`` finds. ``scores`` holds the registered scorer's numbers."""

    scores: Dict[str, Any]
    by_length: Dict[str, Dict[str, float]]
    errors: Dict[str, int]
    examples: List[ErrorExample] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "scores": self.scores,
            "by_length": self.by_length,
            "errors": self.errors,
            "error_examples": [vars(e) for e in self.examples],
        }


def evaluate_examples(
    examples: Iterable[Example], spans_key: str = DEFAULT_SPANS_KEY, max_examples: int = 20
) -> Report:
    """Score predicted against gold spans and classify the errors.

    An unmatched predicted span is a wrong type when a gold span has its boundaries, a wrong
    boundary when it overlaps a gold span of its type, wrong boundary and type when it
    overlaps only gold spans of other types, else spurious. A gold span that no prediction
    overlaps is missed.
    RETURNS (Report): the report.
    """
    examples = list(examples)
    scores = score_nested(examples, spans_key=spans_key)
    by_length: Dict[str, PRFScore] = defaultdict(PRFScore)
    errors: Counter = Counter({kind: 0 for kind in ERROR_KINDS})
    samples: List[ErrorExample] = []
    for eg in examples:
        gold = char_spans(eg.reference.spans.get(spans_key, []))
        pred = char_spans(eg.predicted.spans.get(spans_key, []))
        for start, end, label in gold | pred:
            bucket = by_length[length_bucket(_gold_tokens(eg.reference, start, end))]
            in_gold, in_pred = (start, end, label) in gold, (start, end, label) in pred
            bucket.tp += in_gold and in_pred
            bucket.fn += in_gold and not in_pred
            bucket.fp += in_pred and not in_gold
        for kind, g, p in _classify(gold - pred, pred - gold, gold, pred):
            errors[kind] += 1
            if len(samples) < max_examples:
                samples.append(ErrorExample(kind, eg.predicted.text, _show(eg.predicted, g),
                                            _show(eg.predicted, p)))
    lengths = {
        name: {"p": by_length[name].precision, "r": by_length[name].recall,
               "f": by_length[name].fscore,
               "support": by_length[name].tp + by_length[name].fn}
        for name, _, _ in LENGTH_BUCKETS
    }
    return Report(scores, lengths, dict(errors), samples)


def _gold_tokens(reference, start_char: int, end_char: int) -> int:
    """RETURNS (int): how many gold tokens the characters touch (at least 1)."""
    span = reference.char_span(start_char, end_char, alignment_mode="expand")
    return max(1, len(span)) if span is not None else 1


def _classify(missed: set, extra: set, gold: set, pred: set):
    """Yield (kind, gold span or None, predicted span or None) for every error."""

    def overlapping(span, others) -> List[Tuple[int, int, str]]:
        return sorted(o for o in others if o[0] < span[1] and span[0] < o[1])

    for span in sorted(extra):
        touched = overlapping(span, gold)
        same_bounds = [g for g in touched if g[:2] == span[:2]]
        same_type = [g for g in touched if g[2] == span[2]]
        if same_bounds:
            yield "wrong_type", same_bounds[0], span
        elif same_type:
            yield "wrong_boundary", same_type[0], span
        elif touched:
            yield "wrong_boundary_and_type", touched[0], span
        else:
            yield "spurious", None, span
    for span in sorted(missed):
        if not overlapping(span, pred):  # else counted above with the prediction it touches
            yield "missed", span, None


def _show(doc, span) -> Optional[Tuple[str, str]]:
    return None if span is None else (doc.text[span[0] : span[1]], span[2])


def to_markdown(report: Report, spans_key: str = DEFAULT_SPANS_KEY) -> str:
    """RETURNS (str): the report as Markdown tables."""
    s = report.scores
    attr = f"spans_{spans_key}"

    def pct(value: Optional[float]) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}"

    lines = [
        "| P | R | F1 | nested R | non-nested R |", "|---|---|---|---|---|",
        f"| {pct(s[f'{attr}_p'])} | {pct(s[f'{attr}_r'])} | {pct(s[f'{attr}_f'])} "
        f"| {pct(s[f'{attr}_nested_r'])} | {pct(s[f'{attr}_non_nested_r'])} |",
        "", "| type | P | R | F1 |", "|---|---|---|---|",
    ]
    for label, prf in sorted((s.get(f"{attr}_per_type") or {}).items()):
        lines.append(f"| {label} | {pct(prf['p'])} | {pct(prf['r'])} | {pct(prf['f'])} |")
    lines += ["", "| length | gold | P | R | F1 |", "|---|---|---|---|---|"]
    for name, prf in report.by_length.items():
        lines.append(f"| {name} | {prf['support']} | {pct(prf['p'])} | {pct(prf['r'])} "
                     f"| {pct(prf['f'])} |")
    lines += ["", "| error | count |", "|---|---|"]
    lines += [f"| {kind} | {n} |" for kind, n in report.errors.items()]
    if report.examples:
        lines += ["", "| error | gold | predicted | sentence |", "|---|---|---|---|"]
        for e in report.examples:
            gold = f"{e.gold[0]} ({e.gold[1]})" if e.gold else ""
            pred = f"{e.predicted[0]} ({e.predicted[1]})" if e.predicted else ""
            sentence = e.sentence.replace("|", "\\|")
            lines.append(f"| {e.kind} | {gold} | {pred} | {sentence} |")
    return "\n".join(lines) + "\n"


def plot(report: Report, output_dir: Path, spans_key: str = DEFAULT_SPANS_KEY) -> List[Path]:
    """Draw F1 by entity length and P/R by type as PNG files. RETURNS (List[Path]): them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    names = list(report.by_length)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, [100 * report.by_length[n]["f"] for n in names], color="#4c72b0")
    for i, n in enumerate(names):
        ax.annotate(f"n={report.by_length[n]['support']}", (i, 1), ha="center", fontsize=8,
                    color="white")
    ax.set_xlabel("entity length (tokens)")
    ax.set_ylabel("F1")
    ax.set_ylim(0, 100)
    ax.set_title("F1 by entity length")
    fig.tight_layout()
    paths.append(output_dir / "f1_by_length.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    per_type = report.scores.get(f"spans_{spans_key}_per_type") or {}
    labels = sorted(per_type)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(x - 0.2, [100 * per_type[k]["p"] for k in labels], 0.4, label="precision")
    ax.bar(x + 0.2, [100 * per_type[k]["r"] for k in labels], 0.4, label="recall")
    ax.set_xticks(x, labels)
    ax.set_ylim(0, 100)
    ax.set_title("Precision and recall by type")
    ax.legend()
    fig.tight_layout()
    paths.append(output_dir / "pr_by_type.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def write_report(
    report: Report, output_dir: Path, spans_key: str = DEFAULT_SPANS_KEY
) -> List[Path]:
    """Write ``report.json``, ``report.md`` and the plots to ``output_dir``."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "report.json").write_text(json.dumps(report.to_dict(), indent=2))
    (output_dir / "report.md").write_text(to_markdown(report, spans_key))
    return [output_dir / "report.json", output_dir / "report.md",
            *plot(report, output_dir, spans_key)]
