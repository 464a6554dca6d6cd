"""BRAT standoff annotation (``name.txt`` + ``name.ann``) to GENIA-style JSON Lines or a DocBin.

BRAT (Stenetorp et al., 2012), the tool people annotate nested entities in, keeps each
document as a text file and an annotation file of the same name, with character offsets
(``end`` exclusive) into the text::

    doc1.txt   IL-2 gene expression requires NF-kappa B.
    doc1.ann   T1<TAB>DNA 0 9<TAB>IL-2 gene
               T2<TAB>protein 0 4<TAB>IL-2
               T3<TAB>protein 30 40<TAB>NF-kappa B
               R1<TAB>Requires Arg1:T1 Arg2:T3
               #1<TAB>AnnotatorNotes T2<TAB>checked

:func:`read_brat` turns them into docs with the entities in ``doc.spans[spans_key]``, and
:func:`convert_brat` writes these as a DocBin or as the JSON Lines records of
:mod:`spacy_nested_mrc.corpora.jsonl`, by these rules:

- the text (read as it is, line endings included, since the offsets count them) is
  tokenized by a spaCy tokenizer (``nlp.make_doc``): one doc per document, or, with
  ``sentences``, one per sentence of spaCy's rule-based sentencizer (without the whitespace
  tokens at its edges; a sentence of whitespace only gives none);
- an entity is a text-bound annotation (``T`` line) with one fragment whose text field is
  the text at its offsets (whitespace may differ: a line break can be written as a space),
  with the whitespace at its edges trimmed. It becomes the span
  ``doc.char_span(start, end, alignment_mode="strict")``;
- nested and crossing entities are kept as they are; an entity with the span and label of
  another of its document is kept once, one with the span of another and another label is
  kept too;
- relations (``R``), events (``E``), attributes (``A``, ``M``), normalizations (``N``),
  notes (``#``), equivalences (``*``) and the text-bound triggers of events are not
  entities: they are counted by kind in the report;
- an annotation that cannot be kept is skipped and reported, with one warning per reason
  for the whole input (its count and examples), or, with ``strict``, stops the conversion
  with NME152 at the first one: see ``SKIP_REASONS``. So is a document whose ``.txt`` or
  ``.ann`` is missing (NMW150).

The JSON Lines records hold the tokens without the whitespace tokens (they have no place in
the format) and the document's name as "doc" (and, per sentence, its index as "sentence");
the docs of the DocBin keep the text as it is, with ``user_data["doc_id"]`` (and
``user_data["sentence"]``). Both are read by ``spacy-nested-mrc.JsonlCorpus.v1``,
``convert`` and ``evaluate``.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import spacy
from spacy.attrs import NORM
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span

from ..errors import Errors, Warnings
from ..files import atomic_files
from ..spans import inside_and_crossing
from ..types import DEFAULT_SPANS_KEY
from .jsonl import is_docbin_path
from .report import CorpusReport, plural, quoted_examples

# Reasons a text-bound annotation (or a line) is skipped, in the order they are checked,
# each with the warning that reports it.
SKIP_REASONS: tuple[str, ...] = (
    "malformed",  # a line of the .ann that is not BRAT standoff
    "discontinuous",  # a text-bound annotation of several fragments ("0 5;10 15")
    "bad_offsets",  # offsets outside the text, end <= start, or only whitespace covered
    "text_mismatch",  # the annotation's text differs from the .txt at its offsets
    "unaligned",  # a boundary falls inside a token of the tokenizer
    "cross_sentence",  # the entity crosses a sentence boundary (with sentence splitting)
)
SKIP_WARNINGS: dict[str, str] = {
    "malformed": "NMW156",
    "discontinuous": "NMW151",
    "bad_offsets": "NMW152",
    "text_mismatch": "NMW153",
    "unaligned": "NMW154",
    "cross_sentence": "NMW155",
}
# The kinds of lines that are not entities, by their first character, and the event
# triggers: text-bound annotations that an event line names as its trigger.
NOT_ENTITY_KINDS: dict[str, str] = {
    "R": "relation",
    "E": "event",
    "A": "attribute",
    "M": "attribute",
    "N": "normalization",
    "#": "note",
    "*": "equivalence",
}
TRIGGER = "event_trigger"
ANN_SUFFIX = ".ann"
TXT_SUFFIX = ".txt"

_NOT_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")


@dataclass
class BratConversionReport(CorpusReport):
    """What was read from BRAT documents, what was kept and what was skipped (``path``: the
    folder or file read; ``skipped``: annotations or lines skipped, by reason
    (``SKIP_REASONS``): ``CorpusReport``).

    documents (int): Number of documents (.txt + .ann pairs) read.
    records (int): Number of docs (JSONL records) made: one per document, or per sentence.
    annotations (int): Number of text-bound annotations (``T`` lines) read.
    entities (int): Number of entities kept as spans.
    nested (int): Entities kept inside another one of their doc (other boundaries).
    crossing (int): Entities kept that partly overlap another one of their doc.
    duplicates (int): Entities with the span and label of another, kept once.
    trimmed (int): Entities whose whitespace at the edges was trimmed.
    types (Dict[str, int]): Entities kept by label.
    not_entities (Dict[str, int]): Lines and triggers that are not entities, by kind (see
        ``NOT_ENTITY_KINDS`` and ``TRIGGER``).
    examples (List[Tuple[str, str]]): Every skipped one as ``(reason, description)``, e.g.
        ``("unaligned", "doc.ann T3 'IL-2' [10, 14) (inside 'IL-2R')")``.
    unpaired (List[str]): The documents skipped for a missing .txt or .ann.
    output_path (Optional[str]): The file written by ``convert_brat``, if any.
    """

    documents: int = 0
    records: int = 0
    annotations: int = 0
    entities: int = 0
    nested: int = 0
    crossing: int = 0
    duplicates: int = 0
    trimmed: int = 0
    types: dict[str, int] = field(default_factory=dict)
    not_entities: dict[str, int] = field(default_factory=dict)
    examples: list[tuple[str, str]] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)
    output_path: str | None = None

    def add_skip(self, reason: str, description: str) -> None:
        """Count a skipped annotation or line.

        reason (str): Why it was skipped, one of ``SKIP_REASONS``.
        description (str): The annotation and the problem, as quoted in the warnings.
        """
        self.count_skip(reason)
        self.examples.append((reason, description))

    def summary(self) -> str:
        """A short human-readable summary.

        RETURNS (str): The counts, then one line per kind of non-entity, per skip reason
            (with its warning code and a few examples) and for the unpaired documents.
        """
        by_type = ", ".join(f"{t} {n:,}" for t, n in sorted(self.types.items()))
        lines = [
            f"Read {self.documents:,} BRAT document{plural(self.documents)}{self.where} "
            f"({self.records:,} record{plural(self.records)}): {self.entities:,} "
            f"entit{'y' if self.entities == 1 else 'ies'} kept ({by_type or 'none'}) of "
            f"{self.annotations:,} text-bound annotation{plural(self.annotations)}; "
            f"{self.nested:,} nested, {self.crossing:,} crossing.",
        ]
        not_entities = ", ".join(f"{k} {n:,}" for k, n in sorted(self.not_entities.items()))
        lines.append(f"  not entities: {not_entities or 'none'}")
        lines.append(
            f"  same span and label as another: {self.duplicates:,} (kept once); "
            f"whitespace trimmed at the edges: {self.trimmed:,}"
        )
        for reason in SKIP_REASONS:
            if self.skipped.get(reason):
                quoted = [d for r, d in self.examples if r == reason]
                lines.append(
                    f"  skipped, {reason} [{SKIP_WARNINGS[reason]}]: {self.skipped[reason]:,}"
                    f" (e.g. {quoted_examples(quoted)})"
                )
        if self.unpaired:
            lines.append(
                f"  documents skipped, .txt or .ann missing [NMW150]: {len(self.unpaired):,}"
                f" ({quoted_examples(self.unpaired)})"
            )
        if self.output_path:
            lines.append(f"Saved to {self.output_path}")
        return "\n".join(lines)


@dataclass(frozen=True)
class BratAnnotation:
    """A text-bound annotation (``T`` line) of a .ann file.

    id (str): Its id, e.g. "T3".
    label (str): Its type, e.g. "protein".
    fragments (Tuple[Tuple[int, int], ...]): Its character offsets, ``(start, end)`` per
        fragment (one for a continuous annotation), ``end`` exclusive.
    text (Optional[str]): Its text field, None if the line has none.
    line (int): Its 1-based line number in the .ann.
    """

    id: str
    label: str
    fragments: tuple[tuple[int, int], ...]
    text: str | None
    line: int

    def describe(self, file_name: str) -> str:
        """RETURNS (str): e.g. "doc.ann T3 'IL-2' [10, 14)", as the reports quote it."""
        offsets = " ".join(f"[{start}, {end})" for start, end in self.fragments)
        text = f" {self.text!r}" if self.text is not None else ""
        return f"{file_name} {self.id}{text} {offsets}"


@dataclass
class BratAnnotations:
    """What a .ann file holds, as read by :func:`parse_ann`.

    annotations (List[BratAnnotation]): The text-bound annotations, in file order.
    triggers (Set[str]): The ids of the text-bound annotations that are event triggers.
    not_entities (Dict[str, int]): The other lines by kind (``NOT_ENTITY_KINDS``).
    malformed (List[Tuple[int, str]]): The lines that are not BRAT standoff, as
        ``(line number, line)``.
    """

    annotations: list[BratAnnotation] = field(default_factory=list)
    triggers: set[str] = field(default_factory=set)
    not_entities: dict[str, int] = field(default_factory=dict)
    malformed: list[tuple[int, str]] = field(default_factory=list)


def parse_ann(text: str) -> BratAnnotations:
    """Parse the content of a BRAT .ann file.

    text (str): The file's content.
    RETURNS (BratAnnotations): Its text-bound annotations, the ids of event triggers, the
        other lines counted by kind and the malformed lines.
    """
    parsed = BratAnnotations()
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        kind = line[0]
        if kind == "T":
            annotation = _parse_text_bound(line, number)
            if annotation is None:
                parsed.malformed.append((number, line))
            else:
                parsed.annotations.append(annotation)
        elif kind in NOT_ENTITY_KINDS and "\t" in line:
            name = NOT_ENTITY_KINDS[kind]
            parsed.not_entities[name] = parsed.not_entities.get(name, 0) + 1
            if kind == "E":
                # E1<TAB>Binding:T5 Theme:T2 Theme2:T3: T5 is the trigger
                fields = line.split("\t")[1].split()
                if fields and ":" in fields[0]:
                    parsed.triggers.add(fields[0].split(":", 1)[1])
        else:
            parsed.malformed.append((number, line))
    return parsed


def _parse_text_bound(line: str, number: int) -> BratAnnotation | None:
    fields = line.split("\t", 2)
    if len(fields) < 2:
        return None
    label, _, offsets = fields[1].partition(" ")
    fragments = []
    for fragment in offsets.split(";"):
        parts = fragment.split()
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            return None
        fragments.append((int(parts[0]), int(parts[1])))
    if not label:
        return None
    text = fields[2] if len(fields) == 3 else None
    return BratAnnotation(
        id=fields[0], label=label, fragments=tuple(fragments), text=text, line=number
    )


def brat_documents(path: str | Path) -> list[tuple[str, Path | None, Path | None]]:
    """The BRAT documents of a folder (not its subfolders), or of one .ann or .txt file.

    path (Union[str, Path]): A folder of ``name.txt`` + ``name.ann`` files, or one of them
        (its partner is looked for beside it).
    RETURNS (List[Tuple[str, Optional[Path], Optional[Path]]]): ``(name, txt, ann)`` per
        document, sorted by name; ``txt`` or ``ann`` is None where the file is missing.
    RAISES (FileNotFoundError): NME150 if the path does not exist.
    RAISES (ValueError): NME151 if it is a folder without .ann and .txt files, or a file
        that is neither.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(Errors.NME150.format(path=path))
    if path.is_dir():
        files = [p for p in path.iterdir() if p.is_file() and p.suffix in (ANN_SUFFIX, TXT_SUFFIX)]
        if not files:
            problem = "the folder has no .ann or .txt file (subfolders are not searched)"
            raise ValueError(Errors.NME151.format(path=path, problem=problem))
        names = sorted({p.stem for p in files})
        folder = path
    elif path.suffix in (ANN_SUFFIX, TXT_SUFFIX):
        names = [path.stem]
        folder = path.parent
    else:
        problem = f"a file ending in '{path.suffix}', neither {ANN_SUFFIX} nor {TXT_SUFFIX}"
        raise ValueError(Errors.NME151.format(path=path, problem=problem))
    documents = []
    for name in names:
        txt, ann = folder / f"{name}{TXT_SUFFIX}", folder / f"{name}{ANN_SUFFIX}"
        documents.append((name, txt if txt.is_file() else None, ann if ann.is_file() else None))
    return documents


def read_brat(
    path: str | Path,
    *,
    nlp: Language | None = None,
    lang: str = "en",
    spans_key: str = DEFAULT_SPANS_KEY,
    sentences: bool = False,
    strict: bool = False,
    report: BratConversionReport | None = None,
) -> Iterator[Doc]:
    """Read BRAT documents into docs with their entities as spans, lazily.

    See the module's docstring for the rules. The input is checked when the function is
    called; the documents are read as the iterator is consumed. When it is consumed to its
    end, one warning per skip reason (NMW151-NMW156) and one for the documents with a
    missing .txt or .ann (NMW150) give the counts and examples for the whole input.

    path (Union[str, Path]): A folder of ``name.txt`` + ``name.ann`` files (subfolders are
        not searched), or one .ann or .txt file of a pair.
    nlp (Optional[Language]): The pipeline whose tokenizer (``nlp.make_doc``) splits the
        text and whose vocab the docs get; its components are not run.
    lang (str): The language of the blank pipeline used when no ``nlp`` is given.
    spans_key (str): The key of the span group holding the entities.
    sentences (bool): One doc per sentence (spaCy's rule-based sentencizer) rather than per
        document. An entity across a sentence boundary is skipped (NMW155).
    strict (bool): Raise NME152 on the first annotation, line or document that cannot be
        kept, instead of skipping and reporting it.
    report (Optional[BratConversionReport]): A report to count in. Its ``path`` is set if it
        has none.
    RETURNS (Iterator[Doc]): One doc per document (or sentence), in name order, with the
        entities in ``doc.spans[spans_key]`` and the document's name in
        ``doc.user_data["doc_id"]`` (and the sentence's 0-based index in
        ``doc.user_data["sentence"]``).
    RAISES (FileNotFoundError): NME150 if the input does not exist (when called).
    RAISES (ValueError): NME151 for an input without BRAT files (when called), NME153 for a
        file that is not UTF-8, NME152 in strict mode.
    """
    documents = brat_documents(path)
    if nlp is None:
        nlp = spacy.blank(lang)
    if report is None:
        report = BratConversionReport()
    if report.path is None:
        report.path = str(path)
    return _read_brat(documents, Path(path), nlp, spans_key, sentences, strict, report)


def _read_brat(
    documents: list[tuple[str, Path | None, Path | None]],
    path: Path,
    nlp: Language,
    spans_key: str,
    sentences: bool,
    strict: bool,
    report: BratConversionReport,
) -> Iterator[Doc]:
    n_examples_before = len(report.examples)
    n_unpaired_before = len(report.unpaired)
    sentencizer = nlp.create_pipe("sentencizer") if sentences else None
    for name, txt, ann in documents:
        if txt is None or ann is None:
            present = txt if ann is None else ann
            assert present is not None  # brat_documents names the files it found
            missing = f"{name}{ANN_SUFFIX if ann is None else TXT_SUFFIX}"
            if strict:
                raise ValueError(
                    Errors.NME152.format(what=present.name, path=path, problem=f"no {missing}")
                )
            report.unpaired.append(f"{present.name} (no {missing})")
            continue
        doc, entities = _read_document(txt, ann, nlp, strict, report)
        if sentencizer is None:
            yield _finish(doc, entities, name, None, spans_key, report)
        else:
            doc = sentencizer(doc)
            for index, (sentence, inside) in enumerate(
                _split_sentences(doc, entities, ann, strict, report)
            ):
                yield _finish(sentence, inside, name, index, spans_key, report)
    _warn(path, report, n_examples_before, n_unpaired_before)


def _warn(
    path: Path, report: BratConversionReport, n_examples_before: int, n_unpaired_before: int
) -> None:
    unpaired = report.unpaired[n_unpaired_before:]
    if unpaired:
        warnings.warn(
            Warnings.NMW150.format(
                count=len(unpaired),
                plural=plural(len(unpaired)),
                path=path,
                examples=quoted_examples(unpaired),
            ),
            stacklevel=3,
        )
    by_reason: dict[str, list[str]] = {}
    for reason, description in report.examples[n_examples_before:]:
        by_reason.setdefault(reason, []).append(description)
    for reason in SKIP_REASONS:
        if reason in by_reason:
            count = len(by_reason[reason])
            template = getattr(Warnings, SKIP_WARNINGS[reason])
            message = template.format(
                count=count, plural=plural(count), path=path,
                examples=quoted_examples(by_reason[reason]),
            )
            warnings.warn(message, stacklevel=3)


def _read_text(path: Path) -> str:
    # newline="": the offsets count the characters as they are, "\r\n" as two
    try:
        with path.open("r", encoding="utf-8", newline="") as file_:
            return file_.read()
    except UnicodeDecodeError as err:
        raise ValueError(Errors.NME153.format(path=path, error=err)) from err


def _skip(
    report: BratConversionReport, strict: bool, path: Path, reason: str, what: str, problem: str
) -> None:
    if strict:
        raise ValueError(Errors.NME152.format(what=what, path=path, problem=problem))
    report.add_skip(reason, f"{what} ({problem})")


def _texts_match(expected: str, actual: str) -> bool:
    # BRAT writes a line break inside an annotation as a space in the text field
    return expected == actual or _SPACE.sub(" ", expected) == _SPACE.sub(" ", actual)


# An entity on the tokens of a doc: (start, end, label, the annotation it comes from).
_Entity = tuple[int, int, str, BratAnnotation]


def _read_document(
    txt: Path, ann: Path, nlp: Language, strict: bool, report: BratConversionReport
) -> tuple[Doc, list[_Entity]]:
    """The doc of a document and its entities, sorted by start, longest first."""
    text = _read_text(txt)
    parsed = parse_ann(_read_text(ann))
    for kind, count in parsed.not_entities.items():
        report.not_entities[kind] = report.not_entities.get(kind, 0) + count
    doc = nlp.make_doc(text)
    report.documents += 1
    entities: dict[tuple[int, int, str], _Entity] = {}
    # in file order, so that strict mode stops at the first problem
    lines: list[tuple[int, BratAnnotation | str]] = [
        *((annotation.line, annotation) for annotation in parsed.annotations),
        *parsed.malformed,
    ]
    lines.sort(key=lambda item: item[0])
    for number, annotation in lines:
        if isinstance(annotation, str):
            what = f"{ann.name} line {number}: {annotation!r}"
            _skip(report, strict, ann, "malformed", what, "not a BRAT standoff line")
            continue
        report.annotations += 1
        if annotation.id in parsed.triggers:
            report.not_entities[TRIGGER] = report.not_entities.get(TRIGGER, 0) + 1
            continue
        span = _align(annotation, text, doc, ann, strict, report)
        if span is None:
            continue
        key = (span.start, span.end, annotation.label)
        if key in entities:
            report.duplicates += 1
            continue
        entities[key] = (span.start, span.end, annotation.label, annotation)
    return doc, sorted(entities.values(), key=lambda e: (e[0], -e[1], e[2]))


def _align(
    annotation: BratAnnotation,
    text: str,
    doc: Doc,
    ann: Path,
    strict: bool,
    report: BratConversionReport,
) -> Span | None:
    """The span of an annotation's tokens, or None (reported) if it has none."""
    what = annotation.describe(ann.name)
    if len(annotation.fragments) > 1:
        problem = f"{len(annotation.fragments)} fragments"
        _skip(report, strict, ann, "discontinuous", what, problem)
        return None
    start, end = annotation.fragments[0]
    if end > len(text) or end <= start:
        if end > len(text):
            problem = f"offsets beyond the text's {len(text)} characters"
        else:
            problem = "end <= start: no text"
        _skip(report, strict, ann, "bad_offsets", what, problem)
        return None
    covered = text[start:end]
    if annotation.text is not None and not _texts_match(annotation.text, covered):
        _skip(report, strict, ann, "text_mismatch", what, f"the .txt has {covered!r} there")
        return None
    first = _NOT_SPACE.search(covered)
    if first is None:
        _skip(report, strict, ann, "bad_offsets", what, "only whitespace")
        return None
    trimmed_start = start + first.start()
    trimmed_end = start + len(covered.rstrip())
    if (trimmed_start, trimmed_end) != (start, end):
        report.trimmed += 1
    span = doc.char_span(trimmed_start, trimmed_end, alignment_mode="strict")
    if span is None:
        tokens = doc.char_span(trimmed_start, trimmed_end, alignment_mode="expand")
        inside = repr(tokens.text) if tokens is not None else "?"
        problem = f"a boundary falls inside {inside}"
        _skip(report, strict, ann, "unaligned", what, problem)
    return span


def _split_sentences(
    doc: Doc, entities: list[_Entity], ann: Path, strict: bool, report: BratConversionReport
) -> Iterator[tuple[Doc, list[_Entity]]]:
    """The sentences of a doc (without whitespace tokens at their edges; none of
    whitespace only) as docs, each with its entities; the entities across a sentence
    boundary are skipped (reported)."""
    bounds: list[tuple[int, int]] = []  # (first, end) tokens of the sentences
    for sent in doc.sents:
        words = [token.i for token in sent if not token.is_space]
        if words:
            bounds.append((words[0], words[-1] + 1))
    sentence_of: dict[int, int] = {}
    for index, (first, end) in enumerate(bounds):
        for i in range(first, end):
            sentence_of[i] = index
    inside: list[list[_Entity]] = [[] for _ in bounds]
    for start, end, label, annotation in entities:
        # an entity starts and ends on a token that is not whitespace, so in a sentence
        first_sentence, last_sentence = sentence_of[start], sentence_of[end - 1]
        if first_sentence != last_sentence:
            problem = f"across sentences {first_sentence} to {last_sentence}"
            _skip(report, strict, ann, "cross_sentence", annotation.describe(ann.name), problem)
            continue
        inside[first_sentence].append((start, end, label, annotation))
    for index, (first, end) in enumerate(bounds):
        moved = [(s - first, e - first, label, a) for s, e, label, a in inside[index]]
        yield _sentence_doc(doc, first, end), moved


def _sentence_doc(doc: Doc, first: int, end: int) -> Doc:
    """The tokens ``first`` to ``end`` of a doc as a doc, without the whitespace after the
    last one, keeping what the tokenizer set (the norms of its special cases)."""
    tokens = doc[first:end]
    spaces = [bool(token.whitespace_) for token in tokens]
    spaces[-1] = False
    sentence = Doc(doc.vocab, words=[token.text for token in tokens], spaces=spaces)
    sentence.from_array([NORM], doc.to_array([NORM])[first:end])
    return sentence


def _finish(
    doc: Doc,
    entities: list[_Entity],
    name: str,
    sentence: int | None,
    spans_key: str,
    report: BratConversionReport,
) -> Doc:
    """Put the entities and ids on a doc and count them."""
    doc.spans[spans_key] = [Span(doc, start, end, label=label) for start, end, label, _ in entities]
    doc.user_data["doc_id"] = name
    if sentence is not None:
        doc.user_data["sentence"] = sentence
    nested, crossing = count_nested_crossing([(start, end) for start, end, _, _ in entities])
    report.records += 1
    report.entities += len(entities)
    report.nested += nested
    report.crossing += crossing
    for _, _, label, _ in entities:
        report.types[label] = report.types.get(label, 0) + 1
    return doc


def count_nested_crossing(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """How many spans lie inside another and how many cross another
    (``spans.inside_and_crossing``).

    spans (List[Tuple[int, int]]): ``(start, end)`` offsets, ``end`` exclusive; spans with
        the same offsets (several labels) are counted each.
    RETURNS (Tuple[int, int]): The number of spans inside another span with other offsets,
        and of spans partly overlapping another (neither inside the other).
    """
    bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    inside, crossing = inside_and_crossing(bounds[:, 0], bounds[:, 1])
    return int(inside.sum()), int(crossing.sum())


def doc_to_record(doc: Doc, spans_key: str = DEFAULT_SPANS_KEY) -> dict[str, Any]:
    """The GENIA-style JSON Lines record of a doc, as ``corpora.jsonl`` reads it.

    Whitespace tokens are left out (the format joins tokens with single spaces), and the
    span offsets are moved to match; a span of whitespace only is left out.

    doc (Doc): The doc, e.g. from :func:`read_brat`.
    spans_key (str): The key of the span group holding the entities.
    RETURNS (Dict[str, Any]): ``{"tokens": [...], "entities": [{"start", "end", "type"},
        ...]}``, with ``user_data["doc_id"]`` as "doc" and ``user_data["sentence"]`` as
        "sentence" where the doc has them.
    """
    index: dict[int, int] = {}
    tokens: list[str] = []
    for token in doc:
        if not token.is_space:
            index[token.i] = len(tokens)
            tokens.append(token.text)
    entities = []
    for span in doc.spans[spans_key] if spans_key in doc.spans else []:
        inner = [index[token.i] for token in span if token.i in index]
        if inner:
            entities.append({"start": inner[0], "end": inner[-1] + 1, "type": span.label_})
    record: dict[str, Any] = {"tokens": tokens, "entities": entities}
    for key, field_name in (("doc_id", "doc"), ("sentence", "sentence")):
        if doc.user_data.get(key) is not None:
            record[field_name] = doc.user_data[key]
    return record


def convert_brat(
    input_path: str | Path,
    output_path: str | Path,
    *,
    nlp: Language | None = None,
    lang: str = "en",
    spans_key: str = DEFAULT_SPANS_KEY,
    sentences: bool = False,
    strict: bool = False,
) -> BratConversionReport:
    """Convert BRAT documents to a DocBin (an output ending in .spacy) or GENIA-style JSONL.

    The docs of :func:`read_brat` are written as they are to a DocBin (with their user
    data), or as the records of :func:`doc_to_record` to JSON Lines. Parent folders are
    created; the output replaces an earlier one only once the whole input was read.

    input_path (Union[str, Path]): A folder of ``name.txt`` + ``name.ann`` files, or one
        .ann or .txt file of a pair.
    output_path (Union[str, Path]): The file to write: a DocBin if it ends in ".spacy",
        else JSON Lines.
    nlp (Optional[Language]): The pipeline whose tokenizer splits the text.
    lang (str): The language of the blank pipeline used when no ``nlp`` is given.
    spans_key (str): The key of the span group holding the entities.
    sentences (bool): One record per sentence rather than per document.
    strict (bool): Raise NME152 on the first problem instead of skipping and reporting.
    RETURNS (BratConversionReport): What was read, kept and skipped.
    RAISES (FileNotFoundError): NME150 if the input does not exist.
    RAISES (ValueError): NME151 for an input without BRAT files, NME152 in strict mode,
        NME153 for a file that is not UTF-8, NME154 if the output is a folder.
    """
    if Path(output_path).is_dir() or str(output_path).endswith(("/", os.sep)):
        raise ValueError(Errors.NME154.format(path=output_path))
    output_path = Path(output_path)
    report = BratConversionReport(path=str(input_path))
    docs = read_brat(
        input_path, nlp=nlp, lang=lang, spans_key=spans_key, sentences=sentences,
        strict=strict, report=report,
    )
    with atomic_files({"output": output_path}) as partial:
        if is_docbin_path(output_path):
            doc_bin = DocBin(store_user_data=True)
            for doc in docs:
                doc_bin.add(doc)
            doc_bin.to_disk(partial["output"])
        else:
            with partial["output"].open("w", encoding="utf-8") as file_:
                for doc in docs:
                    record = doc_to_record(doc, spans_key)
                    file_.write(json.dumps(record, ensure_ascii=False) + "\n")
    report.output_path = str(output_path)
    return report


__all__ = [
    "SKIP_REASONS",
    "BratAnnotation",
    "BratAnnotations",
    "BratConversionReport",
    "brat_documents",
    "convert_brat",
    "count_nested_crossing",
    "doc_to_record",
    "parse_ann",
    "read_brat",
]
