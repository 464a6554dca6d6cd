"""Reading GENIA-style nested-NER JSON Lines into spaCy ``Doc`` objects.

One sentence per line::

    {"tokens": ["the", "p53", "promoter", ...],
     "entities": [{"start": 1, "end": 3, "type": "DNA"}, ...],
     "doc": "abstract-17"}

``start``/``end`` are token offsets (``end`` exclusive). With ``group_by`` (the
"doc" field for GENIA), consecutive sentences of one document become one doc, with
the file's sentence boundaries; a sentence with ``"annotated": false`` is context
only: its text is read, its entities are skipped (reason "context_only"), and it is
marked in ``doc.spans[unannotated_key(spans_key)]`` so that nothing is learned from
it or scored there (``spacy_nested_mrc.annotation``). A record may name the labels its
corpus annotates (``"labels": ["GENE"]``, or the reader's ``labels`` setting for every
record without its own): its text is marked in ``doc.spans[labeled_key(spans_key)]``, so
that the other labels are neither taught as "no entity" there nor scored, and an entity of
another label is skipped (reason "label_not_annotated"). The tokens are kept as
they are; every valid entity becomes a ``Span`` in ``doc.spans[spans_key]``, a
``SpanGroup`` in which spans may overlap and nest. Entities that cannot be
represented are skipped and counted in a :class:`ConversionReport` (and reported
with warning NMW001), or, in strict mode, stop the reading with error NME105.

The registered reader also reads the ``DocBin`` (.spacy) files that ``convert``
writes, so a config can train on either.
"""
from __future__ import annotations

import io
import itertools
import json
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.vocab import Vocab

from ..annotation import labeled_key, mark_labels, unannotated_key
from ..characters import may_hold_surrogates, repair_value
from ..errors import Errors, Warnings
from ..files import atomic_files, open_bytes
from ..inputs import read_once
from ..types import DEFAULT_SPANS_KEY
from .report import N_QUOTED_EXAMPLES, CorpusReport, plural, quote, quoted_examples

# the sample of GENIA-style sentences shipped with the package (train.jsonl, dev.jsonl)
SAMPLE_DIR = Path(__file__).parents[1] / "sample"

# Reasons an entity is skipped, in the order they are checked.
SKIP_REASONS: tuple[str, ...] = (
    "malformed",  # the entity is not an object with "start", "end" and "type"
    "not_integer",  # start or end is not an integer (e.g. 2.5, "3", true)
    "bad_type",  # the type is not a string, or is an empty/blank string
    "out_of_range",  # start < 0 or end > number of tokens
    "empty",  # end <= start: the span covers no token
    "duplicate",  # same (start, end, type) as an earlier entity of the sentence
    "context_only",  # an entity of a sentence given as context only ("annotated": false)
    "label_not_annotated",  # its type is not among the labels its record annotates
)

@dataclass
class ConversionReport(CorpusReport):
    """Counts of what was read from a JSONL file and what had to be skipped (``path`` and
    ``skipped``, entities by reason (see ``SKIP_REASONS``): ``CorpusReport``).

    docs (int): Number of sentence records turned into docs.
    documents (int): Number of docs read: ``docs`` where each record is one, fewer where
        the records are grouped into documents (``group_by``).
    entities (int): Number of entities kept as spans.
    examples (List[Tuple[int, Any, str]]): Every skipped entity as
        ``(line, entity, reason)``, with the 1-based line number of its record.
    output_path (Optional[str]): The file written by ``convert``, if any.
    """

    docs: int = 0
    documents: int = 0
    entities: int = 0
    examples: list[tuple[int, Any, str]] = field(default_factory=list)
    output_path: str | None = None

    def add_skip(self, line: int, entity: Any, reason: str) -> None:
        """Count a skipped entity.

        line (int): The 1-based line number of the record.
        entity (Any): The entity as found in the record.
        reason (str): Why it was skipped, one of ``SKIP_REASONS``.
        """
        self.count_skip(reason)
        self.examples.append((line, entity, reason))

    def summary(self) -> str:
        """A short human-readable summary.

        RETURNS (str): One line with the counts, followed by one line per skip
            reason and a few quoted examples when entities were skipped.
        """
        grouped = f" as {self.documents} documents" if self.documents != self.docs else ""
        lines = [
            f"Read {self.docs} doc{plural(self.docs)}{grouped}{self.where}: "
            f"{self.entities} entit{'y' if self.entities == 1 else 'ies'} kept, "
            f"{self.n_skipped} skipped."
        ]
        for reason in _ordered_reasons(self.skipped):
            lines.append(f"  {reason}: {self.skipped[reason]}")
        for line, entity, reason in self.examples[:N_QUOTED_EXAMPLES]:
            lines.append(f"  e.g. line {line}: {quote(entity)} ({reason})")
        if len(self.examples) > N_QUOTED_EXAMPLES:
            lines.append(f"  ... and {len(self.examples) - N_QUOTED_EXAMPLES} more")
        return "\n".join(lines)


def _ordered_reasons(counts: dict[str, int]) -> list[str]:
    known = [r for r in SKIP_REASONS if counts.get(r)]
    return known + sorted(r for r in counts if r not in SKIP_REASONS and counts[r])


def _details(counts: dict[str, int], examples: list[tuple[int, Any, str]]) -> str:
    parts = [f"{reason}: {counts[reason]}" for reason in _ordered_reasons(counts)]
    text = ", ".join(parts)
    if examples:
        quoted = [f"line {line} {quote(entity)} ({reason})"
                  for line, entity, reason in examples[:N_QUOTED_EXAMPLES]]
        text += f" (e.g. {quoted_examples(quoted, len(examples))})"
    return text


def _is_int(value: Any) -> bool:
    # bool is a subclass of int but true/false are not offsets.
    return isinstance(value, int) and not isinstance(value, bool)


def iter_records(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Read a JSON Lines file of sentence records lazily.

    Blank lines are skipped. The file's existence is checked when the function
    is called; the lines are read as the iterator is consumed.

    path (Union[str, Path]): The JSONL file.
    RETURNS (Iterator[Tuple[int, dict]]): ``(line, record)`` pairs, with the
        1-based line number of the record in the file.
    RAISES (FileNotFoundError): NME104 if the file does not exist.
    RAISES (ValueError): NME101 if a line is not valid JSON, NME102 if a line
        is not an object with a list of non-empty strings under "tokens" (and,
        if present, a list under "entities" and a true or false per token under
        "spaces").
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(Errors.NME104.format(path=path))
    return _iter_records(path)


def _iter_records(path: Path) -> Iterator[tuple[int, dict]]:
    repaired, lines = 0, []  # lone surrogates replaced (``characters``), on which lines
    # utf-8-sig: a leading byte-order mark (as some editors write) is read as such
    with open_text(path, "utf-8-sig") as file_:
        for i, text in enumerate(file_, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(Errors.NME101.format(path=path, line=i, error=err)) from err
            if may_hold_surrogates(text):
                record, count = repair_value(record)
                if count:
                    repaired += count
                    lines.append(i)
            problem = _record_problem(record)
            if problem is not None:
                raise ValueError(Errors.NME102.format(line=i, path=path, problem=problem))
            yield i, record
    if repaired:
        shown = ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
        warnings.warn(Warnings.NMW006.format(
            count=repaired, where=f"{path} ({len(lines)} record(s), line(s) {shown})"))


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    tokens = record.get("tokens")
    if not isinstance(tokens, list):
        if "tokens" not in record:
            return 'no "tokens" field'
        return f'"tokens" must be a list, got {type(tokens).__name__}'
    for j, token in enumerate(tokens):
        if not isinstance(token, str):
            return f"token {j} is not a string: {quote(token)}"
        if not token:
            return f"token {j} is an empty string"
    entities = record.get("entities", [])
    if entities is not None and not isinstance(entities, list):
        return f'"entities" must be a list, got {type(entities).__name__}'
    if not isinstance(record.get("annotated", True), bool):
        return f'"annotated" must be true or false, got {quote(record["annotated"])}'
    if "labels" in record and not _is_label_list(record["labels"]):
        return f'"labels" must be a list of label names, got {quote(record["labels"])}'
    spaces = record.get("spaces")
    if spaces is not None and (
        not isinstance(spaces, list) or len(spaces) != len(tokens)
        or not all(isinstance(space, bool) for space in spaces)
    ):
        return (f'"spaces" must be a list of true or false, one per token ({len(tokens)}), '
                f"got {quote(spaces)}")
    return None


def _is_label_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def _entity_problem(entity: Any, n_tokens: int, seen: set) -> str | None:
    if not isinstance(entity, dict) or not {"start", "end", "type"} <= entity.keys():
        return "malformed"
    start, end, label = entity["start"], entity["end"], entity["type"]
    if not (_is_int(start) and _is_int(end)):
        return "not_integer"
    if not isinstance(label, str) or not label.strip():
        return "bad_type"
    if start < 0 or end > n_tokens:
        return "out_of_range"
    if end <= start:
        return "empty"
    if (start, end, label) in seen:
        return "duplicate"
    return None


def record_to_doc(
    vocab: Vocab,
    record: dict,
    line: int,
    spans_key: str,
    report: ConversionReport | None,
    *,
    strict: bool = False,
    path: str | Path | None = None,
    labels: list[str] | None = None,
) -> Doc:
    """Turn one sentence record into a ``Doc`` with its entities as spans.

    The tokens become the doc's words, separated by single spaces (no space
    after the last one) unless the record's "spaces" says, per token, whether a space
    follows it (``spaCy``'s ``Doc(words, spaces)``: the text as written); an empty token
    list gives an empty doc. Every valid
    entity is added to ``doc.spans[spans_key]`` (overlapping and nested spans
    are allowed); the key is set even when there are none. The record's "doc"
    field, if present, is stored in ``doc.user_data["doc_id"]``.

    An entity is skipped when it is malformed (not an object with "start",
    "end" and "type"), has a non-integer offset ("not_integer" - with given
    tokens an entity can only cross a token boundary through such an offset),
    has a non-string or blank type ("bad_type"), lies outside the tokens
    ("out_of_range"), covers no token, i.e. end <= start ("empty"), repeats
    an earlier entity with the same offsets and type ("duplicate"), or belongs to a
    sentence given as context only ("context_only": ``"annotated": false``, whose
    text is marked in ``doc.spans[unannotated_key(spans_key)]``), or has a type that is
    not among the labels the record annotates ("label_not_annotated").

    The labels a record annotates are its "labels" field, else ``labels``, else all:
    with a set, the doc is marked in ``doc.spans[labeled_key(spans_key)]``
    (``annotation.mark_labels``); an empty set makes the sentence context only.

    vocab (Vocab): The vocab to create the doc with.
    record (dict): The sentence record, as yielded by ``iter_records``.
    line (int): The record's 1-based line number, for the report and errors.
    spans_key (str): The key of the span group to store the entities in.
    report (Optional[ConversionReport]): Report to count docs, kept and skipped
        entities in.
    strict (bool): Raise on the first invalid entity instead of skipping it.
    path (Optional[Union[str, Path]]): The file the record is from, for the
        error message; defaults to ``report.path``.
    labels (Optional[List[str]]): The labels annotated by a record without a "labels"
        field (the reader's setting); None: all labels.
    RETURNS (Doc): The doc.
    RAISES (ValueError): NME105 in strict mode if an entity is invalid.
    """
    tokens = record["tokens"]
    spaces = record.get("spaces")
    if spaces is None:
        spaces = [True] * len(tokens)
        if spaces:
            spaces[-1] = False
    doc = Doc(vocab, words=tokens, spaces=spaces)
    spans: list[Span] = []
    seen: set[tuple[int, int, str]] = set()
    annotated = record.get("annotated", True)
    annotates = record.get("labels", labels)
    if annotates is not None and not annotates:
        annotated = False
    for entity in record.get("entities") or []:
        reason = _entity_problem(entity, len(tokens), seen) if annotated else "context_only"
        if reason is None and annotates is not None and entity["type"] not in annotates:
            reason = "label_not_annotated"
        if reason is not None:
            if strict:
                where = path if path is not None else (report.path if report else None)
                details = f"line {line}: {quote(entity)} is {reason}"
                raise ValueError(Errors.NME105.format(path=where or "<record>", details=details))
            if report is not None:
                report.add_skip(line, entity, reason)
            continue
        start, end, label = entity["start"], entity["end"], entity["type"]
        seen.add((start, end, label))
        spans.append(Span(doc, start, end, label=label))
    doc.spans[spans_key] = spans
    if not annotated and len(doc):
        doc.spans[unannotated_key(spans_key)] = [doc[:]]
    elif annotates is not None:
        mark_labels(doc, spans_key, annotates)
    if "doc" in record and record["doc"] is not None:
        doc.user_data["doc_id"] = record["doc"]
    if report is not None:
        report.docs += 1
        report.entities += len(spans)
    return doc


def read_jsonl(
    path: str | Path,
    vocab: Vocab,
    spans_key: str = DEFAULT_SPANS_KEY,
    *,
    strict: bool = False,
    limit: int = 0,
    report: ConversionReport | None = None,
    group_by: str | None = None,
    labels: list[str] | None = None,
) -> Iterator[Doc]:
    """Read a GENIA-style JSONL file into docs, lazily.

    When the file has been read to its end (or ``limit`` docs were read) and
    entities were skipped, warning NMW001 is emitted once with the counts by
    reason for this file. A generator closed before that point does not warn;
    the report still holds the counts so far.

    path (Union[str, Path]): The JSONL file.
    vocab (Vocab): The vocab to create the docs with.
    spans_key (str): The key of the span group holding the entities.
    strict (bool): Raise NME105 on the first invalid entity instead of skipping.
    limit (int): Stop after this many docs; 0 reads all of them.
    report (Optional[ConversionReport]): A report to fill in; counts are added
        to it, so one report can cover several files. Its ``path`` is set if
        it has none.
    group_by (Optional[str]): A record field (GENIA: "doc"): consecutive records
        with the same value of it are the sentences of one doc (``join_sentences``);
        a record without it is a doc of its own. None: one doc per record.
    labels (Optional[List[str]]): The labels annotated by every record without a "labels"
        field of its own (``record_to_doc``); None: all labels.
    YIELDS (Doc): One doc per sentence (or document), entities in
        ``doc.spans[spans_key]``.
    RAISES (FileNotFoundError): NME104 if the file does not exist (when called).
    RAISES (ValueError): NME101/NME102 for bad lines, NME105 in strict mode.
    """
    records = iter_records(path)
    if report is None:
        report = ConversionReport()
    if report.path is None:
        report.path = str(path)
    return _read_jsonl(records, Path(path), vocab, spans_key, strict, limit, report, group_by,
                       labels)


def _read_jsonl(
    records: Iterator[tuple[int, dict]],
    path: Path,
    vocab: Vocab,
    spans_key: str,
    strict: bool,
    limit: int,
    report: ConversionReport,
    group_by: str | None = None,
    labels: list[str] | None = None,
) -> Iterator[Doc]:
    skipped_before = Counter(report.skipped)
    n_examples_before = len(report.examples)
    n_docs = 0
    for group in _groups(records, group_by):
        sentences = [
            record_to_doc(vocab, record, line, spans_key, report, strict=strict, path=path,
                          labels=labels)
            for line, record in group
        ]
        yield sentences[0] if group_by is None else join_sentences(sentences, spans_key)
        report.documents += 1
        n_docs += 1
        if limit > 0 and n_docs >= limit:
            break
    skipped = Counter(report.skipped)
    skipped.subtract(skipped_before)
    counts = {reason: n for reason, n in skipped.items() if n > 0}
    count = sum(counts.values())
    if count:
        details = _details(counts, report.examples[n_examples_before:])
        warnings.warn(
            Warnings.NMW001.format(
                count=count, plural="y" if count == 1 else "ies", path=path, details=details
            ),
            stacklevel=2,
        )


def _groups(
    records: Iterable[tuple[int, dict]], group_by: str | None
) -> Iterator[list[tuple[int, dict]]]:
    """Consecutive records with the same value of the field ``group_by`` (each record alone
    where it has none, or without ``group_by``)."""
    group: list[tuple[int, dict]] = []
    key: Any = None
    for line, record in records:
        value = record.get(group_by) if group_by is not None else None
        if group and (value is None or value != key):
            yield group
            group = []
        group.append((line, record))
        key = value
    if group:
        yield group


def join_sentences(sentences: list[Doc], spans_key: str) -> Doc:
    """One doc of the sentences of a document, a space between them: their span groups
    offset into it, each sentence's first token a sentence start and no other token one,
    and the first sentence's "doc_id".

    sentences (List[Doc]): the sentences in order, as ``record_to_doc`` makes them.
    spans_key (str): the key of the entities, set on the doc even when there are none.
    RETURNS (Doc): the document.
    """
    if len(sentences) == 1 and not len(sentences[0]):
        return sentences[0]
    doc_id = sentences[0].user_data.get("doc_id")
    for sentence in sentences:
        sentence.user_data.pop("doc_id", None)
    nonempty = [sentence for sentence in sentences if len(sentence)]
    doc = Doc.from_docs(nonempty, ensure_whitespace=True)
    starts = set(np.cumsum([0] + [len(sentence) for sentence in nonempty[:-1]]).tolist())
    for token in doc:
        token.is_sent_start = token.i in starts
    if spans_key not in doc.spans:
        doc.spans[spans_key] = []
    if doc_id is not None:
        doc.user_data["doc_id"] = doc_id
    return doc


def open_text(path: Path, encoding: str = "utf-8") -> IO[str]:
    """RETURNS (IO[str]): the text file at ``path`` opened for reading, gunzipped on the fly
    when its name ends in ``.gz``."""
    return io.TextIOWrapper(open_bytes(path), encoding=encoding)


def _count_records(path: Path) -> int:
    with open_text(path) as file_:
        return sum(1 for text in file_ if text.strip())


def convert(
    input_path: str | Path,
    output_path: str | Path,
    *,
    lang: str = "en",
    spans_key: str = DEFAULT_SPANS_KEY,
    strict: bool = False,
    show_progress: bool = True,
    group_by: str | None = "doc",
) -> ConversionReport:
    """Convert a GENIA-style JSONL file to a spaCy ``DocBin`` (.spacy) file.

    The docs keep their user data (the "doc" field as ``user_data["doc_id"]``).
    Parent folders of the output are created. If ``output_path`` is an existing
    folder or ends with a path separator, the output is
    ``<folder>/<input stem>.spacy``; the path written is in
    ``report.output_path``. Nothing is written if reading fails, and the file appears
    whole or not at all (``files.atomic_files``).

    input_path (Union[str, Path]): The JSONL file.
    output_path (Union[str, Path]): The .spacy file to write.
    lang (str): Language code of the blank pipeline whose vocab is used.
    spans_key (str): The key of the span group holding the entities.
    strict (bool): Raise NME105 on the first invalid entity instead of skipping.
    show_progress (bool): Show a tqdm progress bar (the lines are counted
        first to give it a total). Warning NMW001 is then emitted after the
        bar is closed.
    group_by (Optional[str]): The record field whose consecutive equal values make
        one document (``read_jsonl``): GENIA's "doc" by default, so the DocBin holds
        documents with their sentence boundaries and context-only sentences. None:
        one doc per record (sentence).
    RETURNS (ConversionReport): What was converted and what was skipped.
    RAISES (FileNotFoundError): NME104 if the input file does not exist.
    RAISES (ValueError): NME101/NME102 for bad lines, NME105 in strict mode.
    """
    input_path = Path(input_path)
    as_folder = str(output_path).endswith(("/", os.sep))
    output_path = Path(output_path)
    if as_folder or output_path.is_dir():
        output_path = output_path / f"{input_path.stem}.spacy"
    vocab = spacy.blank(lang).vocab
    report = ConversionReport(path=str(input_path))
    docs = read_jsonl(input_path, vocab, spans_key, strict=strict, report=report,
                      group_by=group_by)
    doc_bin = DocBin(store_user_data=True)
    if show_progress:
        from tqdm import tqdm

        total = _count_records(input_path)
        # Hold back warnings until the bar is closed, so they do not break it.
        with warnings.catch_warnings(record=True) as caught:
            with tqdm(total=total, desc=f"Converting {input_path.name}", unit="doc") as bar:
                for doc in docs:
                    doc_bin.add(doc)
                    bar.update(1)
        for warning in caught:
            warnings.warn(warning.message, warning.category, stacklevel=2)
    else:
        for doc in docs:
            doc_bin.add(doc)
    with atomic_files({"output": output_path}) as partial:
        doc_bin.to_disk(partial["output"])
    report.output_path = str(output_path)
    return report


def _unannotated_copy(doc: Doc) -> Doc:
    words = [token.text for token in doc]
    spaces = [bool(token.whitespace_) for token in doc]
    predicted = Doc(doc.vocab, words=words, spaces=spaces)
    if "doc_id" in doc.user_data:
        predicted.user_data["doc_id"] = doc.user_data["doc_id"]
    copy_sentence_starts(doc, predicted)
    return predicted


def copy_sentence_starts(reference: Doc, predicted: Doc) -> None:
    """Give ``predicted`` (the same text, tokenized in any way) the sentence boundaries of
    ``reference``, where it has them: a token starts a sentence when a reference sentence
    starts at its first character. A reference without boundaries changes nothing."""
    if len(reference) < 2 or not reference.has_annotation("SENT_START"):
        return
    starts = {reference[int(i)].idx for i in np.flatnonzero(reference.to_array("SENT_START") == 1)}
    for token in predicted:
        token.is_sent_start = token.i == 0 or token.idx in starts


def read_docbin(
    path: str | Path,
    vocab: Vocab,
    spans_key: str = DEFAULT_SPANS_KEY,
    *,
    strict: bool = False,
    limit: int = 0,
) -> Iterator[Doc]:
    """Read the docs of a spaCy ``DocBin`` (.spacy) file, as written by ``convert``.

    The docs are kept as stored, with all their span groups and user data. A doc
    without the group ``spans_key`` is yielded as it is (``nested_mrc_ner`` and
    its scorer skip such docs), or, in strict mode, stops the reading with NME105.

    path (Union[str, Path]): The .spacy file.
    vocab (Vocab): The vocab to create the docs with.
    spans_key (str): The key of the span group holding the entities.
    strict (bool): Raise NME105 on a doc without the group ``spans_key``.
    limit (int): Stop after this many docs; 0 reads all of them.
    RETURNS (Iterator[Doc]): The docs, read lazily.
    RAISES (FileNotFoundError): NME104 if the file does not exist (when called).
    RAISES (ValueError): NME105 in strict mode.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(Errors.NME104.format(path=path))
    return _read_docbin(path, vocab, spans_key, strict, limit)


def _read_docbin(
    path: Path, vocab: Vocab, spans_key: str, strict: bool, limit: int
) -> Iterator[Doc]:
    doc_bin = DocBin().from_disk(path)
    for i, doc in enumerate(doc_bin.get_docs(vocab)):
        if limit > 0 and i >= limit:
            break
        if strict and spans_key not in doc.spans:
            keys = ", ".join(repr(key) for key in doc.spans) or "none"
            details = f"doc {i} has no span group '{spans_key}' (its groups: {keys})"
            raise ValueError(Errors.NME105.format(path=path, details=details))
        yield doc


# the files a reader's folder is read as, by how their names end
CORPUS_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".spacy")


def corpus_files(path: str | Path) -> list[Path]:
    """The files a corpus path names: the path itself if it is a file, or the JSON Lines
    and DocBin files in a folder and its subfolders (``CORPUS_SUFFIXES``), sorted by path,
    as ``spacy.Corpus.v1`` reads a folder of .spacy files; a second name for a file already
    listed (a symbolic link) is left out with NMW136, as ``annotate`` reads a folder.

    path (Union[str, Path]): A corpus file or a folder of them.
    RETURNS (List[Path]): The files, in the order they are read.
    RAISES (FileNotFoundError): NME104 if the path does not exist.
    RAISES (ValueError): NME107 if a folder holds no corpus file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(Errors.NME104.format(path=path))
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CORPUS_SUFFIXES))
    if not files:
        raise ValueError(Errors.NME107.format(path=path))
    return read_once(files)


def is_docbin_path(path: str | Path) -> bool:
    """RETURNS (bool): whether ``path`` names a spaCy DocBin (ends with ``.spacy``)."""
    return str(path).endswith(".spacy")


@spacy.registry.readers("spacy-nested-mrc.JsonlCorpus.v1")
def create_jsonl_reader(
    path: Path | None,
    spans_key: str = DEFAULT_SPANS_KEY,
    limit: int = 0,
    strict: bool = False,
    gold_preproc: bool = False,
    group_by: str | None = None,
    labels: list[str] | None = None,
) -> Callable[[Language], Iterable[Example]]:
    """Create a corpus reader for GENIA-style JSONL files, for spaCy's config.

    The returned function reads the file anew each time it is called (spaCy
    calls it once per epoch) and yields one ``Example`` per sentence. As with
    ``spacy.Corpus.v1``, the reference doc keeps the file's tokens and entities
    (in ``doc.spans[spans_key]``) while the predicted doc is what the pipeline
    sees in use: ``nlp.make_doc(text)``, the text tokenized by the pipeline's
    own tokenizer. The component learns the gold spans through the alignment of
    the two; entities whose boundaries fall inside a tokenizer token cannot be
    aligned and are counted once per pass over the file (warning NMW003).
    With ``gold_preproc`` the predicted doc keeps the file's tokens instead.

    A path ending in ``.spacy`` is read as a ``DocBin`` (e.g. the output of
    ``convert``) with :func:`read_docbin`: the stored docs are the references.
    A folder is read as its corpus files (:func:`corpus_files`), one after another:
    ``annotate --output-format spacy`` shards, say, to train on what a pipeline found.

    path (Optional[Path]): The JSONL file, a .spacy file or a folder of them. ``None`` is
        accepted when the reader is created (``spacy debug config``, a config
        whose paths are filled in later) and raises NME106 when it is read.
    spans_key (str): The key of the span group holding the entities.
    limit (int): Read at most this many sentences; 0 reads all of them (a folder: its
        files' together).
    strict (bool): Raise NME105 on the first invalid entity instead of skipping
        (for a .spacy file: on a doc without the group ``spans_key``).
    gold_preproc (bool): Give the model the file's tokens rather than the
        pipeline tokenizer's (``spacy.Corpus.v1``'s option of the same name).
    group_by (Optional[str]): A record field (GENIA: "doc") whose consecutive equal
        values make one document of their sentences (``read_jsonl``): one example per
        document, whose predicted doc has the file's sentence boundaries, and
        sentences with ``"annotated": false`` read as context only. ``limit`` then
        counts documents. None: one example per sentence. A .spacy file keeps its docs.
    labels (Optional[List[str]]): The labels this corpus annotates, for every record
        without a "labels" field of its own (a corpus of genes says nothing of diseases):
        the other labels are not taught as "no entity" in its text nor scored there, and
        its entities of other labels are skipped (NMW001). A .spacy file's docs are marked
        so unless they carry their own marks. None: every label.
    RETURNS (Callable[[Language], Iterable[Example]]): The reader.
    """
    if labels is not None and not _is_label_list(labels):
        raise ValueError(Errors.NME003.format(
            setting="labels", value=labels, expected="Expected a list of label names or null."
        ))

    def read_file(nlp: Language, file_path: Path, file_limit: int) -> Iterator[Doc]:
        if is_docbin_path(file_path):
            references = read_docbin(file_path, nlp.vocab, spans_key, strict=strict,
                                     limit=file_limit)
            if labels is not None:
                references = _with_labels(references, spans_key, labels)
            return references
        return read_jsonl(file_path, nlp.vocab, spans_key, strict=strict, limit=file_limit,
                          group_by=group_by, labels=labels)

    def read_examples(nlp: Language) -> Iterator[Example]:
        if path is None:
            raise ValueError(Errors.NME106.format(spans_key=spans_key))
        files = corpus_files(path)
        if len(files) == 1:
            references = read_file(nlp, files[0], limit)
        else:  # a folder: the limit counts its files' docs together
            references = (doc for file_path in files for doc in read_file(nlp, file_path, 0))
            if limit > 0:
                references = itertools.islice(references, limit)
        if gold_preproc:
            for reference in references:
                yield Example(_unannotated_copy(reference), reference)
            return
        lost: Counter = Counter()
        quoted: list[str] = []
        for reference in references:
            predicted = nlp.make_doc(reference.text)
            if "doc_id" in reference.user_data:
                predicted.user_data["doc_id"] = reference.user_data["doc_id"]
            copy_sentence_starts(reference, predicted)
            for span in unaligned_spans(reference, predicted, spans_key):
                lost[span.label_] += 1
                if len(quoted) < N_QUOTED_EXAMPLES:
                    quoted.append(f"{span.text!r} ({span.label_})")
            yield Example(predicted, reference)
        count = sum(lost.values())
        if count:
            by_label = ", ".join(f"{label}: {n}" for label, n in sorted(lost.items()))
            warnings.warn(
                Warnings.NMW003.format(
                    count=count,
                    plural="y" if count == 1 else "ies",
                    path=path,
                    details=f"{by_label}; e.g. {'; '.join(quoted)}",
                ),
                stacklevel=2,
            )

    return read_examples


def _with_labels(docs: Iterable[Doc], spans_key: str, labels: list[str]) -> Iterator[Doc]:
    """The docs, each marked as annotating ``labels`` unless it has marks of its own."""
    for doc in docs:
        if labeled_key(spans_key) not in doc.spans:
            mark_labels(doc, spans_key, labels)
        yield doc


def unaligned_spans(reference: Doc, predicted: Doc, spans_key: str) -> list[Span]:
    """The spans of ``reference.spans[spans_key]`` whose start or end falls inside a token of
    ``predicted`` (same text, other tokenization), so no span of ``predicted`` equals them.

    reference (Doc): The doc with the gold spans.
    predicted (Doc): The same text under another tokenizer.
    spans_key (str): The key of the span group.
    RETURNS (List[Span]): The reference spans that cannot be aligned.
    """
    if spans_key not in reference.spans:
        return []
    starts = {token.idx for token in predicted}
    ends = {token.idx + len(token) for token in predicted}
    return [
        span
        for span in reference.spans[spans_key]
        if span.start_char not in starts or span.end_char not in ends
    ]
