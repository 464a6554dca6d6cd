"""The documents to read, for ``annotate`` and ``adapt``: streamed from plain text, JSON
Lines or DocBin files, a folder of them, or stdin, each with its position in the input and
an id that never shifts; a text longer than a pipeline takes is cut into pieces
(``split_text``) where it breaks.

A *position* counts every line (or DocBin doc) of the input in order, blank and malformed
ones included, so that a resumed job skips exactly what a killed one had committed and the
ids of the documents stay those of the first run.

What is odd about a line is noted on its record (``Record.notes``), warned with a code and
listed in the job's summary: a line that is not a document (malformed, undecodable with
``encoding_errors = "skip"``, longer than the pipeline takes with ``long_docs = "skip"``) is
skipped; the rest is annotated (bytes replaced, ids converted, long texts in pieces).
"""
from __future__ import annotations

import codecs
import json
import re
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Tuple, Union

from .characters import may_hold_surrogates, repair_value
from .errors import Errors, Warnings
from .files import GZIP, open_bytes

if TYPE_CHECKING:
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

FORMATS = ("auto", "txt", "jsonl", "spacy")
STDIN = "-"
# the one rule for which files of a folder are read (a .json file may hold one JSON value,
# not JSON Lines: give it as a file with --input-format jsonl if it is JSON Lines)
SUFFIXES = {".txt": "txt", ".jsonl": "jsonl", ".spacy": "spacy"}
ENCODING_ERRORS = ("replace", "skip")
LONG_DOCS = ("split", "skip")


@dataclass
class Record:
    """One line (or DocBin doc) of the input.

    position (int): its index among all lines of the input, from 0.
    id (Optional[str]): the document's id (None for a line to skip).
    text (Optional[str]): its text; None for a blank or malformed line.
    doc (Optional[Doc]): the doc itself, for DocBin input (its tokens are kept).
    problem (Optional[str]): why a line that is not blank is skipped.
    where (str): its file and line, "name:line".
    notes (List[Tuple[str, str]]): what is odd about it, as (kind, detail), kind one of
        ``NOTE_KINDS``.
    """

    position: int
    id: Optional[str] = None
    text: Optional[str] = None
    doc: Optional["Doc"] = None
    problem: Optional[str] = None
    where: str = ""
    notes: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def skip(self) -> bool:
        """Whether the line holds no document (blank or malformed)."""
        return self.text is None and self.doc is None


# what a note on a record can be about, each with its warning
NOTE_KINDS = {
    "malformed": Warnings.NMW130,
    "undecodable": Warnings.NMW131,
    "too_long": Warnings.NMW132,
    "id_converted": Warnings.NMW133,
    "duplicate_id": Warnings.NMW134,
    "surrogates": Warnings.NMW138,
}


def note(record: Record, kind: str, detail: str, warn: bool = True) -> None:
    """Note ``kind`` on ``record`` and (if ``warn``) warn it with its code, file and line."""
    record.notes.append((kind, detail))
    if warn:
        file, _, line = record.where.rpartition(":")
        warnings.warn(NOTE_KINDS[kind].format(file=file, line=line, problem=detail))


def suffix_of(path: Path) -> str:
    """The suffix that says a file's format: ``.txt`` for ``a.txt`` and ``a.txt.gz``."""
    return Path(path.stem).suffix if path.suffix == GZIP else path.suffix


@dataclass
class InputSpec:
    """What to read and how.

    source (str): a file, a folder (its files with a known suffix, sorted by name) or "-".
    input_format (str): "auto" (by suffix; stdin is "txt"), "txt", "jsonl" or "spacy".
    id_field, text_field (str): JSON Lines fields of the id and the text.
    """

    source: str
    input_format: str = "auto"
    id_field: str = "id"
    text_field: str = "text"

    def __post_init__(self) -> None:
        if self.input_format not in FORMATS:
            raise ValueError(
                Errors.NME006.format(what="input format", value=self.input_format, options=FORMATS)
            )

    def files(self) -> List[Path]:
        """RETURNS (List[Path]): the input files in reading order (empty for stdin)."""
        if self.source == STDIN:
            return []
        path = Path(self.source)
        if path.is_dir():
            found = sorted(p for p in path.iterdir()
                           if p.is_file() and suffix_of(p) in SUFFIXES
                           and not (p.suffix == GZIP and suffix_of(p) == ".spacy"))
            if not found:
                raise FileNotFoundError(
                    Errors.NME131.format(path=path, suffixes=", ".join(SUFFIXES))
                )
            return read_once(found)
        if not path.exists():
            raise FileNotFoundError(Errors.NME130.format(path=path))
        return [path]

    def format_of(self, path: Optional[Path]) -> str:
        """RETURNS (str): the format of a file (None: stdin)."""
        if self.input_format != "auto":
            return self.input_format
        if path is None:
            return "txt"
        suffix = suffix_of(path)
        if suffix not in SUFFIXES or (suffix == ".spacy" and path.suffix == GZIP):
            raise ValueError(
                Errors.NME132.format(path=path, suffix="".join(path.suffixes[-2:]),
                                     suffixes=", ".join(SUFFIXES))
            )
        return SUFFIXES[suffix]

    def fingerprint(self) -> dict:
        """What identifies the input for a resumed job: each file's name and size (stdin
        has none: a resumed job trusts that the same stream comes again)."""
        return {
            "source": self.source,
            "format": self.input_format,
            "id_field": self.id_field,
            "text_field": self.text_field,
            "files": [{"name": str(p), "bytes": p.stat().st_size} for p in self.files()],
        }


def read_once(paths: List[Path]) -> List[Path]:
    """``paths`` with each file read once: a later name for a file already listed (a
    symbolic link to it, or one it links to) is left out with warning NMW136."""
    seen: dict = {}
    kept = []
    for path in paths:
        real = path.resolve()
        if real in seen:
            warnings.warn(Warnings.NMW136.format(path=path, first=seen[real]))
            continue
        seen[real] = path
        kept.append(path)
    return kept


def count_lines(spec: InputSpec) -> Optional[int]:
    """The number of positions of the input, for a progress bar's estimate of the time
    left; None for stdin or DocBin input (not known without reading it)."""
    files = spec.files()
    if not files or any(spec.format_of(p) == "spacy" for p in files):
        return None
    total = 0
    for path in files:
        with open_bytes(path) as f:
            total += sum(1 for _ in f)
    return total


def iter_records(
    spec: InputSpec,
    vocab: "Vocab",
    skip: int = 0,
    *,
    encoding_errors: str = "replace",
    max_length: Optional[int] = None,
    long_docs: str = "split",
    warn: bool = True,
) -> Iterator[Record]:
    """Stream the input's records in order, one line (or DocBin doc) at a time, with what is
    odd about each noted and warned (``note``).

    vocab (Vocab): the pipeline's vocab, for DocBin input.
    skip (int): positions to pass over without parsing (a resumed job's committed ones).
    encoding_errors (str): a line that is not UTF-8 (from a file or stdin alike): "replace"
        its bad bytes by U+FFFD and annotate it, or "skip" it.
    max_length (Optional[int]): the longest text the pipeline takes (``nlp.max_length``).
    long_docs (str): a longer text: "split" (annotated in pieces) or "skip".
    warn (bool): warn each note as it is made (False: the caller counts the records'
        ``notes`` and reports them itself).
    YIELDS (Record): every position from ``skip`` on.
    """
    for choice, value, options in (("encoding_errors", encoding_errors, ENCODING_ERRORS),
                                   ("long_docs", long_docs, LONG_DOCS)):
        if value not in options:
            raise ValueError(Errors.NME006.format(what=choice, value=value, options=options))
    position = 0
    files: List[Optional[Path]] = list(spec.files()) or [None]
    for path in files:
        fmt = spec.format_of(path)
        name = "stdin" if path is None else path.name
        if fmt == "spacy":
            lines: Iterator = _docbin_docs(path, vocab)  # type: ignore[arg-type]
        else:
            lines = _byte_lines(path)
        for number, item in enumerate(lines, start=1):
            if position >= skip:
                where = f"{name}:{number}"
                if isinstance(item, bytes):
                    text, bad = _decode(item, encoding_errors)
                    if bad is not None and encoding_errors == "skip":
                        record = Record(position, problem=bad, where=where)
                    else:
                        record = _parse(spec, fmt, where, text, position, warn)
                    if bad is not None:
                        note(record, "undecodable", bad, warn)
                else:
                    record = _parse(spec, fmt, where, item, position, warn)
                _check_length(record, max_length, long_docs, warn)
                yield record
            position += 1


def _decode(line: bytes, encoding_errors: str) -> Tuple[str, Optional[str]]:
    """RETURNS (Tuple[str, Optional[str]]): ``line`` decoded from UTF-8 (bad bytes replaced
    by U+FFFD), and what was wrong with it (None: nothing)."""
    try:
        return line.decode("utf8"), None
    except UnicodeDecodeError as err:
        done = "replaced by U+FFFD" if encoding_errors == "replace" else "line skipped"
        problem = f"bytes that are not UTF-8 at byte {err.start} ({done})"
        return line.decode("utf8", "replace"), problem


def _check_length(record: Record, max_length: Optional[int], long_docs: str, warn: bool
                  ) -> None:
    """Note a text longer than ``max_length``: annotated in pieces, or skipped."""
    if max_length is None or record.text is None or len(record.text) <= max_length:
        return
    if long_docs == "skip":
        detail = (f"{len(record.text):,} characters, over the pipeline's max_length of "
                  f"{max_length:,}: skipped (--long-docs split annotates it in pieces)")
        record.problem, record.text = detail, None
    else:
        pieces = len(split_text(record.text, max_length))
        detail = (f"{len(record.text):,} characters, over the pipeline's max_length of "
                  f"{max_length:,}: annotated in {pieces} pieces")
    note(record, "too_long", detail, warn)


# where a piece may end, best first: after a blank line, a line break, a sentence's end, a
# space; a text with none of them in the second half of the window is cut at the limit
BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?][\"')\]]*\s"),
          re.compile(r"\s"))


def split_text(text: str, limit: int) -> List[str]:
    """``text`` cut into pieces of at most ``limit`` characters whose concatenation is
    ``text``, each ending after the best break (``BREAKS``) in the second half of its
    window.

    text (str): the text.
    limit (int): the most characters of a piece.
    RETURNS (List[str]): the pieces, in order.
    """
    pieces, start = [], 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cut = limit
        for pattern in BREAKS:
            ends = [m.end() for m in pattern.finditer(window, limit // 2)]
            if ends:
                cut = ends[-1]
                break
        pieces.append(window[:cut])
        start += cut
    pieces.append(text[start:])
    return pieces


def _byte_lines(path: Optional[Path]) -> Iterator[bytes]:
    """The lines of a file (gzip-compressed if its name ends in .gz) or of stdin as bytes,
    without their line break, and without the UTF-8 byte-order mark the first may start with
    (as some editors write one)."""
    if path is None:
        stream = sys.stdin.buffer
    else:
        stream = open_bytes(path)
    try:
        for number, line in enumerate(stream):
            if number == 0 and line.startswith(codecs.BOM_UTF8):
                line = line[len(codecs.BOM_UTF8):]
            yield line.rstrip(b"\n")
    finally:
        if path is not None:
            stream.close()


def _docbin_docs(path: Path, vocab: "Vocab") -> Iterator["Doc"]:
    from spacy.tokens import DocBin

    yield from DocBin().from_disk(path).get_docs(vocab)


def _parse(spec: InputSpec, fmt: str, where: str, item: Union[str, "Doc"], position: int,
           warn: bool = True) -> Record:
    """One record from a line (or doc); ``problem`` says why a line holds no document."""
    if fmt == "spacy":
        doc = item
        doc_id = doc.user_data.get("id", where) if hasattr(doc, "user_data") else where
        return _with_id(Record(position, doc=doc, where=where), doc_id,  # type: ignore[arg-type]
                        warn)
    line = str(item).rstrip("\r")
    if fmt == "txt":
        return Record(position, id=where, text=line, where=where) if line.strip() else Record(
            position, where=where)
    if not line.strip():
        return Record(position, where=where)
    problem, repaired = None, 0
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        problem = f"not JSON ({err.msg} at column {err.colno})"
    else:
        if may_hold_surrogates(line):
            value, repaired = repair_value(value)
        if not isinstance(value, dict):
            problem = f"a JSON {type(value).__name__}, not an object"
        elif not isinstance(value.get(spec.text_field), str):
            text = value.get(spec.text_field)
            found = ("missing" if spec.text_field not in value else
                     "null" if text is None else f"a JSON {type(text).__name__}, not a string")
            problem = f"the text field '{spec.text_field}' is {found}"
    if problem is not None:
        record = Record(position, problem=problem, where=where)
        note(record, "malformed", problem, warn)
        return record
    record = Record(position, text=value[spec.text_field], where=where)
    if repaired:
        note(record, "surrogates", f"{repaired} lone surrogate code point(s) (half of a "
             "UTF-16 pair, which UTF-8 cannot hold) replaced by U+FFFD", warn)
    return _with_id(record, value.get(spec.id_field), warn)


def _with_id(record: Record, value: object, warn: bool = True) -> Record:
    """``record`` with its id from ``value``: a string as it is, an integer in decimal, none
    (missing or null) the record's file and line; any other value as its JSON text, noted."""
    if value is None:
        record.id = record.where
    elif isinstance(value, str):
        record.id = value
    elif isinstance(value, int) and not isinstance(value, bool):
        record.id = str(value)
    else:
        record.id = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        note(record, "id_converted", f"the id {record.id} is a {type(value).__name__}, "
             "not a string: written as its JSON text", warn)
    return record
