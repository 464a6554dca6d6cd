"""The ``nested_mrc_ner`` pipe: model-agnostic, it writes scored, possibly overlapping spans
to ``doc.spans[spans_key]``. What a model must provide is in ``spacy_nested_mrc.types``."""

import inspect
import json
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np
import srsly
import torch
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span, SpanGroup
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.util import SimpleFrozenDict, ensure_path, registry
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate

from .annotation import label_mask, label_regions, unannotated_tokens
from .encoder.onnx import check_runtime, uses_onnxruntime
from .encoder.quantization import check_quantize, dequantized, is_quantized, run_encoders_as
from .encoder.span_getters import check_split_agrees
from .errors import Errors, Warnings
from .runtime.batching import read_ahead
from .runtime.memory import ReleaseMemory
from .runtime.threads import model_lock
from .scoring.calibration import calibrate
from .sentences import DEFAULT_SPLIT_SENTENCES, found_starts, reading_starts_of, write_starts
from .spans import consistent_spans, count_conflicts, flat_projection, sentence_starts
from .training.optimizer import TorchAdam
from .types import DEFAULT_SPANS_KEY, SpanBatch, SpanOutput, contract_of
from .validation import (
    check_bool,
    check_calibration,
    check_label_thresholds,
    check_positive,
    check_probability,
    check_string,
)

# the most accurate measured model that runs at about the encoder's speed: the packed MRC with
# the label index as its question (configs/mrc_packed_cpu.cfg; docs/results.md), in bf16 where
# the device has bf16 arithmetic (the encoder block's precision "auto"; fp32 elsewhere). Every
# setting is filled from its block's signature, where each default is written once; the
# per-label MRC of Li et al. (2020) is ``questions.packed = false`` and ``questions.style =
# "natural"``
DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-nested-mrc.MRCQuery.v2"

[model.encoder]
@misc = "spacy-nested-mrc.QueryEncoder.v1"

[model.questions]
@misc = "spacy-nested-mrc.Questions.v1"

[model.windows]
@misc = "spacy-nested-mrc.QueryWindows.v1"

[model.heads]
@misc = "spacy-nested-mrc.MRCHeads.v1"

[model.loss]
@misc = "spacy-nested-mrc.MRCLoss.v1"

[model.decoder]
@misc = "spacy-nested-mrc.MRCDecoder.v1"
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]
# what a saved ``cfg`` restores: learned in training, not set in the config
LEARNED_CFG = ("labels",)


class NestedMRCNER(TrainablePipe):
    """Nested named entities with confidences, in ``doc.spans[spans_key]``."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model[SpanBatch, SpanOutput],
        name: str = "nested_mrc_ner",
        *,
        spans_key: str = DEFAULT_SPANS_KEY,
        threshold: float = 0.5,
        label_thresholds: Dict[str, float] = SimpleFrozenDict(),
        write_ents: bool = False,
        split_sentences: bool = DEFAULT_SPLIT_SENTENCES,
        write_sents: bool = False,
        strict_spans: bool = False,
        calibration: Optional[List[float]] = None,
        allow_crossing: bool = False,
        one_label_per_span: bool = True,
        quantize: Optional[str] = None,
        runtime: str = "torch",
        release_memory_every: int = 0,
        read_ahead_tokens: int = 32768,
        scorer: Optional[Callable] = None,
    ) -> None:
        check_string("spans_key", spans_key)
        check_probability("threshold", threshold)
        check_label_thresholds("label_thresholds", label_thresholds)
        check_calibration("calibration", calibration)
        check_bool("split_sentences", split_sentences)
        check_bool("write_sents", write_sents)
        check_bool("allow_crossing", allow_crossing)
        check_bool("one_label_per_span", one_label_per_span)
        check_quantize(quantize)
        check_runtime(runtime)
        check_positive("release_memory_every", release_memory_every, allow_zero=True)
        check_positive("read_ahead_tokens", read_ahead_tokens, allow_zero=True)
        contract_of(model)  # NME015 now for a model that does not declare what the pipe needs
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {
            "labels": [],
            "spans_key": spans_key,
            "threshold": threshold,
            "label_thresholds": {
                str(label): float(cut) for label, cut in (label_thresholds or {}).items()},
            "write_ents": bool(write_ents),
            "split_sentences": split_sentences,
            "write_sents": write_sents,
            "strict_spans": bool(strict_spans),
            "calibration": None if calibration is None else [float(x) for x in calibration],
            "allow_crossing": allow_crossing,
            "one_label_per_span": one_label_per_span,
            "quantize": quantize,
            "runtime": runtime,
            "release_memory_every": release_memory_every,
            "read_ahead_tokens": read_ahead_tokens,
        }

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Annotate a stream of docs (``TrainablePipe.pipe``, in input order) in batches of
        at least ``batch_size`` docs and ``read_ahead_tokens`` tokens, which the model reads
        by length, giving free heap memory back every ``release_memory_every`` docs when
        set."""
        every = int(self.cfg.get("release_memory_every") or 0)
        tokens = int(self.cfg.get("read_ahead_tokens") or 0)
        annotate = super().pipe
        docs = (doc for batch in read_ahead(stream, batch_size, tokens)
                for doc in annotate(batch, batch_size=len(batch)))
        if not every:
            yield from docs
            return
        release = ReleaseMemory(self.name, every)
        for doc in docs:
            yield release(doc)

    @property
    def key(self) -> str:
        """RETURNS (str): the key of ``doc.spans`` this pipe writes."""
        return str(self.cfg["spans_key"])

    @property
    def labels(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, in label-id order."""
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> List[str]:
        """RETURNS (List[str]): the labels, for ``nlp.initialize(labels=...)``."""
        return list(self.labels)

    def add_label(self, label: str, question: Optional[str] = None) -> int:
        """Add a label, with the question that asks for it.

        Before initialization, any model takes it. A trained model whose heads every label
        shares (the MRC model: a label is a question) takes it too, keeping its weights,
        and predicts it at once, before any training on it (``relabel``); the others raise
        NME004.

        label (str): the label.
        question (Optional[str]): its question (natural language, as the built-in ones:
            "find every virus in the text: ..."), over the config's and the presets';
            None: theirs.
        RETURNS (int): 0 if it was known, else 1.
        RAISES (ValueError): NME004 for a trained model with parts per label, NME024 for a
            question to a model that asks none.
        """
        check_string("label", label)
        if question is not None:
            check_string("question", question)
        if label in self.labels:
            return 0
        if self.model.attrs["labels"]:
            if contract_of(self.model).relabel is None:
                raise ValueError(Errors.NME004.format(label=label, name=self.name))
            self.relabel([*self.labels, label], {label: question} if question else None)
            return 1
        if question is not None:
            ask = contract_of(self.model).ask
            if ask is None:
                raise ValueError(Errors.NME024.format(name=self.name, label=label))
            ask(self.model, label, question)
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    def relabel(self, labels: List[str], questions: Optional[Dict[str, str]] = None) -> None:
        """Give the trained pipe a new label set, keeping its weights: labels it knew keep
        their questions, new ones are asked by ``questions`` (or the config's and the
        presets'). The start of training on new data from a pipeline trained on other
        corpora (``[initialize.after_init]``: ``spacy-nested-mrc.relabel.v1``), or a label
        dropped.

        labels (List[str]): the new labels, in label-id order.
        questions (Optional[Dict[str, str]]): label -> question, over the known ones.
        RAISES (ValueError): NME001 before initialization, NME222 for a model with parts
            per label, NME002 for a label without a question.
        """
        if not self.model.attrs["labels"]:
            raise ValueError(Errors.NME001.format(name=self.name))
        relabel = contract_of(self.model).relabel
        if relabel is None:
            reason = ("its model has parts per label (Locate-and-Label's classifier, "
                      "Multi-NER's typed heads): add the label before nlp.initialize() and train.")
            raise ValueError(Errors.NME222.format(labels=list(labels), name=self.name,
                                                  reason=reason))
        for label in labels:
            check_string("label", label)
        relabel(self.model, list(labels), dict(questions or {}))
        self.cfg["labels"] = list(labels)
        for label in labels:
            self.vocab.strings.add(label)

    def predict(self, docs: Iterable[Doc]) -> SpanOutput:
        """Score spans of the docs without changing them.

        RETURNS (SpanOutput): per doc the spans (start, end, label id) and confidences.
        """
        docs = list(docs)
        if not self.model.attrs["labels"]:
            raise ValueError(Errors.NME001.format(name=self.name))
        with model_lock(self.model):  # threads sharing the pipe: see ``runtime.threads``
            return self.model.predict(self._batch(docs))

    def _batch(
        self,
        docs: List[Doc],
        gold: Optional[List[np.ndarray]] = None,
        unannotated: Optional[List[Optional[np.ndarray]]] = None,
        masks: Optional[List[Optional[np.ndarray]]] = None,
    ) -> SpanBatch:
        """The docs for the model, with the sentences each is read by (``split_sentences``),
        the same in training and prediction."""
        starts = reading_starts_of(docs, self.cfg["split_sentences"])
        return SpanBatch(docs, gold, unannotated, sentence_starts=starts, label_mask=masks)

    def label_cuts(self) -> np.ndarray:
        """RETURNS (np.ndarray): [C] the least written score of each label id: its
        ``label_thresholds`` entry, else ``threshold``."""
        own = self.cfg.get("label_thresholds") or {}
        return np.asarray([own.get(label, self.cfg["threshold"]) for label in self.labels],
                          dtype=np.float64)

    def set_annotations(self, docs: Iterable[Doc], output: SpanOutput) -> None:
        """Write the spans above their label's threshold to ``doc.spans[spans_key]`` with
        their scores in ``attrs["scores"]`` (and a flat projection to ``doc.ents`` if
        ``write_ents``, the sentences found to a doc without any if ``write_sents``).

        The spans that pass the lowest threshold are made consistent first (crossing spans,
        one label per span: the higher score wins), then each is cut by its own label's
        threshold: so a span that lost to a higher-scoring one stays out even when the
        winner's label cuts it, and ``tune`` predicts the written spans exactly from one
        pass with every cut at 0.
        """
        labels = self.labels
        cuts = self.label_cuts()
        lowest = float(cuts.min()) if len(cuts) else float(self.cfg["threshold"])
        for doc, spans, scores in zip(docs, output.spans, output.scores):
            if self.cfg["write_sents"] and self.cfg["split_sentences"]:
                if sentence_starts(doc) is None:
                    write_starts(doc, found_starts(doc))
            scores = calibrate(scores, self.cfg["calibration"])
            keep = scores >= lowest
            spans, scores = spans[keep], scores[keep]
            keep = consistent_spans(
                spans[:, 0], spans[:, 1], scores,
                allow_crossing=self.cfg["allow_crossing"],
                one_label_per_span=self.cfg["one_label_per_span"],
            )
            spans, scores = spans[keep], scores[keep]
            keep = scores >= cuts[spans[:, 2]] if len(spans) else np.zeros(0, dtype=bool)
            spans, scores = spans[keep], scores[keep]
            group = SpanGroup(
                doc,
                name=self.key,
                spans=[Span(doc, int(s), int(e), labels[int(k)]) for s, e, k in spans],
                attrs={"scores": np.asarray(scores, dtype=np.float32)},
            )
            doc.spans[self.key] = group
            if self.cfg["write_ents"]:
                chosen = flat_projection(spans[:, 0], spans[:, 1], scores)
                doc.ents = [group[int(i)] for i in chosen]

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch; the batch is split into passes of ``docs_per_pass`` docs (set
        by the model) whose gradients add up, so memory does not grow with the labels."""
        if is_quantized(self.model):
            raise ValueError(Errors.NME141.format(name=self.name))
        if uses_onnxruntime(self.model):
            raise ValueError(Errors.NME142.format(name=self.name))
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "NestedMRCNER.update")
        if not any(len(eg.predicted) for eg in examples):
            return losses
        set_dropout_rate(self.model, drop)
        masks = [label_mask(eg.reference, eg.predicted, self.key, self.labels) for eg in examples]
        gold = self._gold(examples, masks)
        unannotated = [unannotated_tokens(eg.reference, eg.predicted, self.key) for eg in examples]
        # 0: the model takes the whole batch in one pass (e.g. behind a transformer listener)
        step = int(self.model.attrs["docs_per_pass"]) or len(examples)
        total = 0.0
        for begin in range(0, len(examples), step):
            chunk = slice(begin, begin + step)
            batch = self._batch([eg.predicted for eg in examples[chunk]], gold[chunk],
                                unannotated[chunk], masks[chunk])
            output, backprop = self.model.begin_update(batch)
            loss, d_scores = self.get_loss(examples[chunk], output)
            weight = len(batch.docs) / len(examples)
            backprop(tuple(d * weight for d in d_scores))
            total += loss * weight
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += total
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the model from its gradients: ``TorchAdam`` steps all of its torch
        parameters at once (``training.optimizer``), any other optimizer one by one.

        sgd (thinc.api.Optimizer): the optimizer.
        """
        if isinstance(sgd, TorchAdam):
            sgd.finish_update(self.model)
        else:
            self.model.finish_update(sgd)

    def get_loss(self, examples: Iterable[Example], output: SpanOutput) -> Tuple[float, Any]:
        """The loss of a training pass and its gradient with respect to the model's scores.

        examples (Iterable[Example]): the pass's examples; the model aligned their gold to
            its scores in ``begin_update`` (``output.scored`` holds both).
        output (SpanOutput): what ``model.begin_update`` returned for them.
        RETURNS (Tuple[float, Any]): the loss and ``d_scores``, one gradient per score, which
            the backprop of ``begin_update`` takes.
        """
        validate_examples(examples, "NestedMRCNER.get_loss")
        return contract_of(self.model).get_loss(self.model, output.scored)

    def _gold(
        self, examples: List[Example], masks: Optional[List[Optional[np.ndarray]]] = None
    ) -> List[np.ndarray]:
        """Gold spans of each example, aligned to its predicted doc, as (start, end, label id).

        Spans that cannot be learned are counted and reported (NMW002), or raise (NME103)
        with ``strict_spans``: an unknown label, no alignment to the predicted tokens, a
        label its text does not annotate (``masks``: per example [N, K] bool or None, as
        ``annotation.label_mask`` gives), or a missing spans key.
        """
        label_ids = {label: i for i, label in enumerate(self.labels)}
        problems: Counter = Counter()
        gold = []
        for eg in examples:
            rows = np.zeros((0, 3), dtype=np.int64)
            if self.key not in eg.reference.spans:
                problems["docs without the spans key"] += 1
            else:
                reference = eg.reference.spans[self.key]
                aligned = eg.get_aligned_spans_y2x(reference, allow_overlap=True)
                problems["not aligned to tokens"] += len(reference) - len(aligned)
                known = [s for s in aligned if s.label_ in label_ids]
                problems["unknown label"] += len(aligned) - len(known)
                if known:
                    rows = np.unique(
                        np.asarray([[s.start, s.end, label_ids[s.label_]] for s in known]),
                        axis=0,
                    )
                mask = masks[len(gold)] if masks is not None else None
                if mask is not None and len(rows):
                    annotated = mask[rows[:, 0], rows[:, 2]]
                    problems["label not annotated there"] += int((~annotated).sum())
                    rows = rows[annotated]
            gold.append(rows.astype(np.int64))
        problems = +problems  # drop zero counts
        if problems:
            details = ", ".join(f"{n} {why}" for why, n in sorted(problems.items()))
            if self.cfg["strict_spans"]:
                raise ValueError(Errors.NME103.format(name=self.name, details=details))
            count = sum(problems.values())
            warnings.warn(
                Warnings.NMW002.format(
                    count=count, plural="" if count == 1 else "s", name=self.name, details=details
                )
            )
        return gold

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[List[str]] = None,
    ) -> None:
        """Take the labels (given, or found in the examples' spans), load the encoder and
        draw the heads' initial weights.

        The weights are drawn from torch's RNGs seeded with the pipeline's seed
        (``[training] seed``, else ``[system] seed``, else 0), forked so that the RNG states a
        caller sees are left as they were: the same config gives the same initial weights,
        in ``spacy train`` or from ``nlp.initialize()``, whatever ran before.

        get_examples (Callable[[], Iterable[Example]]): returns the training examples.
        nlp (Language): the pipeline.
        labels (Optional[List[str]]): the labels, e.g. from ``spacy init labels``.
        """
        validate_get_examples(get_examples, "NestedMRCNER.initialize")
        if labels is not None:
            for label in labels:
                self.add_label(label)
        found = set()
        conflicts = np.zeros(2, dtype=np.int64)  # crossing pairs, repeated boundaries
        longest = 0  # the longest entity in the predicted docs' tokens
        for eg in get_examples():
            found.update(label_regions(eg.reference, self.key))  # labels a corpus annotates
            if self.key in eg.reference.spans:
                group = eg.reference.spans[self.key]
                found.update(span.label_ for span in group)
                aligned = eg.get_aligned_spans_y2x(group, allow_overlap=True)
                longest = max([longest, *(len(span) for span in aligned)])
                conflicts += count_conflicts(
                    np.asarray([s.start for s in group], dtype=np.int64),
                    np.asarray([s.end for s in group], dtype=np.int64),
                )
        if labels is None:
            for label in sorted(found):
                self.add_label(label)
        if conflicts[0] and not self.cfg["allow_crossing"]:
            warnings.warn(Warnings.NMW004.format(count=conflicts[0], name=self.name))
        if conflicts[1] and self.cfg["one_label_per_span"]:
            warnings.warn(Warnings.NMW005.format(count=conflicts[1], name=self.name))
        if not self.labels:
            raise ValueError(Errors.NME005.format(name=self.name, key=self.key))
        unknown = sorted(set(self.cfg.get("label_thresholds") or {}) - set(self.labels))
        if unknown:
            warnings.warn(Warnings.NMW161.format(name=self.name, unknown=unknown,
                                                 labels=list(self.labels)))
        if nlp is not None:
            check_split_agrees(nlp, self.name, self.cfg["split_sentences"])
        devices = range(torch.cuda.device_count())  # none without CUDA
        with torch.random.fork_rng(devices=devices, device_type="cuda"):
            torch.manual_seed(config_seed(nlp))
            contract = contract_of(self.model)
            if contract.set_longest_entity is not None:
                contract.set_longest_entity(self.model, longest)
            contract.set_labels(self.model, list(self.labels))
            self.model.initialize()
        self._apply_quantize()

    def _apply_quantize(self) -> None:
        """Run the encoder as the ``quantize`` and ``runtime`` settings ask: quantized by
        PyTorch, or exported to ONNX Runtime (quantized there with ``quantize``)."""
        if not run_encoders_as(self.model, self.cfg["quantize"], self.cfg.get("runtime", "torch")):
            setting = ", ".join(
                f"{key} = {json.dumps(self.cfg[key])}" for key in ("quantize", "runtime")
                if self.cfg.get(key) not in (None, "torch")
            )
            warnings.warn(Warnings.NMW141.format(name=self.name, setting=setting))

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize the pipe; a quantized encoder is saved dequantized (float weights)."""
        with dequantized(self.model):
            return super().to_bytes(exclude=exclude)

    def from_bytes(
        self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()
    ) -> "NestedMRCNER":
        """Load the pipe from ``to_bytes`` output, quantized if its settings say so."""
        super().from_bytes(bytes_data, exclude=exclude)
        self._apply_quantize()
        return self

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save the pipe to a folder; a quantized encoder is saved dequantized."""
        with dequantized(self.model):
            super().to_disk(path, exclude=exclude)

    def from_disk(
        self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()
    ) -> "NestedMRCNER":
        """Load the pipe from a folder written by ``to_disk``.

        A missing ``cfg`` or ``model`` file raises NME011 and one that cannot be read
        NME012, both naming the file (spaCy alone would load without ``cfg`` and fail
        later, and report a corrupt ``model`` without naming it).

        path (str / Path): the pipe's folder.
        exclude (Iterable[str]): names of serialization fields to skip.
        RETURNS (NestedMRCNER): the pipe.
        """
        path = ensure_path(path)
        exclude = list(exclude)
        parts = [part for part in ("cfg", "model") if part not in exclude]
        for part in parts:
            if not (path / part).is_file():
                raise FileNotFoundError(Errors.NME011.format(name=self.name, path=path / part))
        if "cfg" in parts:
            self._read_part(path / "cfg", self._read_cfg)
        super().from_disk(path, exclude=[*exclude, "cfg", "model"])  # the vocab, if asked
        if "model" in parts:
            self._read_part(path / "model", lambda p: self._load_model(p.read_bytes()))
            self._apply_quantize()
        return self

    def _load_model(self, data: bytes) -> None:
        """Load the model's weights and learned attrs (its settings stay the config's: see
        ``spacy_nested_mrc.types``), then let its contract's ``after_load`` derive what
        depends on both."""
        self.model.from_bytes(data)
        after_load = contract_of(self.model).after_load
        if after_load is not None and self.model.attrs["labels"]:
            after_load(self.model)

    def _read_cfg(self, path: Path) -> None:
        """Take what training learned (the labels) from a saved ``cfg``; the settings stay
        as the config gave them, so that ``spacy.load(path, config=...)`` and a tuned
        config take effect."""
        saved = srsly.read_json(path)
        for name in LEARNED_CFG:
            if name in saved:
                self.cfg[name] = saved[name]

    def _read_part(self, path: Path, read: Callable[[Path], Any]) -> None:
        try:
            read(path)
        except Exception as err:  # whatever srsly, msgpack, thinc or torch raise on bad data
            raise ValueError(Errors.NME012.format(name=self.name, path=path, error=err)) from err


def config_seed(nlp: Optional[Language]) -> int:
    """The seed of a pipeline's config: ``[training] seed``, else ``[system] seed``, else 0.

    nlp (Optional[Language]): the pipeline.
    RETURNS (int): the seed.
    """
    config = nlp.config.interpolate() if nlp is not None else {}
    for section in ("training", "system"):
        seed = config.get(section, {}).get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            return seed
    return 0


def pipe_defaults() -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): the pipe's settings and their defaults, as
    ``NestedMRCNER``'s signature has them (the factory's default config): all but the
    model, the name and the scorer, which the factory sets."""
    return {
        key: param.default
        for key, param in inspect.signature(NestedMRCNER.__init__).parameters.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY and key != "scorer"
    }


FACTORY = "nested_mrc_ner"


def nested_pipe_names(nlp: Language) -> List[str]:
    """RETURNS (List[str]): the names of the pipeline's ``nested_mrc_ner`` pipes, in order."""
    return [name for name in nlp.pipe_names if nlp.get_pipe_meta(name).factory == FACTORY]


def find_component(nlp: Language, component: Optional[str] = None) -> str:
    """RETURNS (str): the name of the ``nested_mrc_ner`` pipe (``component`` if given).
    RAISES (ValueError): NME040 if there is none, or the name is not such a pipe."""
    names = nested_pipe_names(nlp)
    if component is not None and component in names:
        return component
    if component is None and len(names) == 1:
        return names[0]
    named = "" if component is None else f" named {component!r}"
    raise ValueError(Errors.NME040.format(component=named, found=names or "none"))


@Language.factory(
    FACTORY,
    assigns=["doc.spans"],
    # the pipe's settings have their defaults in ``NestedMRCNER``'s signature, the model's
    # in its blocks' signatures
    default_config={
        "model": DEFAULT_MODEL,
        **pipe_defaults(),
        "scorer": {"@scorers": "spacy-nested-mrc.nested_scorer.v1"},
    },
    default_score_weights={
        "spans_nested_f": 1.0,
        "spans_nested_p": 0.0,
        "spans_nested_r": 0.0,
    },
)
def make_nested_mrc_ner(
    nlp: Language,
    name: str,
    model: Model[SpanBatch, SpanOutput],
    spans_key: str,
    threshold: float,
    label_thresholds: Dict[str, float],
    write_ents: bool,
    split_sentences: bool,
    write_sents: bool,
    strict_spans: bool,
    calibration: Optional[List[float]],
    allow_crossing: bool,
    one_label_per_span: bool,
    quantize: Optional[str],
    runtime: str,
    release_memory_every: int,
    read_ahead_tokens: int,
    scorer: Optional[Callable],
) -> "NestedMRCNER":
    """Create a ``nested_mrc_ner`` pipe.

    model (Model[SpanBatch, SpanOutput]): a registered architecture, e.g.
        spacy-nested-mrc.MRCQuery.v2.
    spans_key (str): the key of ``doc.spans`` to write (and to learn from).
    threshold (float): the least confidence of a span that is written.
    label_thresholds (Dict[str, float]): a label's own least confidence, in place
        of ``threshold`` for its spans (``tune --per-label`` searches them on dev); labels
        not named keep ``threshold`` (empty: ``threshold`` for every label).
    write_ents (bool): also set ``doc.ents`` to a non-overlapping projection of the spans
        (highest score first, then the longest, then the leftmost); off by default, when
        ``doc.ents`` is never touched.
    split_sentences (bool): read a doc without sentence boundaries sentence by sentence, as
        the models learned from sentences, by the boundaries spaCy's rule-based
        ``Sentencizer`` finds (``spacy_nested_mrc.sentences``); a doc with boundaries (a
        parser, senter or sentencizer ran) is read by its own. Off: such a doc is read as
        one text, in overlapping windows across its sentences.
    write_sents (bool): also write the boundaries found to a doc that had none
        (``doc.sents``); off by default, when the pipe never changes another pipe's input.
    strict_spans (bool): raise on gold spans that cannot be learned (unknown label, not
        aligned to tokens) instead of warning with a count.
    calibration (Optional[List[float]]): ``[a, b]``: a span's written score is
        ``sigmoid(a * logit(p) + b)`` of the model's confidence ``p`` (Platt scaling, fitted
        on dev by ``python -m spacy_nested_mrc tune``), and ``threshold`` applies to it;
        null: the model's confidence as it is.
    allow_crossing (bool): write spans that partly overlap (cross) each other; off: of two
        crossing spans only the higher-scoring one is written, as nested-NER corpora
        (GENIA, ACE) annotate none (``initialize`` warns, NMW004, when the training data
        has some).
    one_label_per_span (bool): write at most one label per boundary pair (the
        highest-scoring).
    quantize (Optional[str]): "int8": the encoder's linear layers run in int8 (dynamic
        quantization, CPU inference only; see ``spacy_nested_mrc.encoder.quantization``), applied
        when the pipe is initialized or loaded; null: float.
    runtime (str): what runs the encoder's prediction: "torch", or "onnxruntime" (the
        encoder exported to ONNX when the pipe is initialized or loaded, and run by ONNX
        Runtime on CPU; with quantize = "int8", ONNX Runtime's own int8 quantization; see
        ``spacy_nested_mrc.encoder.onnx``). Training needs "torch".
    release_memory_every (int): inside ``nlp.pipe`` (and so in ``spacy train``'s dev
        evaluations), give the C heap's free memory back to the system every this many docs
        (``spacy_nested_mrc.runtime.memory``); 0: never. Every batch has other lengths, and
        the freed holes otherwise count in the process's resident size.
    read_ahead_tokens (int): inside ``nlp.pipe``, predict over batches of at least this
        many tokens (and at least ``nlp.pipe``'s ``batch_size`` docs): the model reads a
        batch's docs sorted by length, in encoder calls bounded by its own settings, so
        more docs a batch means less padding and fuller calls, whatever batch size the
        caller gives (about 1,000 GENIA sentences at the default); the docs come out in
        input order. 0: batches of ``batch_size`` docs.
    scorer (Optional[Callable]): the scoring method.
    """
    return NestedMRCNER(
        nlp.vocab,
        model,
        name,
        spans_key=spans_key,
        threshold=threshold,
        label_thresholds=label_thresholds,
        write_ents=write_ents,
        split_sentences=split_sentences,
        write_sents=write_sents,
        strict_spans=strict_spans,
        calibration=calibration,
        allow_crossing=allow_crossing,
        one_label_per_span=one_label_per_span,
        quantize=quantize,
        runtime=runtime,
        release_memory_every=release_memory_every,
        read_ahead_tokens=read_ahead_tokens,
        scorer=scorer,
    )


# the callbacks' default: no question beyond the config's and the presets'
NO_QUESTIONS: Dict[str, str] = SimpleFrozenDict()


@registry.callbacks("spacy-nested-mrc.start_from.v1")
def create_start_from(
    path: Optional[str],
    labels: List[str],
    questions: Dict[str, str] = NO_QUESTIONS,
    component: str = FACTORY,
) -> Callable[[Language], Language]:
    """A callback for ``[initialize.after_init]`` that starts a pipe from the same pipe of a
    trained pipeline (an intermediate training's ``model-best``): it takes that pipe's weights
    and labels (``NestedMRCNER.from_disk``), then the labels of the data it is trained on next,
    keeping the weights (``relabel.v1``). The config defines the pipe with the trained one's
    model settings. Unlike ``[components] source``, the config stands without the trained
    pipeline (``spacy debug config`` checks it as any other): the pipeline is read when
    ``nlp.initialize()`` runs (``spacy train``), and a pipe of another model is refused there
    (NME012).

    path (Optional[str]): the trained pipeline's folder; None raises NME223 at initialization.
    labels (List[str]): the new labels, in label-id order.
    questions (Dict[str, str]): label -> question for labels without a known one.
    component (str): the pipe's name, in both pipelines.
    RETURNS (Callable[[Language], Language]): the callback.
    """
    relabel = create_relabel(labels, questions, component)

    def start_from(nlp: Language) -> Language:
        if path is None:
            raise ValueError(Errors.NME223.format(component=component))
        nlp.get_pipe(component).from_disk(ensure_path(path) / component, exclude=["vocab"])
        return relabel(nlp)

    return start_from


@registry.callbacks("spacy-nested-mrc.relabel.v1")
def create_relabel(
    labels: List[str],
    questions: Dict[str, str] = NO_QUESTIONS,
    component: str = FACTORY,
) -> Callable[[Language], Language]:
    """A callback for ``[initialize.after_init]`` that gives a pipe trained on other corpora
    (``[components.nested_mrc_ner] source = ...``) the labels of the data it is trained on
    next, keeping its weights (``NestedMRCNER.relabel``).

    labels (List[str]): the labels, in label-id order.
    questions (Dict[str, str]): label -> question for labels without a known one.
    component (str): the pipe's name.
    RETURNS (Callable[[Language], Language]): the callback.
    """

    def relabel(nlp: Language) -> Language:
        nlp.get_pipe(component).relabel(list(labels), dict(questions))
        return nlp

    return relabel
