"""The text of an adaptation, streamed: lines read as ``annotate`` reads its input (.txt and
.jsonl files or folders, gzip included, odd lines noted and counted), split into words at
whitespace, tokenized by the encoder's fast tokenizer, and packed into sequences of whole
words. Memory is bounded by ``tokenize_lines`` lines and one sequence, never by the corpus.
"""
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

import numpy

from ..errors import Errors, Warnings
from ..inputs import InputSpec, iter_records, split_text
from .settings import AdaptSettings


@dataclass
class Sequence:
    """One packed sequence.

    input_ids (numpy.ndarray): its wordpieces (L,) int32, with the tokenizer's leading and
        trailing special tokens.
    word_ids (numpy.ndarray): for each wordpiece, the number of its word in the sequence
        (from 0), -1 for the special tokens; (L,) int32.
    words (int): the number of words.
    """

    input_ids: numpy.ndarray
    word_ids: numpy.ndarray
    words: int


@dataclass
class TextReport:
    """What reading the text met: lines read, lines without text, odd lines by kind with the
    first of each kind, words cut to fit a sequence."""

    lines: int = 0
    blank: int = 0
    notes: Counter = field(default_factory=Counter)
    first: Dict[str, str] = field(default_factory=dict)
    cut_words: int = 0
    warned: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {"lines": self.lines, "blank": self.blank, "notes": dict(self.notes),
                "first": dict(self.first), "cut_words": self.cut_words}

    def warn(self, source: str) -> None:
        """One coded warning (NMW180) for all the odd lines of a pass over ``source``."""
        self.warned = True
        if self.notes or self.cut_words:
            kinds = [f"{count} {kind.replace('_', ' ')} (first: {self.first[kind]})"
                     for kind, count in sorted(self.notes.items())]
            if self.cut_words:
                kinds.append(f"{self.cut_words} word(s) longer than a sequence, cut")
            warnings.warn(Warnings.NMW180.format(source=source, lines=self.lines,
                                                 details="; ".join(kinds)))


def iter_lines(settings: AdaptSettings, source: str, report: TextReport) -> Iterator[str]:
    """The texts of ``source``'s lines in order (a line longer than ``max_line_chars`` in
    pieces), blank and undecodable-and-skipped lines left out and counted in ``report``."""
    spec = InputSpec(source, input_format=settings.input_format,
                     text_field=settings.text_field)
    for path in spec.files():
        if spec.format_of(path) == "spacy":
            raise ValueError(Errors.NME173.format(path=path))
    for record in iter_records(spec, vocab=None, warn=False):  # type: ignore[arg-type]
        report.lines += 1
        notes = list(record.notes)
        if record.text is not None and len(record.text) > settings.max_line_chars:
            pieces = split_text(record.text, settings.max_line_chars)
            notes.append(("too_long", f"{len(record.text):,} characters, over max_line_chars "
                                       f"= {settings.max_line_chars:,}: read in {len(pieces)} "
                                       "pieces"))
        for kind, detail in notes:
            report.notes[kind] += 1
            report.first.setdefault(kind, f"{record.where}: {detail}")
        if record.text is None or not record.text.strip():
            report.blank += record.problem is None
            continue
        if len(record.text) > settings.max_line_chars:
            yield from pieces
        else:
            yield record.text


def iter_sequences(settings: AdaptSettings, tokenizer: Any, source: str,
                   report: Optional[TextReport] = None) -> Iterator[Sequence]:
    """The packed sequences of one pass over ``source``: consecutive lines' words, whole, in
    sequences of at most ``max_length`` wordpieces (a word longer than a sequence is cut and
    counted). Every sequence but the last is full up to its last whole word.

    tokenizer: the encoder's fast Hugging Face tokenizer.
    """
    report = report if report is not None else TextReport()
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(Errors.NME174.format(encoder=settings.encoder))
    first, last = tokenizer.cls_token_id, tokenizer.sep_token_id
    if first is None or last is None:
        raise ValueError(Errors.NME174.format(encoder=settings.encoder))
    room = settings.max_length - 2
    ids: List[int] = []
    word_ids: List[int] = []
    words = 0

    def emit() -> Sequence:
        return Sequence(numpy.array([first, *ids, last], dtype=numpy.int32),
                        numpy.array([-1, *word_ids, -1], dtype=numpy.int32), words)

    for chunk in _chunks(iter_lines(settings, source, report), settings.tokenize_lines):
        split = [line.split() for line in chunk]
        encoded = tokenizer(split, is_split_into_words=True, add_special_tokens=False,
                            verbose=False)  # lines are packed, not passed whole
        for index in range(len(split)):
            pieces = encoded["input_ids"][index]
            owners = encoded.word_ids(index)
            start = 0
            while start < len(pieces):  # one word a turn: its wordpieces start..end
                end = start
                while end < len(pieces) and owners[end] == owners[start]:
                    end += 1
                word = pieces[start:end]
                if len(word) > room:
                    word = word[:room]
                    report.cut_words += 1
                if len(ids) + len(word) > room:
                    yield emit()
                    ids, word_ids, words = [], [], 0
                ids.extend(word)
                word_ids.extend([words] * len(word))
                words += 1
                start = end
    if ids:
        yield emit()


def _chunks(lines: Iterator[str], size: int) -> Iterator[List[str]]:
    chunk: List[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
