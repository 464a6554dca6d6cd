"""Prediction thresholds searched on dev and written into a pipeline's config.

A trained ``nested_mrc_ner`` pipe has two kinds of prediction settings (its model lists them
in its contract's ``decode_settings``, see ``spacy_nested_mrc.types``):

- *gates*, which decide which spans are scored at all (MRC: the start and end thresholds;
  Locate-and-Label: the filter threshold). Each point of their grid costs one prediction
  pass over dev, on the pipeline loaded with those values (``spacy.load(path, config=...)``,
  as a user's program would load it).
- the *score threshold* on the written spans (the component's ``threshold``, and score cuts
  inside the model such as Soft-NMS's ``nms_score``). A pass with every cut at 0 scores all
  of them at once, so any number of thresholds is free.

The best point (F1 on dev, ties to the higher threshold) is written into the saved
pipeline's config, with a Platt calibration of the scores fitted on dev, so that
``spacy.load`` predicts with it. With ``per_label``, each label then gets its own threshold
(the component's ``label_thresholds``), searched on the same pass a label at a time for the
F1 of all labels together. Either way the search says what per-label thresholds are worth on
data they were not chosen on: each half of dev (its first and second half of docs) scored
with the thresholds chosen on the other half, one threshold against one per label.
Entities are compared on character offsets against the file's gold spans, so the numbers
are those of ``spacy evaluate`` on the same docs.
"""

import warnings
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import spacy
from spacy.language import Language
from spacy.util import (
    ensure_path,
    get_model_meta,
    load_config,
    load_model_from_config,
    registry,
)

from ..annotation import scored_only
from ..component import find_component
from ..errors import Errors, Warnings
from ..models.upgrade import config_path
from ..scoring.calibration import calibrate, expected_calibration_error, fit_platt, uncalibrate
from ..scoring.scorer import char_spans
from ..types import contract_of
from .examples import predict_examples

DEFAULT_GATE_GRID: Tuple[float, ...] = (0.3, 0.4, 0.5, 0.6)
DEFAULT_SCORE_GRID: Tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(2, 20))


@dataclass
class CurvePoint:
    """P/R/F of one point of the search: gate values and a score threshold (raw scores)."""

    gates: Dict[str, float]
    threshold: float
    p: float
    r: float
    f: float
    n_predicted: int


@dataclass
class TuningResult:
    """What :func:`tune_pipeline` found.

    component (str): the pipe's name.
    gates (Dict[str, float]): the chosen gate settings of the model.
    threshold (float): the chosen cut on the model's raw scores.
    calibration (Optional[List[float]]): ``[a, b]`` fitted on dev, or None.
    before (CurvePoint): the pipeline's own settings as loaded.
    best (CurvePoint): the chosen point.
    curve (List[CurvePoint]): every point searched.
    n_gold (int): gold entities in dev.
    ece_before (float): ECE of the raw scores of the spans the tuned pipeline writes.
    ece_after (float): ECE of their calibrated scores, each dev half scored with the
        calibration fitted on the other half (held out).
    labels (Dict[str, Dict[str, float]]): per label at the chosen point, P/R/F and its gold
        and predicted counts.
    label_thresholds (Dict[str, float]): with ``per_label``, each label's cut on the raw
        scores (labels of the pipe not on dev keep ``threshold``); else empty.
    chosen (Optional[CurvePoint]): the point written: ``best``, or with per-label
        thresholds the dev P/R/F they give (its ``threshold`` is ``best``'s).
    held_out (Dict[str, float]): F1 of the two dev halves, each scored with the
        thresholds chosen on the other: ``one_threshold`` and ``per_label``.
    never_found (Dict[str, int]): labels with gold entities that no pass found at all (the
        model never learned them; warning NMW160), with their gold counts.
    """

    component: str
    gates: Dict[str, float]
    threshold: float
    calibration: Optional[List[float]]
    before: CurvePoint
    best: CurvePoint
    curve: List[CurvePoint] = field(default_factory=list)
    n_gold: int = 0
    ece_before: float = 0.0
    ece_after: float = 0.0
    score_cuts: List[str] = field(default_factory=list)
    labels: Dict[str, Dict[str, float]] = field(default_factory=dict)
    never_found: Dict[str, int] = field(default_factory=dict)
    label_thresholds: Dict[str, float] = field(default_factory=dict)
    chosen: Optional[CurvePoint] = None
    held_out: Dict[str, float] = field(default_factory=dict)

    @property
    def written(self) -> CurvePoint:
        """RETURNS (CurvePoint): the point the tuned pipeline predicts with."""
        return self.chosen if self.chosen is not None else self.best

    def overrides(self) -> Dict[str, Any]:
        """RETURNS (Dict[str, Any]): the dotted config settings that give the chosen point."""
        prefix = f"components.{self.component}"
        settings: Dict[str, Any] = {f"{prefix}.model.{k}": v for k, v in self.gates.items()}
        lowest = min([self.threshold, *self.label_thresholds.values()])
        for cut in self.score_cuts:  # the model may cut no span that a label keeps
            settings[f"{prefix}.model.{cut}"] = lowest
        settings[f"{prefix}.threshold"] = self._written_cut(self.threshold)
        # the whole table, replacing the pipeline's own (``load_with`` sets it so)
        settings[f"{prefix}.label_thresholds"] = {
            label: self._written_cut(cut) for label, cut in self.label_thresholds.items()
        }
        settings[f"{prefix}.calibration"] = self.calibration
        return settings

    def _written_cut(self, raw: float) -> float:
        """The component's threshold for a cut on raw scores: the calibrated cut, a hair
        below it so that float32 rounding keeps the spans at it."""
        written = calibrate(np.asarray([raw]), self.calibration)[0]
        return round(max(0.0, float(written) - 1e-6), 6)

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "overrides": self.overrides()}

    def table(self) -> str:
        """RETURNS (str): the P/R/F curve as Markdown, the chosen row marked."""
        names = list(self.best.gates)
        # each gate by its name, without the block that holds it
        titles = [name.rpartition(".")[2] for name in names]
        lines = [
            "| " + " | ".join([*titles, "threshold", "P", "R", "F1", "spans", ""]) + " |",
            "|" + "---|" * (len(names) + 6),
        ]
        for point in self.curve:
            mark = "best" if point == self.best else ""
            cells = [f"{point.gates[n]:.2f}" for n in names]
            cells += [f"{point.threshold:.2f}", f"{100 * point.p:.1f}", f"{100 * point.r:.1f}",
                      f"{100 * point.f:.1f}", str(point.n_predicted), mark]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def summary(self) -> str:
        """RETURNS (str): a few lines: before, after, the settings and the ECE."""
        b, a = self.before, self.written
        held = self.held_out
        return "\n".join([
            f"dev ({self.n_gold} gold entities), as loaded: P {100 * b.p:.1f} R {100 * b.r:.1f}"
            f" F1 {100 * b.f:.1f}",
            f"tuned: P {100 * a.p:.1f} R {100 * a.r:.1f} F1 {100 * a.f:.1f}"
            + (f" (one threshold: F1 {100 * self.best.f:.1f})" if self.label_thresholds else ""),
            *([f"held-out halves of dev (each scored with the thresholds chosen on the other): "
               f"one threshold F1 {100 * held['one_threshold']:.1f}, per label F1 "
               f"{100 * held['per_label']:.1f}"] if held else []),
            "settings: " + ", ".join(f"{k} = {v}" for k, v in self.overrides().items()),
            f"expected calibration error of the written spans: {self.ece_before:.3f} raw, "
            f"{self.ece_after:.3f} calibrated (held-out halves of dev)",
            "per label, tuned: " + ", ".join(
                f"{label} F1 {100 * row['f']:.1f} ({row['gold']} gold)"
                for label, row in self.labels.items()),
            *([f"never found at any setting: {', '.join(self.never_found)}"]
              if self.never_found else []),
        ])


@dataclass
class _Pass:
    """The spans of one prediction pass with every score cut at 0."""

    scores: np.ndarray  # [N] raw confidences
    correct: np.ndarray  # [N] bool: a gold entity (character offsets and label)
    doc_index: np.ndarray  # [N] the dev doc of each span
    n_gold: int
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # [N]
    gold_by_label: Dict[str, int] = field(default_factory=dict)
    gold_doc: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [G]

    def part(self, docs: np.ndarray) -> "_Pass":
        """RETURNS (_Pass): the spans and gold entities of the docs where ``docs`` [D] (bool,
        by doc index) is true."""
        mine, gold = docs[self.doc_index], docs[self.gold_doc]
        return _Pass(self.scores[mine], self.correct[mine], self.doc_index[mine],
                     int(gold.sum()), self.labels[mine], gold_doc=self.gold_doc[gold])


def tune_pipeline(
    pipeline: Union[str, Path],
    dev_path: Union[str, Path],
    *,
    component: Optional[str] = None,
    gate_grid: Sequence[float] = DEFAULT_GATE_GRID,
    score_grid: Sequence[float] = DEFAULT_SCORE_GRID,
    gold_preproc: bool = False,
    calibrate_scores: bool = True,
    per_label: bool = False,
    batch_size: int = 64,
    limit: int = 0,
    progress: Optional[Callable[[str], None]] = None,
) -> TuningResult:
    """Search the prediction settings of a saved pipeline on dev data.

    pipeline (Union[str, Path]): a saved pipeline (folder or package name).
    dev_path (Union[str, Path]): gold data, GENIA-style .jsonl or a .spacy DocBin.
    component (Optional[str]): the ``nested_mrc_ner`` pipe; by default the only one.
    gate_grid (Sequence[float]): values tried for each gate setting (all combinations, and
        the pipeline's own values).
    score_grid (Sequence[float]): score thresholds tried on every pass.
    gold_preproc (bool): predict on the file's tokens, not the pipeline tokenizer's.
    calibrate_scores (bool): fit a Platt calibration of the scores.
    per_label (bool): give each label its own score threshold (``label_thresholds``).
    batch_size (int): docs per ``nlp.pipe`` batch.
    limit (int): use the first N dev docs; 0 for all.
    progress (Optional[Callable[[str], None]]): told about each pass.
    RETURNS (TuningResult): the search and its choice.
    """
    loaded = spacy.load(pipeline)
    name = find_component(loaded, component)
    pipe = loaded.get_pipe(name)
    decode = contract_of(pipe.model).decode_settings
    model_config = loaded.config["components"][name]["model"]
    # each setting's path in this pipeline's config (in blocks, or flat as saved by the
    # release before them)
    gates = [config_path(model_config, g) for g in decode["gates"]]
    cuts = [config_path(model_config, c) for c in decode["score_cuts"]]
    own_gates = {g: float(_setting(model_config, g)) for g in gates}
    own_cut = _raw_cut(loaded.config["components"][name], cuts)
    del loaded, pipe
    gate_values = sorted({float(v) for v in gate_grid})
    combos = sorted({tuple(c) for c in product(gate_values, repeat=len(gates))}
                    | {tuple(own_gates[g] for g in gates)})
    curve: List[CurvePoint] = []
    passes: Dict[Tuple[float, ...], _Pass] = {}
    for i, combo in enumerate(combos):
        values = dict(zip(gates, combo))
        if progress is not None:
            progress(f"pass {i + 1}/{len(combos)}: {values or 'no gate settings'}")
        settings: Dict[str, Any] = {f"components.{name}.model.{g}": v for g, v in values.items()}
        settings.update({f"components.{name}.model.{c}": 0.0 for c in cuts})
        settings[f"components.{name}.threshold"] = 0.0
        settings[f"components.{name}.label_thresholds"] = {}
        settings[f"components.{name}.calibration"] = None
        nlp = load_with(pipeline, settings)
        passes[combo] = run_pass(nlp, name, dev_path, limit=limit, gold_preproc=gold_preproc,
                                 batch_size=batch_size)
        if passes[combo].n_gold == 0:  # an empty or unannotated file: nothing to measure
            raise ValueError(Errors.NME160.format(
                role="dev", path=dev_path, name=name, key=nlp.get_pipe(name).key,
                limit=f", first {limit} docs" if limit else "", command="tune",
                consequence=" thresholds on, so it saves none"))
        for threshold in sorted({float(t) for t in score_grid} | {own_cut}):
            curve.append(_point(passes[combo], values, threshold))
    own = tuple(own_gates[g] for g in gates)
    before = _point(passes[own], own_gates, own_cut)
    searched = [p for p in curve if p.threshold in set(map(float, score_grid))]
    best = _best(searched)
    chosen = passes[tuple(best.gates[g] for g in gates)]
    grid = sorted(set(map(float, score_grid)))
    label_cuts = search_label_thresholds(chosen, best.threshold, grid) if per_label else {}
    chosen_cuts = span_cuts(chosen, best.threshold, label_cuts)
    point = _point(chosen, best.gates, best.threshold, chosen_cuts) if per_label else None
    written = chosen.scores >= chosen_cuts
    calibration = None
    ece_after = ece_before = expected_calibration_error(
        chosen.scores[written], chosen.correct[written]
    )
    if calibrate_scores:
        calibration, ece_after = _fit_calibration(chosen, written)
        if ece_after >= ece_before:  # no better on held-out halves: keep the raw scores
            calibration, ece_after = None, ece_before
    held_out = held_out_f1(chosen, grid)
    if per_label and held_out["per_label"] < held_out["one_threshold"]:
        warnings.warn(Warnings.NMW162.format(per_label=100 * held_out["per_label"],
                                             one=100 * held_out["one_threshold"]))
    unlearned = never_found(passes.values())
    if unlearned:
        plural = len(unlearned) > 1
        warnings.warn(Warnings.NMW160.format(
            name=name, labels=" or ".join(unlearned),
            details=", ".join(f"{n} gold" for n in unlearned.values()),
            them="them" if plural else "it"))
    return TuningResult(
        component=name,
        gates=dict(best.gates),
        threshold=best.threshold,
        calibration=calibration,
        before=before,
        best=best,
        curve=curve,
        n_gold=chosen.n_gold,
        ece_before=ece_before,
        ece_after=ece_after,
        score_cuts=cuts,
        labels=label_table(chosen, chosen_cuts),
        never_found=unlearned,
        label_thresholds=label_cuts,
        chosen=point,
        held_out=held_out,
    )


def _raw_cut(component_config: Dict[str, Any], cuts: List[str]) -> float:
    """The cut on raw model scores that a pipe's own settings make: its threshold (mapped
    back through its calibration) or a model score cut, whichever is higher."""
    threshold = float(component_config.get("threshold", 0.5))
    calibration = component_config.get("calibration")
    if calibration is not None:
        threshold = float(uncalibrate(np.asarray([threshold]), calibration)[0])
    model_cuts = [float(_setting(component_config["model"], c)) for c in cuts]
    return max([threshold, *model_cuts])


def _setting(config: Dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a (nested) config."""
    for key in path.split("."):
        config = config[key]
    return config


def span_cuts(run: _Pass, threshold: float, label_cuts: Dict[str, float]) -> np.ndarray:
    """RETURNS (np.ndarray): [N] the cut on each span's raw score: its label's in
    ``label_cuts``, else ``threshold``."""
    cuts = np.full(len(run.scores), float(threshold))
    for label, cut in label_cuts.items():
        cuts[run.labels == label] = cut
    return cuts


def search_label_thresholds(
    run: _Pass, threshold: float, grid: Sequence[float], rounds: int = 2
) -> Dict[str, float]:
    """Each label's threshold on the raw scores, for the F1 of all labels together: from
    ``threshold`` for every label, each label's threshold in turn set to the grid value of
    best F1 (ties to the higher value, a change only where F1 rises), ``rounds`` times over
    the labels. RETURNS (Dict[str, float]): label -> threshold, for the labels on dev."""
    labels = sorted(set(run.gold_by_label) | set(run.labels.tolist()))
    chosen = {label: float(threshold) for label in labels}
    f = _point(run, {}, threshold, span_cuts(run, threshold, chosen)).f
    for _ in range(rounds):
        for label in labels:
            for value in sorted(grid, reverse=True):
                cuts = span_cuts(run, threshold, {**chosen, label: value})
                trial = _point(run, {}, threshold, cuts).f
                if trial > f + 1e-12:
                    chosen[label], f = float(value), trial
    return chosen


def held_out_f1(run: _Pass, grid: Sequence[float]) -> Dict[str, float]:
    """F1 of dev's two halves (its first and second half of docs), each scored with the
    thresholds chosen on the other half: one threshold for all labels, and one per label
    (``search_label_thresholds`` from that one). RETURNS (Dict[str, float]):
    ``one_threshold`` and ``per_label`` F1."""
    n_docs = int(max(run.doc_index.max(initial=-1), run.gold_doc.max(initial=-1))) + 1
    first = np.arange(n_docs) < n_docs // 2
    counts = {"one_threshold": np.zeros(3), "per_label": np.zeros(3)}  # tp, predicted, gold
    for fit_on, apply_to in ((first, ~first), (~first, first)):
        fit, apply = run.part(fit_on), run.part(apply_to)
        one = _best([_point(fit, {}, t) for t in grid])
        label_cuts = search_label_thresholds(fit, one.threshold, grid)
        for name, cuts in (("one_threshold", {}), ("per_label", label_cuts)):
            kept = apply.scores >= span_cuts(apply, one.threshold, cuts)
            counts[name] += (apply.correct[kept].sum(), kept.sum(), apply.n_gold)
    return {name: _prf(*c)[2] for name, c in counts.items()}


def _best(points: Sequence[CurvePoint]) -> CurvePoint:
    """RETURNS (CurvePoint): the point of best F1, ties to the higher threshold, then to
    fewer spans."""
    return max(points, key=lambda p: (round(p.f, 6), p.threshold, -p.n_predicted))


def _prf(tp: float, n_predicted: float, n_gold: float) -> Tuple[float, float, float]:
    """RETURNS (Tuple[float, float, float]): precision, recall and F1 of the counts."""
    p = tp / n_predicted if n_predicted else 0.0
    r = tp / n_gold if n_gold else 0.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def run_pass(nlp: Language, name: str, dev_path: Union[str, Path], *, limit: int,
             gold_preproc: bool, batch_size: int) -> _Pass:
    """Predict dev once; RETURNS (_Pass): every written span's score and correctness."""
    key = nlp.get_pipe(name).key
    examples = predict_examples(nlp, dev_path, key, limit=limit, gold_preproc=gold_preproc,
                                batch_size=batch_size)
    scores: List[float] = []
    correct: List[bool] = []
    doc_index: List[int] = []
    labels: List[str] = []
    gold_by_label: Dict[str, int] = {}
    gold_doc: List[int] = []
    for i, eg in enumerate(examples):
        gold = scored_only(char_spans(eg.reference.spans.get(key, [])), eg.reference, key)
        gold_doc.extend([i] * len(gold))
        for _, _, label in gold:
            gold_by_label[label] = gold_by_label.get(label, 0) + 1
        group = eg.predicted.spans.get(key, [])
        best: Dict[Tuple[int, int, str], float] = {}
        for span, score in zip(group, group.attrs.get("scores", [])):
            found = (span.start_char, span.end_char, span.label_)
            best[found] = max(best.get(found, 0.0), float(score))
        best = {found: best[found] for found in scored_only(best, eg.reference, key)}
        for found, score in best.items():
            scores.append(score)
            correct.append(found in gold)
            doc_index.append(i)
            labels.append(found[2])
    return _Pass(np.asarray(scores, dtype=np.float64), np.asarray(correct, dtype=bool),
                 np.asarray(doc_index, dtype=np.int64), len(gold_doc),
                 np.asarray(labels, dtype=object), gold_by_label,
                 np.asarray(gold_doc, dtype=np.int64))


def label_table(run: _Pass, cuts: np.ndarray) -> Dict[str, Dict[str, float]]:
    """P/R/F of each label of dev (gold or predicted) at the cuts [N] on the spans' scores.

    RETURNS (Dict[str, Dict[str, float]]): label -> {"p", "r", "f", "gold", "predicted"}.
    """
    kept = run.scores >= cuts
    table = {}
    for label in sorted(set(run.gold_by_label) | set(run.labels[kept].tolist())):
        mine = kept & (run.labels == label)
        tp, n_predicted = int(run.correct[mine].sum()), int(mine.sum())
        n_gold = run.gold_by_label.get(label, 0)
        p, r, f = _prf(tp, n_predicted, n_gold)
        table[label] = {"p": p, "r": r, "f": f, "gold": n_gold, "predicted": n_predicted}
    return table


def never_found(passes: Iterable[_Pass]) -> Dict[str, int]:
    """The labels with gold entities on dev that no pass finds even once, whatever its score
    (a label the model never learned), with their number of gold entities."""
    passes = list(passes)
    gold = passes[0].gold_by_label if passes else {}
    found = {label for run in passes for label in run.labels[run.correct].tolist()}
    return {label: n for label, n in sorted(gold.items()) if n and label not in found}


def _point(run: _Pass, gates: Dict[str, float], threshold: float,
           cuts: Optional[np.ndarray] = None) -> CurvePoint:
    """The P/R/F of the spans at or above ``threshold``, or with ``cuts`` [N] at or above
    their own cut each (``span_cuts``: a threshold per label)."""
    kept = run.scores >= (threshold if cuts is None else cuts)
    n_predicted = int(kept.sum())
    p, r, f = _prf(int(run.correct[kept].sum()), n_predicted, run.n_gold)
    return CurvePoint(dict(gates), float(threshold), p, r, f, n_predicted)


def _fit_calibration(run: _Pass, written: np.ndarray) -> Tuple[List[float], float]:
    """Platt calibration fitted on every scored span of the chosen pass; RETURNS it and the
    ECE of the written spans' calibrated scores, each half of dev (even/odd docs) mapped by
    the calibration fitted on the other half."""
    halves = run.doc_index % 2
    calibrated = np.zeros_like(run.scores)
    for half in (0, 1):
        fit_on, apply_to = halves != half, halves == half
        calibrated[apply_to] = calibrate(
            run.scores[apply_to], _platt(run.scores[fit_on], run.correct[fit_on]))
    ece = expected_calibration_error(calibrated[written], run.correct[written])
    return _platt(run.scores, run.correct), ece


def _platt(scores: np.ndarray, correct: np.ndarray) -> List[float]:
    """Platt's ``[a, b]``, with a kept > 0 so the calibration keeps the order of scores."""
    a, b = fit_platt(scores, correct)
    return [round(max(a, 1e-3), 6), round(b, 6)]


def load_with(pipeline: Union[str, Path], settings: Dict[str, Any]) -> Language:
    """``spacy.load`` with dotted config settings, where a table (such as
    ``label_thresholds``) replaces the saved one whole: ``spacy.load``'s overrides split a
    table into one setting per key, each of which the saved config must have already.

    pipeline (Union[str, Path]): a saved pipeline (folder or package name).
    settings (Dict[str, Any]): dotted config paths -> values.
    RETURNS (Language): the pipeline built from its config with the settings, then loaded.
    """
    path = ensure_path(pipeline)
    if not path.is_dir():  # an installed package: its data folder
        path = Path(spacy.load(pipeline).path)
    config = load_config(path / "config.cfg", overrides=settings)
    nlp = load_model_from_config(config, meta=get_model_meta(path))
    return nlp.from_disk(path)


def save_tuned(
    pipeline: Union[str, Path], result: TuningResult, output: Union[str, Path]
) -> Language:
    """Load ``pipeline`` with the tuned settings, record the search in ``meta["tuning"]``
    and save it to ``output``. RETURNS (Language): the tuned pipeline."""
    nlp = load_with(pipeline, result.overrides())
    nlp.meta["tuning"] = {
        "settings": result.overrides(),
        "dev_before": {k: getattr(result.before, k) for k in ("p", "r", "f")},
        "dev_after": {k: getattr(result.written, k) for k in ("p", "r", "f")},
        "ece_before": result.ece_before,
        "ece_after": result.ece_after,
    }
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    return nlp


@registry.callbacks("spacy-nested-mrc.tune_thresholds.v1")
def create_tuning_callback(
    dev_path: Optional[Path],
    score_key: str = "spans_nested_f",
    gate_grid: Sequence[float] = DEFAULT_GATE_GRID,
    score_grid: Sequence[float] = DEFAULT_SCORE_GRID,
    gold_preproc: bool = False,
    calibrate_scores: bool = True,
    per_label: bool = False,
    batch_size: int = 64,
) -> Callable[[Language], Language]:
    """A ``[training.before_to_disk]`` callback of ``spacy train``: each time a checkpoint is
    saved with the best ``score_key`` so far, its prediction settings are tuned on
    ``dev_path`` and the tuned pipeline is what is saved (``model-best`` then holds them);
    other checkpoints are saved as they are. Training itself goes on with the untuned
    pipeline. Each tuning costs the passes of :func:`tune_pipeline` (see its grids).

    dev_path (Optional[Path]): the dev data (e.g. ``${paths.dev}``).
    score_key (str): the score in ``nlp.meta["performance"]`` that marks the best checkpoint.
    per_label (bool): give each label its own score threshold (see ``tune_pipeline``).
    RETURNS (Callable[[Language], Language]): the callback.
    """
    import tempfile

    best: Dict[str, Any] = {"score": None, "overrides": None, "performance": None}

    def before_to_disk(nlp: Language) -> Language:
        if dev_path is None:
            raise ValueError(Errors.NME041)
        performance = dict(nlp.meta.get("performance", {}))
        score = performance.get(score_key)
        if score is None or (best["score"] is not None and score < best["score"]):
            return nlp
        with tempfile.TemporaryDirectory() as tmp:
            nlp.to_disk(tmp)
            if performance != best["performance"]:  # a new best: search again
                result = tune_pipeline(tmp, dev_path, gate_grid=gate_grid,
                                       score_grid=score_grid, gold_preproc=gold_preproc,
                                       calibrate_scores=calibrate_scores,
                                       per_label=per_label, batch_size=batch_size)
                best.update(score=score, overrides=result.overrides(),
                            performance=performance)
            tuned = load_with(tmp, best["overrides"])
        tuned.meta = {**nlp.meta, "tuning": {"settings": best["overrides"]}}
        return tuned

    return before_to_disk
