"""Annotated documents as output records, written in shards that are committed atomically
with a manifest, so that a job killed at any moment resumes where it stopped and the output
holds every input document exactly once.

OUTPUT is a folder::

    manifest.json         the job: input fingerprint, settings, shards, positions consumed
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..errors import Errors

if TYPE_CHECKING:
    from spacy.tokens import Doc

MANIFEST = "manifest.json"
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
    holds."""

    name: str
    start: int
    end: int
    docs: int
    spans: int
    skipped: int


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


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader (or a resumed job) sees either the old
    file or the whole new one: a temporary file, flushed to disk, then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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

    def _commit_manifest(self, manifest: Manifest) -> None:
        data = json.dumps(manifest.to_dict(), indent=1, ensure_ascii=False).encode("utf8")
        write_atomic(self.output / MANIFEST, data)

    def commit(
        self, records: List[Dict[str, Any]], docs: List["Doc"], end: int, skipped: int
    ) -> Shard:
        """Write one shard of annotated documents and record it in the manifest.

        records (List[dict]): the documents' output records (``doc_record``), in input order.
        docs (List[Doc]): the same documents (written for DocBin output).
        end (int): the input position after the shard's last line.
        skipped (int): malformed lines among the shard's positions.
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
        self.manifest.shards.append(shard)
        self._commit_manifest(self.manifest)
        return shard

    def finish(self, summary: Dict[str, Any]) -> None:
        """Mark the job complete, with its summary."""
        self.manifest.done = True
        self.manifest.summary = summary
        self._commit_manifest(self.manifest)
