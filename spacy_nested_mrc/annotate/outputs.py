"""Annotated documents as output records, written in shards that are committed atomically
with a manifest, so that a job killed at any moment resumes where it stopped and the output
holds every input document exactly once.

OUTPUT is a folder::

    manifest.json         the job: input fingerprint, settings, shards, positions consumed
    annotate.lock         while a job runs: its process id and host (``OutputLock``)
    shard-000000.jsonl    one record per document (or shard-000000.spacy, a DocBin)
    ...

A shard is written to a temporary file, flushed to disk and renamed into place; only then
is the manifest (written the same way) updated to list it and the input positions it
covers. A shard file that the manifest does not list is from a killed run and is written
again.
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
import time
import warnings
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

from ..errors import Errors, Warnings
from ..files import as_write_error, write_atomic

if TYPE_CHECKING:
    from spacy.tokens import Doc

MANIFEST = "manifest.json"
LOCK = "annotate.lock"
# notes (odd input lines) a shard lists in the manifest; the rest are counted
MAX_NOTES = 100
OUTPUT_FORMATS = ("jsonl", "spacy")
MANIFEST_VERSION = 1


def doc_record(
    doc: "Doc", doc_id: str, spans_key: str, *, with_ents: bool = False, with_text: bool = True
) -> Dict[str, Any]:
    """The output record of an annotated doc: its id, text and every span of
    ``doc.spans[spans_key]`` with character and token offsets, label and score (and
    ``doc.ents``, with ``with_ents``)."""
    group = doc.spans[spans_key] if spans_key in doc.spans else []
    scores = group.attrs.get("scores") if len(group) else None
    spans = [
        {
            "start_char": span.start_char,
            "end_char": span.end_char,
            "start": span.start,
            "end": span.end,
            "label": span.label_,
            "text": span.text,
            "score": None if scores is None else round(float(scores[i]), 6),
        }
        for i, span in enumerate(group)
    ]
    record: Dict[str, Any] = {"id": doc_id}
    if with_text:
        record["text"] = doc.text
    record["spans"] = spans
    if with_ents:
        record["ents"] = [
            {"start_char": e.start_char, "end_char": e.end_char, "start": e.start,
             "end": e.end, "label": e.label_, "text": e.text}
            for e in doc.ents
        ]
    return record


@dataclass
class Shard:
    """A committed shard: its file, the input positions [start, end) it covers, and what it
    holds; ``counts`` are its notes by kind (``inputs.NOTE_KINDS``) and ``notes`` the first
    ``MAX_NOTES`` of them, each ``{"where", "id", "kind", "detail"}``."""

    name: str
    start: int
    end: int
    docs: int
    spans: int
    skipped: int
    counts: Dict[str, int] = field(default_factory=dict)
    notes: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class Manifest:
    """The state of a job, as committed."""

    job: Dict[str, Any]
    shards: List[Shard] = field(default_factory=list)
    done: bool = False
    summary: Dict[str, Any] = field(default_factory=dict)
    version: int = MANIFEST_VERSION

    @property
    def consumed(self) -> int:
        """RETURNS (int): the input positions the committed shards cover."""
        return self.shards[-1].end if self.shards else 0

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Manifest":
        shards = [Shard(**shard) for shard in data.get("shards", [])]
        return cls(job=data["job"], shards=shards, done=bool(data.get("done")),
                   summary=dict(data.get("summary", {})),
                   version=int(data.get("version", MANIFEST_VERSION)))


def committed_documents(output: Path) -> int:
    """RETURNS (int): the documents in the committed shards of ``output`` (0 without a
    readable manifest)."""
    try:
        data = json.loads((output / MANIFEST).read_text(encoding="utf8"))
        return sum(int(shard["docs"]) for shard in data["shards"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


class OutputLock:
    """Holds an output folder for one job: the file ``annotate.lock`` with the holder's
    process id and host, written whole before it appears (a temporary file hard-linked
    into place), so no job ever meets an empty lock of a live one. A second job on the
    folder is refused (NME121) while the holder runs; a lock whose process is gone (same
    host) is taken over with warning NMW135, an empty or unreadable one (left by an older
    version or a damaged disk) with NMW137. A full disk or a folder that cannot be written
    raises a coded ``WriteError`` and leaves no lock behind. Use as a context manager.

    output (Path): the folder (created).
    """

    def __init__(self, output: Path) -> None:
        self.path = output / LOCK
        self.held = False

    def __enter__(self) -> "OutputLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise as_write_error(err, self.path.parent) from err
        if not self._create():
            holder, problem = self._holder()
            if problem is not None:
                warnings.warn(Warnings.NMW137.format(path=self.path, problem=problem))
            elif self._stale(holder):
                warnings.warn(Warnings.NMW135.format(path=self.path, holder=holder))
            else:
                raise FileExistsError(Errors.NME121.format(path=self.path, holder=holder))
            self.path.unlink(missing_ok=True)
            if not self._create():  # another job took it over first
                raise FileExistsError(
                    Errors.NME121.format(path=self.path, holder=self._holder()[0]))
        self.held = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False

    def _create(self) -> bool:
        """Write the holder to a temporary file and link it to the lock's name (which fails
        if a lock exists). RETURNS (bool): whether this job now holds the lock."""
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                             "started": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode("utf8")
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=LOCK + ".", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(holder)
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        except OSError as err:
            raise as_write_error(err, self.path) from err
        finally:
            if tmp is not None:
                with suppress(OSError):
                    os.unlink(tmp)

    def _holder(self) -> Tuple[Dict[str, Any], Optional[str]]:
        """RETURNS (Tuple[dict, Optional[str]]): the lock's holder, and what is wrong with
        the file if it names none."""
        try:
            text = self.path.read_text(encoding="utf8")
        except OSError as err:
            return {}, f"cannot read it: {err.strerror}"
        if not text.strip():
            return {}, "the file is empty"
        try:
            holder = json.loads(text)
        except ValueError:
            return {}, "it is not the JSON a lock holds"
        if not isinstance(holder, dict):
            return {}, "it is not the JSON a lock holds"
        return holder, None

    def _stale(self, holder: Dict[str, Any]) -> bool:
        """Whether the holder is a process of this host that is gone (a lock from another
        host is taken to be live)."""
        if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
            return False
        try:
            os.kill(holder["pid"], 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


class ShardWriter:
    """Commits shards and the manifest of one output folder.

    output (Path): the folder (created).
    job (Dict[str, Any]): what identifies the job (input fingerprint, pipeline, settings): a
        folder that holds another job's output raises NME133, unless ``overwrite``.
    output_format (str): "jsonl" or "spacy" (DocBin shards).
    overwrite (bool): start again in a folder that holds another job's output.
    """

    def __init__(
        self, output: Path, job: Dict[str, Any], output_format: str = "jsonl",
        overwrite: bool = False,
    ) -> None:
        if output_format not in OUTPUT_FORMATS:
            raise ValueError(
                Errors.NME006.format(what="output format", value=output_format,
                                     options=OUTPUT_FORMATS)
            )
        if output.exists() and not output.is_dir():
            raise ValueError(Errors.NME134.format(path=output))
        self.output = output
        self.output_format = output_format
        output.mkdir(parents=True, exist_ok=True)
        for path in output.glob(MANIFEST + "*.tmp"):  # of a killed run (the lock is ours)
            path.unlink()
        previous = self._read_manifest()
        if previous is not None and previous.job != job and not overwrite:
            raise ValueError(Errors.NME133.format(path=output, saved=previous.job, job=job))
        if previous is None or previous.job != job:
            self._remove_shards()
            previous = Manifest(job=job)
            self._commit_manifest(previous)
        self.manifest = previous

    @property
    def suffix(self) -> str:
        return ".jsonl" if self.output_format == "jsonl" else ".spacy"

    def _read_manifest(self) -> Optional[Manifest]:
        path = self.output / MANIFEST
        if not path.exists():
            return None
        try:
            return Manifest.from_dict(json.loads(path.read_text(encoding="utf8")))
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(Errors.NME135.format(path=path, error=err)) from err

    def _remove_shards(self) -> None:
        for path in self.output.glob("shard-*"):
            path.unlink()

    def committed_ids(self, vocab: Any) -> Iterator[str]:
        """YIELDS (str): the ids of the documents in the committed shards, in order."""
        for shard in self.manifest.shards:
            path = self.output / shard.name
            if shard.name.endswith(".jsonl"):
                with path.open(encoding="utf8") as f:
                    yield from (json.loads(line)["id"] for line in f)
            else:
                from spacy.tokens import DocBin

                for doc in DocBin().from_disk(path).get_docs(vocab):
                    yield str(doc.user_data.get("id"))

    def _commit_manifest(self, manifest: Manifest) -> None:
        data = json.dumps(manifest.to_dict(), indent=1, ensure_ascii=False).encode("utf8")
        write_atomic(self.output / MANIFEST, data)

    def commit(
        self, records: List[Dict[str, Any]], docs: List["Doc"], end: int, skipped: int,
        notes: Optional[List[Dict[str, Any]]] = None,
    ) -> Shard:
        """Write one shard of annotated documents and record it in the manifest.

        records (List[dict]): the documents' output records (``doc_record``), in input order.
        docs (List[Doc]): the same documents (written for DocBin output).
        end (int): the input position after the shard's last line.
        skipped (int): lines among the shard's positions that held no document to annotate.
        notes (Optional[List[dict]]): what was odd about its lines, in input order.
        RETURNS (Shard): the committed shard.
        """
        name = f"shard-{len(self.manifest.shards):06d}{self.suffix}"
        if self.output_format == "jsonl":
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            payload = data.encode("utf8")
        else:
            from spacy.tokens import DocBin

            bin_ = DocBin(store_user_data=True)
            for record, doc in zip(records, docs):
                doc.user_data["id"] = record["id"]
                bin_.add(doc)
            payload = bin_.to_bytes()
        write_atomic(self.output / name, payload)
        shard = Shard(
            name=name, start=self.manifest.consumed, end=end, docs=len(records),
            spans=sum(len(r["spans"]) for r in records), skipped=skipped,
        )
        for item in notes or []:
            shard.counts[item["kind"]] = shard.counts.get(item["kind"], 0) + 1
        shard.notes = list(notes or [])[:MAX_NOTES]
        self.manifest.shards.append(shard)
        self._commit_manifest(self.manifest)
        return shard

    def finish(self, summary: Dict[str, Any]) -> None:
        """Mark the job complete, with its summary."""
        self.manifest.done = True
        self.manifest.summary = summary
        self._commit_manifest(self.manifest)
