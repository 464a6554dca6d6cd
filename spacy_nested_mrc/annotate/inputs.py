"""The documents to annotate, streamed from plain text, JSON Lines or DocBin files, a folder
of them, or stdin, each with its position in the input and an id that never shifts.

A *position* counts every line (or DocBin doc) of the input in order, blank and malformed
ones included, so that a resumed job skips exactly what a killed one had committed and the
ids of the documents stay those of the first run.
"""
from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Union

from ..errors import Errors, Warnings

if TYPE_CHECKING:
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

FORMATS = ("auto", "txt", "jsonl", "spacy")
STDIN = "-"
SUFFIXES = {".txt": "txt", ".jsonl": "jsonl", ".json": "jsonl", ".spacy": "spacy"}


@dataclass
class Record:
    """One line (or DocBin doc) of the input.

    position (int): its index among all lines of the input, from 0.
    id (Optional[str]): the document's id (None for a line to skip).
    text (Optional[str]): its text; None for a blank or malformed line.
    doc (Optional[Doc]): the doc itself, for DocBin input (its tokens are kept).
    problem (Optional[str]): why a malformed line is skipped.
    """

    position: int
    id: Optional[str] = None
    text: Optional[str] = None
    doc: Optional["Doc"] = None
    problem: Optional[str] = None

    @property
    def skip(self) -> bool:
        """Whether the line holds no document (blank or malformed)."""
        return self.text is None and self.doc is None


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
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
            if not found:
                raise FileNotFoundError(
                    Errors.NME131.format(path=path, suffixes=", ".join(SUFFIXES))
                )
            return found
        if not path.exists():
            raise FileNotFoundError(Errors.NME130.format(path=path))
        return [path]

    def format_of(self, path: Optional[Path]) -> str:
        """RETURNS (str): the format of a file (None: stdin)."""
        if self.input_format != "auto":
            return self.input_format
        if path is None:
            return "txt"
        if path.suffix not in SUFFIXES:
            raise ValueError(
                Errors.NME132.format(path=path, suffix=path.suffix, suffixes=", ".join(SUFFIXES))
            )
        return SUFFIXES[path.suffix]

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


def count_lines(spec: InputSpec) -> Optional[int]:
    """The number of positions of the input, for a progress bar's estimate of the time
    left; None for stdin or DocBin input (not known without reading it)."""
    files = spec.files()
    if not files or any(spec.format_of(p) == "spacy" for p in files):
        return None
    total = 0
    for path in files:
        with path.open("rb") as f:
            total += sum(1 for _ in f)
    return total


def iter_records(spec: InputSpec, vocab: "Vocab", skip: int = 0) -> Iterator[Record]:
    """Stream the input's records in order, one line (or DocBin doc) at a time; a malformed
    line becomes a record with ``problem`` set and warns NMW130 with its file and line.

    vocab (Vocab): the pipeline's vocab, for DocBin input.
    skip (int): positions to pass over without parsing (a resumed job's committed ones).
    YIELDS (Record): every position from ``skip`` on.
    """
    position = 0
    files: List[Optional[Path]] = list(spec.files()) or [None]
    for path in files:
        fmt = spec.format_of(path)
        name = "stdin" if path is None else path.name
        if fmt == "spacy":
            lines: Iterator = _docbin_docs(path, vocab)  # type: ignore[arg-type]
        else:
            lines = _text_lines(path)
        for number, item in enumerate(lines, start=1):
            if position >= skip:
                record = _parse(spec, fmt, name, number, item, position)
                if record.problem is not None:
                    warnings.warn(
                        Warnings.NMW130.format(file=name, line=number, problem=record.problem)
                    )
                yield record
            position += 1


def _text_lines(path: Optional[Path]) -> Iterator[str]:
    if path is None:
        yield from (line.rstrip("\n") for line in sys.stdin)
        return
    with path.open(encoding="utf8", errors="replace") as f:
        yield from (line.rstrip("\n") for line in f)


def _docbin_docs(path: Path, vocab: "Vocab") -> Iterator["Doc"]:
    from spacy.tokens import DocBin

    yield from DocBin().from_disk(path).get_docs(vocab)


def _parse(
    spec: InputSpec, fmt: str, name: str, number: int, item: Union[str, "Doc"], position: int
) -> Record:
    """One record from a line (or doc); ``problem`` says why a line holds no document."""
    default_id = f"{name}:{number}"
    if fmt == "spacy":
        doc = item
        doc_id = doc.user_data.get("id", default_id) if hasattr(doc, "user_data") else default_id
        return Record(position, id=str(doc_id), doc=doc)  # type: ignore[arg-type]
    line = str(item).rstrip("\r")
    if fmt == "txt":
        return Record(position, id=default_id, text=line) if line.strip() else Record(position)
    if not line.strip():
        return Record(position)
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        return Record(position, problem=f"not JSON ({err.msg} at column {err.colno})")
    if not isinstance(value, dict):
        return Record(position, problem=f"a JSON {type(value).__name__}, not an object")
    text = value.get(spec.text_field)
    if not isinstance(text, str):
        found = "missing" if text is None else f"a {type(text).__name__}"
        return Record(position, problem=f"the text field '{spec.text_field}' is {found}")
    doc_id = value.get(spec.id_field, default_id)
    return Record(position, id=str(doc_id), text=text)
