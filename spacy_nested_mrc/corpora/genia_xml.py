"""The GENIA term corpus 3.02 XML (GPML) to GENIA-style JSON Lines, split as in the literature.

The GENIA Project ships the corpus (Ohta et al., 2002) as one XML file,
``GENIA_term_3.02/GENIAcorpus3.02.xml`` in ``GENIAcorpus3.02.tgz``::

    <set>
    <article>
    <articleinfo><bibliomisc>MEDLINE:95369245</bibliomisc></articleinfo>
    <title><sentence><cons lex="IL-2_gene_expression" sem="G#other_name"><cons lex="IL-2_gene"
    sem="G#DNA_domain_or_region">IL-2 gene</cons> expression</cons> and ...</sentence></title>
    <abstract><sentence>...</sentence> ...</abstract>
    </article>
    ...
    </set>

:func:`read_genia_xml` turns it into the sentence records of :mod:`spacy_nested_mrc.corpora.jsonl`
by the rules of the nested-NER literature (Finkel & Manning 2009; Lu & Roth 2015):

- one record per ``sentence``, in document order (title, then abstract), with the
  article's MEDLINE id as "doc";
- tokens are split at whitespace and at every ``cons`` boundary;
- an entity is a ``cons`` whose ``sem`` starts with ``G#DNA``, ``G#RNA``, ``G#protein``,
  ``G#cell_line`` or ``G#cell_type``, its subtypes folded into these five types
  (``G#protein_molecule`` is a protein). A ``cons`` without ``sem`` (a part of a
  coordinated ellipsis such as "<cons>CD2</cons> and <cons>CD25</cons> receptors"), with
  a compound ``sem`` (``(AND G#protein_molecule G#protein_molecule)``, the whole
  ellipsis) or with another class (``G#other_name``, ``G#virus``, ...) is not one;
- several entity ``cons`` over the same tokens give one entity, whose type is that of
  the innermost one whose ``lex`` matches its text ("NF-kappa_B" for "NF-kappa B"), else
  of the innermost one.

:func:`convert_genia_xml` writes the standard split: the first 16,692 sentences are
train+dev, of which every 4th of the first 6,676 (1,669, the W2NER development set) is
dev and the rest (15,023) train; the last 1,854 are the test set. These are the files
of ``shared/data/genia``.
"""
from __future__ import annotations

import gzip
import json
import re
import tarfile
import warnings
import xml.etree.ElementTree as ET
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import Errors, Warnings
from ..files import atomic_files
from .report import CorpusReport

# The five entity types of the nested-NER GENIA, each the prefix of its GENIA classes.
GENIA_TYPES: tuple[str, ...] = ("DNA", "RNA", "protein", "cell_line", "cell_type")
# The standard split: train+dev is the first N_TRAIN_DEV sentences, dev is every
# DEV_EVERY-th of the first DEV_POOL of them, test the sentences after N_TRAIN_DEV.
N_TRAIN_DEV = 16692
DEV_POOL = 6676
DEV_EVERY = 4
SPLITS: tuple[str, ...] = ("train", "dev", "test")
# The splits written as whole abstracts by ``convert_genia_xml(documents=True)``: each of
# their sentences inside its abstract, the abstract's sentences of other splits as context.
DOCUMENT_SPLITS: tuple[str, ...] = ("dev", "test")
# The corpus file inside the official GENIAcorpus3.02.tgz.
TGZ_MEMBER = "GENIA_term_3.02/GENIAcorpus3.02.xml"

# Reasons a cons is not taken as an entity, in the order they are checked.
CONS_SKIP_REASONS: tuple[str, ...] = (
    "no_sem",  # no sem attribute: a part of a coordinated ellipsis, or text outside the ontology
    "compound",  # a compound sem such as "(AND G#protein_molecule G#protein_molecule)"
    "other_type",  # a class outside the five types, e.g. G#other_name, G#virus, G#lipid
    "empty",  # the cons covers no token (no text, or only whitespace)
)

_TOKEN = re.compile(r"\S+")


@dataclass
class GeniaConversionReport(CorpusReport):
    """What was read from a GENIA XML file and what was written from it (``path``: the XML,
    gzipped XML or .tgz archive read; ``skipped``: ``cons`` not taken as entities, by
    reason (see ``CONS_SKIP_REASONS``): ``CorpusReport``).

    articles (int): Number of articles read.
    sentences (int): Number of sentences read, each one record.
    cons (int): Number of ``cons`` elements read.
    entities (int): Number of entities in the records.
    types (Dict[str, int]): Entities by type.
    same_span (int): Entity ``cons`` folded into another one over the same tokens.
    conflicts (int): Entities whose ``cons`` over the same tokens disagree on the type,
        resolved by the ``lex`` rule.
    split_sentences (Dict[str, int]): Sentences written per split ("train", "dev", "test").
    split_entities (Dict[str, int]): Entities written per split.
    output_paths (Dict[str, str]): The file written per split.
    """

    articles: int = 0
    sentences: int = 0
    cons: int = 0
    entities: int = 0
    types: dict[str, int] = field(default_factory=dict)
    same_span: int = 0
    conflicts: int = 0
    split_sentences: dict[str, int] = field(default_factory=dict)
    split_entities: dict[str, int] = field(default_factory=dict)
    output_paths: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """A short human-readable summary.

        RETURNS (str): The counts read, the cons skipped by reason and, after
            ``convert_genia_xml``, the sentences and entities per split.
        """
        by_type = ", ".join(f"{t} {self.types[t]:,}" for t in _ordered_types(self.types))
        skipped = ", ".join(
            f"{reason} {self.skipped[reason]:,}" for reason in CONS_SKIP_REASONS
            if reason in self.skipped
        )
        lines = [
            f"Read {self.sentences:,} sentences of {self.articles:,} articles{self.where}: "
            f"{self.entities:,} entities ({by_type or 'none'}) from {self.cons:,} cons.",
            f"  cons not entities: {skipped or 'none'}",
            f"  cons over the same tokens as another: {self.same_span:,} folded, "
            f"{self.conflicts:,} type conflicts resolved",
        ]
        for split in SPLITS:
            if split in self.split_sentences:
                lines.append(
                    f"  {split}: {self.split_sentences[split]:,} sentences, "
                    f"{self.split_entities.get(split, 0):,} entities"
                    + (f" -> {self.output_paths[split]}" if split in self.output_paths else "")
                )
        return "\n".join(lines)


def _ordered_types(counts: dict[str, int]) -> list[str]:
    return [t for t in GENIA_TYPES if t in counts] + sorted(set(counts) - set(GENIA_TYPES))


def genia_type(sem: str | None) -> str | None:
    """The entity type of a GENIA semantic class.

    sem (Optional[str]): The ``sem`` attribute of a ``cons``, e.g. "G#protein_molecule".
    RETURNS (Optional[str]): One of ``GENIA_TYPES`` ("protein" for "G#protein_molecule"),
        or None if the class is none of them, is compound ("(AND ...)") or is missing.
    """
    if sem is None:
        return None
    for label in GENIA_TYPES:
        if sem.startswith(f"G#{label}"):
            return label
    return None


def _skip_reason(sem: str | None) -> str:
    if sem is None:
        return "no_sem"
    if sem.lstrip().startswith("("):
        return "compound"
    return "other_type"


def genia_split(
    index: int,
    *,
    n_train_dev: int = N_TRAIN_DEV,
    dev_pool: int = DEV_POOL,
    dev_every: int = DEV_EVERY,
) -> str:
    """The split of a sentence under the standard GENIA split.

    index (int): The 0-based index of the sentence in the corpus, in document order.
    n_train_dev (int): Number of sentences of train+dev; the ones after are test.
    dev_pool (int): Dev is taken from the first ``dev_pool`` sentences...
    dev_every (int): ... as every ``dev_every``-th of them, from the first one
        (indices 0, 4, 8, ... for 4).
    RETURNS (str): "train", "dev" or "test".
    """
    if index >= n_train_dev:
        return "test"
    if index < dev_pool and index % dev_every == 0:
        return "dev"
    return "train"


def read_genia_xml(
    path: str | Path, *, report: GeniaConversionReport | None = None, spaces: bool = False
) -> Iterator[dict[str, Any]]:
    """Read the sentences of the GENIA term corpus XML as GENIA-style records, lazily.

    Each record is ``{"tokens": [...], "entities": [{"start", "end", "type"}, ...],
    "doc": <the article's MEDLINE id>}`` (no "doc" for an article without a MEDLINE id), with the
    entities in the order their first ``cons`` closes (inner before outer, left to right).
    See the module's docstring for the rules. The file's existence is checked when the
    function is called; the file is read as the iterator is consumed.

    path (Union[str, Path]): ``GENIAcorpus3.02.xml``, the same gzipped, or the official
        ``GENIAcorpus3.02.tgz`` (its ``GENIA_term_3.02/GENIAcorpus3.02.xml`` is read).
    report (Optional[GeniaConversionReport]): A report to count articles, sentences,
        cons, entities and skipped cons in. Its ``path`` is set if it has none.
    spaces (bool): Give each record ``"spaces"``: per token, whether whitespace follows it
        in the XML's text, so that a doc made of the record has the text as written
        (``Ras/protein``); without it the tokens are joined by single spaces, and every
        annotation boundary inside a word becomes a space (``Ras /protein``).
    RETURNS (Iterator[Dict[str, Any]]): The sentence records, in document order.
    RAISES (FileNotFoundError): NME104 if the file does not exist (when called).
    RAISES (ValueError): NME110 if the file cannot be read as XML (or as gzip or tar),
        NME111 if it is XML but not GENIA's, NME112 if an archive holds no
        GENIAcorpus3.02.xml.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(Errors.NME104.format(path=path))
    if report is None:
        report = GeniaConversionReport()
    if report.path is None:
        report.path = str(path)
    return _read_genia_xml(path, report, spaces)


def _read_genia_xml(
    path: Path, report: GeniaConversionReport, spaces: bool
) -> Iterator[dict[str, Any]]:
    with ExitStack() as stack:
        source = _open_source(path, stack)
        doc: str | None = None
        n_sentences = 0
        for event, element in _parse(source, path):
            if event == "start":
                if element.tag == "article":
                    doc = None
                    report.articles += 1
                continue
            if element.tag == "bibliomisc":
                doc = (element.text or "").strip() or None
            elif element.tag == "sentence":
                n_sentences += 1
                yield _sentence_record(element, doc, report, spaces)
                element.clear()
            elif element.tag == "article":
                element.clear()
        if n_sentences == 0:
            raise ValueError(Errors.NME111.format(path=path, problem="it holds no <sentence>"))


def _open_source(path: Path, stack: ExitStack) -> IO[bytes]:
    try:
        if tarfile.is_tarfile(path):
            archive = stack.enter_context(tarfile.open(path, "r:*"))
            member = _find_member(archive, path)
            file_ = archive.extractfile(member)  # a regular file: never None
            assert file_ is not None
            return stack.enter_context(file_)
        with path.open("rb") as probe:
            magic = probe.read(2)
        if magic == b"\x1f\x8b":
            return stack.enter_context(gzip.open(path, "rb"))
        return stack.enter_context(path.open("rb"))
    except (tarfile.TarError, OSError, EOFError) as err:
        raise ValueError(Errors.NME110.format(path=path, error=err)) from err


def _find_member(archive: tarfile.TarFile, path: Path) -> tarfile.TarInfo:
    members = [m for m in archive.getmembers() if m.isfile()]
    name = Path(TGZ_MEMBER).name
    for member in members:
        if member.name.removeprefix("./") == TGZ_MEMBER:
            return member
    for member in members:
        if Path(member.name).name == name:
            return member
    found = ", ".join(m.name for m in members if m.name.endswith(".xml")) or "none"
    raise ValueError(Errors.NME112.format(path=path, name=name, member=TGZ_MEMBER, found=found))


def _parse(source: IO[bytes], path: Path) -> Iterator[tuple[str, ET.Element]]:
    events = ET.iterparse(source, events=("start", "end"))
    first = True
    while True:
        try:
            event, element = next(events)
        except StopIteration:
            return
        except (ET.ParseError, OSError, EOFError) as err:
            raise ValueError(Errors.NME110.format(path=path, error=err)) from err
        if first and element.tag != "set":
            problem = f"its root element is <{element.tag}>, not <set>"
            raise ValueError(Errors.NME111.format(path=path, problem=problem))
        first = False
        yield event, element


@dataclass(frozen=True)
class _Cons:
    start: int  # character offsets in the sentence's text, end exclusive
    end: int
    sem: str | None
    lex: str | None


def _flatten(sentence: ET.Element) -> tuple[str, list[_Cons]]:
    """The text of a sentence and its cons, in the order they close (inner first)."""
    parts: list[str] = []
    cons: list[_Cons] = []
    length = 0

    def visit(element: ET.Element) -> None:
        nonlocal length
        if element.text:
            parts.append(element.text)
            length += len(element.text)
        for child in element:
            start = length
            visit(child)
            if child.tag == "cons":
                cons.append(_Cons(start, length, child.get("sem"), child.get("lex")))
            if child.tail:
                parts.append(child.tail)
                length += len(child.tail)

    visit(sentence)
    return "".join(parts), cons


def _tokenize(text: str, boundaries: list[int]) -> list[tuple[int, int]]:
    """Character offsets of the tokens: split at whitespace and at every boundary."""
    cuts = sorted(set(boundaries))
    offsets: list[tuple[int, int]] = []
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        inner = cuts[bisect_right(cuts, start) : bisect_left(cuts, end)]
        offsets.extend(zip([start, *inner], [*inner, end]))
    return offsets


def _sentence_record(
    sentence: ET.Element, doc: str | None, report: GeniaConversionReport, spaces: bool
) -> dict[str, Any]:
    text, cons = _flatten(sentence)
    offsets = _tokenize(text, [c.start for c in cons] + [c.end for c in cons])
    first_token = {start: i for i, (start, _) in enumerate(offsets)}
    after_token = {end: i + 1 for i, (_, end) in enumerate(offsets)}
    # (start, end) -> [(type, lex matches the text)] of its entity cons, innermost first
    groups: dict[tuple[int, int], list[tuple[str, bool]]] = {}
    for item in cons:
        label = genia_type(item.sem)
        covered = text[item.start : item.end]
        words = covered.split()
        if label is None or not words:
            reason = _skip_reason(item.sem) if label is None else "empty"
            report.count_skip(reason)
            continue
        # whitespace at the edges of a cons is no part of its tokens
        start = item.start + len(covered) - len(covered.lstrip())
        end = item.end - len(covered) + len(covered.rstrip())
        span = (first_token[start], after_token[end])
        groups.setdefault(span, []).append((label, item.lex == "_".join(words)))
    entities = []
    for (start, end), candidates in groups.items():
        label = next((t for t, matches in candidates if matches), candidates[0][0])
        report.same_span += len(candidates) - 1
        report.conflicts += int(len({t for t, _ in candidates}) > 1)
        report.types[label] = report.types.get(label, 0) + 1
        entities.append({"start": start, "end": end, "type": label})
    report.sentences += 1
    report.cons += len(cons)
    report.entities += len(entities)
    record: dict[str, Any] = {"tokens": [text[a:b] for a, b in offsets], "entities": entities}
    if spaces:
        starts = [start for start, _ in offsets[1:]]
        record["spaces"] = [start > end for start, (_, end) in zip(starts, offsets)] + [False]
    if doc is not None:
        record["doc"] = doc
    return record


def convert_genia_xml(
    input_path: str | Path,
    output_dir: str | Path,
    *,
    n_train_dev: int = N_TRAIN_DEV,
    dev_pool: int = DEV_POOL,
    dev_every: int = DEV_EVERY,
    documents: bool = False,
    spaces: bool = False,
) -> GeniaConversionReport:
    """Convert the GENIA term corpus XML to train.jsonl, dev.jsonl and test.jsonl.

    The records of :func:`read_genia_xml` are split by :func:`genia_split`; with the
    defaults and the whole corpus this gives the standard split (15,023 / 1,669 / 1,854
    sentences). All three files are written, an empty one for a split without sentences;
    they replace earlier ones only once the whole input was read. Warns with NMW110 if
    the input has fewer than ``n_train_dev`` sentences.

    input_path (Union[str, Path]): ``GENIAcorpus3.02.xml``, gzipped or not, or the official
        ``GENIAcorpus3.02.tgz``.
    output_dir (Union[str, Path]): The folder to write to, created if needed.
    n_train_dev (int): Number of sentences of train+dev; the ones after are test.
    dev_pool (int): Dev is taken from the first ``dev_pool`` sentences...
    dev_every (int): ... as every ``dev_every``-th of them, from the first one.
    documents (bool): Also write ``dev.documents.jsonl`` and ``test.documents.jsonl``:
        every abstract with a sentence of the split, whole and in order, its sentences of
        other splits with ``"annotated": false`` and no entities (context only, as the
        reader's ``group_by="doc"`` reads them), so that a split is scored inside its
        abstracts while no text of it is in train.jsonl.
    spaces (bool): Write each record's ``"spaces"`` (``read_genia_xml``): its docs then
        hold the text as written rather than the tokens joined by spaces.
    RETURNS (GeniaConversionReport): The counts, per split and in all.
    RAISES (FileNotFoundError): NME104 if the input does not exist.
    RAISES (ValueError): NME003 for an invalid split setting, NME110/NME111/NME112 for
        an input that is not the GENIA XML.
    """
    for setting, value, least in [
        ("n_train_dev", n_train_dev, 0),
        ("dev_pool", dev_pool, 0),
        ("dev_every", dev_every, 1),
    ]:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            expected = f"Expected an integer >= {least}."
            raise ValueError(Errors.NME003.format(setting=setting, value=value, expected=expected))
    report = GeniaConversionReport(path=str(input_path))
    records = read_genia_xml(input_path, report=report, spaces=spaces)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = {split: output_dir / f"{split}.jsonl" for split in SPLITS}
    if documents:
        paths.update(
            {f"{split}.documents": output_dir / f"{split}.documents.jsonl"
             for split in DOCUMENT_SPLITS}
        )
    report.split_sentences = dict.fromkeys(SPLITS, 0)
    report.split_entities = dict.fromkeys(SPLITS, 0)
    with atomic_files(paths) as partial, ExitStack() as stack:
        files = {
            split: stack.enter_context(path.open("w", encoding="utf-8"))
            for split, path in partial.items()
        }
        article: list[tuple[str, dict[str, Any]]] = []
        for index, record in enumerate(records):
            split = genia_split(
                index, n_train_dev=n_train_dev, dev_pool=dev_pool, dev_every=dev_every
            )
            files[split].write(json.dumps(record, ensure_ascii=False) + "\n")
            report.split_sentences[split] += 1
            report.split_entities[split] += len(record["entities"])
            if documents:
                doc = record.get("doc")
                if article and (doc is None or article[-1][1].get("doc") != doc):
                    _write_documents(article, files)
                    article = []
                article.append((split, record))
        if article:
            _write_documents(article, files)
    for split, path in paths.items():
        report.output_paths[split] = str(path)
    if report.sentences < n_train_dev:
        warnings.warn(
            Warnings.NMW110.format(
                path=input_path,
                count=report.sentences,
                plural="" if report.sentences == 1 else "s",
                n_train_dev=n_train_dev,
            ),
            stacklevel=2,
        )
    return report


def _write_documents(article: list[tuple[str, dict[str, Any]]], files: dict[str, IO[str]]) -> None:
    """Write one abstract's sentences (with their splits) to the documents file of each split
    it has sentences of: that split's sentences as they are, the others as context only."""
    for split in DOCUMENT_SPLITS:
        if not any(own == split for own, _ in article):
            continue
        for own, record in article:
            if own != split:
                record = {**record, "entities": [], "annotated": False}
            files[f"{split}.documents"].write(json.dumps(record, ensure_ascii=False) + "\n")
