"""Run a pipeline over a corpus: stream the input, annotate with an engine, commit shards,
resume, report."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from tqdm import tqdm

from ..errors import Errors
from ..inputs import STDIN, InputSpec, Record, count_lines, iter_records, note
from ..runtime.processes import job_processes
from ..validation import check_positive
from .outputs import OutputLock, ShardWriter, doc_record
from .pieces import pipe_any_length
from .settings import ENGINES, Annotated, AnnotateSettings

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

# the lines of odd input the summary prints (all are in the manifest's shards, up to
# outputs.MAX_NOTES a shard)
SUMMARY_NOTES = 20


@dataclass
class AnnotateSummary:
    """What a job did (this run and the whole job).

    documents, spans, skipped, blank (int): annotated documents, spans written, malformed
        lines skipped and blank lines, over the whole job.
    resumed_at (int): input positions a previous run had committed.
    seconds (float): this run's time; docs_per_second: this run's documents a second.
    shards (int): shards in the output.
    problems (Dict[str, int]): lines of odd input by kind (``inputs.NOTE_KINDS``).
    notes (List[Dict[str, Any]]): the first ``SUMMARY_NOTES`` of them: where, id, kind,
        detail.
    """

    documents: int
    spans: int
    skipped: int
    blank: int
    resumed_at: int
    seconds: float
    docs_per_second: float
    shards: int
    problems: Dict[str, int] = field(default_factory=dict)
    notes: List[Dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        resumed = f" (resumed after {self.resumed_at} lines)" if self.resumed_at else ""
        lines = [
            f"{self.documents} documents, {self.spans} spans, {self.skipped} line(s) "
            f"skipped, {self.blank} blank, in {self.shards} shard(s){resumed}; "
            f"this run: {self.seconds:.1f} s, {self.docs_per_second:.1f} documents/s"
        ]
        if self.problems:
            lines.append("Odd input: " + ", ".join(
                f"{count} {kind.replace('_', ' ')}" for kind, count in self.problems.items()))
            lines.extend(f"  {_where(n)}: {n['detail']}" for n in self.notes)
            listed = sum(self.problems.values())
            if listed > len(self.notes):
                lines.append(f"  ... {listed - len(self.notes)} more: see the manifest's shards")
        return "\n".join(lines)


def _where(note: Dict[str, Any]) -> str:
    """A note's file and line, and its document's id where it has one."""
    return note["where"] if note["id"] is None else f"{note['where']} (id {note['id']!r})"


def job_identity(spec: InputSpec, pipeline: str, settings: AnnotateSettings) -> Dict[str, Any]:
    """What a resumed job must share with the run that started it: the input, the pipeline
    and every setting that changes the output (not the parallelism nor the shard size)."""
    identity = {
        "input": spec.fingerprint(),
        "pipeline": str(Path(pipeline).resolve()) if Path(pipeline).exists() else pipeline,
        "spans_key": settings.spans_key,
        "output_format": settings.output_format,
        "write_ents": settings.write_ents,
        "with_text": settings.with_text,
        "quantize": settings.quantize,
    }
    # settings added later enter only when set, so jobs started before them still resume
    if settings.runtime is not None:
        identity["runtime"] = settings.runtime
    if settings.precision is not None:
        identity["precision"] = settings.precision
    for name, default in (("encoding_errors", "replace"), ("long_docs", "split"),
                          ("max_length", None)):
        if getattr(settings, name) != default:
            identity[name] = getattr(settings, name)
    return identity


def annotate_local(
    nlp: "Language", records: Iterator[Record], spans_key: str, settings: AnnotateSettings
) -> Iterator[Annotated]:
    """The local engine: ``nlp.pipe`` over the records, in order. Records without a document
    go through as empty texts so that the order is kept.

    With one process, each shard's records go through ``nlp.pipe`` on their own, so that a
    resumed job (which starts at a shard boundary) batches every document exactly as an
    uninterrupted run does: batched inference pads, and a document's scores can move in
    the last digits with the company it is batched in. With ``n_process`` > 1 the records
    stream through one ``nlp.pipe`` (a pool of processes per shard would cost more than it
    gives), and a resumed job's scores may differ from an uninterrupted run's in that way.
    """
    if settings.n_process > 1:
        # the fast tokenizer's own threads do not survive a fork: it would say so in every
        # worker; the workers are the parallelism here
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        yield from _pipe_records(nlp, records, spans_key, settings)
        return
    for chunk in _shard_chunks(records, settings.shard_size):
        yield from _pipe_records(nlp, iter(chunk), spans_key, settings)


def _shard_chunks(records: Iterator[Record], shard_size: int) -> Iterator[List[Record]]:
    """The records in runs that end where a shard of ``shard_size`` documents ends."""
    chunk: List[Record] = []
    docs = 0
    for record in records:
        chunk.append(record)
        docs += not record.skip
        if docs == shard_size:
            yield chunk
            chunk, docs = [], 0
    if chunk:
        yield chunk


def _pipe_records(
    nlp: "Language", records: Iterator[Record], spans_key: str, settings: AnnotateSettings
) -> Iterator[Annotated]:
    pairs = ((r.doc if r.doc is not None else (r.text or ""), r) for r in records)
    piped = pipe_any_length(nlp, sorted_in_buffers(pairs, settings.sort_buffer),
                            batch_size=settings.batch_size, n_process=settings.n_process)
    for doc, record in in_input_order(piped):
        if record.skip:
            yield record, None, None
            continue
        out = doc_record(doc, record.id or "", spans_key, with_ents=settings.write_ents,
                         with_text=settings.with_text)
        yield record, out, doc if settings.output_format == "spacy" else None


def sorted_in_buffers(
    items: Iterator[Tuple[Any, Any]], size: int
) -> Iterator[Tuple[Any, Tuple[Any, int, int]]]:
    """``(text or doc, context)`` pairs read ``size`` at a time and each buffer given out
    shortest text first, each context with its place in the buffer and the buffer's size
    (``in_input_order`` puts them back). ``size`` 0: one at a time, in input order.

    YIELDS (Tuple[Any, Tuple[Any, int, int]]): (text or doc, (context, place, buffer size)).
    """
    buffer: List[Tuple[Any, Any]] = []

    def given_out() -> Iterator[Tuple[Any, Tuple[Any, int, int]]]:
        order = sorted(range(len(buffer)), key=lambda k: _text_length(buffer[k][0]))
        for k in order:
            yield buffer[k][0], (buffer[k][1], k, len(buffer))

    for item in items:
        buffer.append(item)
        if len(buffer) >= max(1, size):
            yield from given_out()
            buffer = []
    yield from given_out()


def in_input_order(
    outputs: Iterator[Tuple[Any, Tuple[Any, int, int]]]
) -> Iterator[Tuple[Any, Any]]:
    """The outputs of ``sorted_in_buffers``'s pairs (in its order, as ``nlp.pipe`` keeps it)
    back in input order, one buffer at a time.

    YIELDS (Tuple[Any, Any]): (doc, context).
    """
    pending: List[Tuple[int, Any, Any]] = []
    for doc, (context, place, size) in outputs:
        pending.append((place, doc, context))
        if len(pending) == size:
            for _, doc_, context_ in sorted(pending, key=lambda entry: entry[0]):
                yield doc_, context_
            pending = []


def _text_length(item: Any) -> int:
    return len(item.text) if hasattr(item, "text") else len(item)


def annotate_corpus(
    pipeline: str,
    spec: InputSpec,
    output: Path,
    settings: AnnotateSettings,
    *,
    engine: str = "local",
    engine_options: Optional[Dict[str, Any]] = None,
    overwrite: bool = False,
    progress: bool = True,
) -> AnnotateSummary:
    """Annotate every document of the input and write them to ``output`` in shards, resuming
    a job that a previous run with the same input, pipeline and settings left unfinished.

    pipeline (str): a pipeline folder or package.
    spec (InputSpec): the input.
    output (Path): the output folder (see ``outputs``).
    settings (AnnotateSettings): what to write and how to batch.
    engine (str): "local" (``nlp.pipe``) or "ray" (a Ray Data actor pool).
    engine_options (Optional[dict]): the Ray engine's options (``ray_engine.RayOptions``).
    overwrite (bool): start again in a folder holding another job's output.
    progress (bool): show a progress bar (documents/s, time left) on stderr.
    RETURNS (AnnotateSummary): the job's summary, also written into the manifest.
    """
    if engine not in ENGINES:
        raise ValueError(Errors.NME006.format(what="engine", value=engine, options=ENGINES))
    if settings.shard_size < 1 or settings.batch_size < 1 or settings.n_process < 1:
        raise ValueError(Errors.NME136.format(
            shard_size=settings.shard_size, batch_size=settings.batch_size,
            n_process=settings.n_process))
    check_positive("sort_buffer", settings.sort_buffer, allow_zero=True)
    check_output_apart(spec, output)
    # workers end with the job, and SIGTERM/SIGHUP stop it as SIGINT does (``Stopped``)
    with OutputLock(output), job_processes():
        return _run_job(pipeline, spec, output, settings, engine, engine_options or {},
                        overwrite, progress)


def check_output_apart(spec: InputSpec, output: Path) -> None:
    """Refuse (NME120) an output folder that is the input folder, inside it, or holds an
    input file: the job would read what it writes."""
    if spec.source == STDIN:
        return
    source, out = Path(spec.source).resolve(), output.resolve()
    relation = None
    if source == out:
        relation = "the same folder as"
    elif source.is_dir() and source in out.parents:
        relation = "inside"
    elif out in source.parents:
        relation = "the folder of"
    if relation is not None:
        raise ValueError(Errors.NME120.format(output=output, relation=relation,
                                              source=spec.source))


def _run_job(pipeline: str, spec: InputSpec, output: Path, settings: AnnotateSettings,
             engine: str, engine_options: Dict[str, Any], overwrite: bool, progress: bool
             ) -> AnnotateSummary:
    """``annotate_corpus`` once the output folder is this job's."""
    from .loading import load_annotator, pipe_spans_key

    writer = ShardWriter(output, job_identity(spec, pipeline, settings),
                         settings.output_format, overwrite=overwrite)
    manifest = writer.manifest
    resumed_at = manifest.consumed
    if manifest.done:
        return _summary(writer, resumed_at, 0.0, 0)
    nlp = load_annotator(pipeline, settings.quantize, settings.runtime, settings.release_every,
                         precision=settings.precision, onednn_cache=settings.onednn_cache)
    if settings.max_length is not None:
        nlp.max_length = settings.max_length
    spans_key = settings.spans_key or pipe_spans_key(nlp)
    total = count_lines(spec)
    records = iter_records(spec, nlp.vocab, skip=resumed_at,
                           encoding_errors=settings.encoding_errors,
                           max_length=nlp.max_length, long_docs=settings.long_docs)
    if engine == "ray":
        from .ray_engine import annotate_ray

        stream = annotate_ray(pipeline, records, spans_key, settings, engine_options)
    else:
        stream = annotate_local(nlp, records, spans_key, settings)
    bar = tqdm(
        total=None if total is None else max(0, total - resumed_at), unit="line",
        disable=not progress, desc="Annotating", dynamic_ncols=True,
    )
    start, run_docs = time.perf_counter(), 0
    outs: List[Dict[str, Any]] = []
    docs: List["Doc"] = []
    notes: List[Dict[str, Any]] = []
    seen = {doc_id: "an earlier run of this job" for doc_id in writer.committed_ids(nlp.vocab)}
    skipped, position = 0, resumed_at
    # closed here, not when collected: a stopped job's engine ends inside the job
    with closing(stream):
        for record, out, doc in stream:
            position = record.position + 1
            bar.update(1)
            if record.problem is not None:
                skipped += 1
            if out is not None:
                if record.id in seen:
                    note(record, "duplicate_id",
                         f"the id {record.id!r} is also that of {seen[record.id]}")
                else:
                    seen[record.id or ""] = record.where
                outs.append(out)
                if doc is not None:
                    docs.append(doc)
            notes.extend({"where": record.where, "id": record.id, "kind": kind, "detail": detail}
                         for kind, detail in record.notes)
            if len(outs) >= settings.shard_size:
                writer.commit(outs, docs, position, skipped, notes)
                run_docs += len(outs)
                outs, docs, notes, skipped = [], [], [], 0
    if outs or skipped or notes or position > manifest.consumed:
        writer.commit(outs, docs, position, skipped, notes)
        run_docs += len(outs)
    bar.close()
    summary = _summary(writer, resumed_at, time.perf_counter() - start, run_docs)
    writer.finish(summary.to_dict())
    return summary


def _summary(writer: ShardWriter, resumed_at: int, seconds: float, run_docs: int
             ) -> AnnotateSummary:
    shards = writer.manifest.shards
    documents = sum(s.docs for s in shards)
    skipped = sum(s.skipped for s in shards)
    problems: Dict[str, int] = {}
    for shard in shards:
        for kind, count in shard.counts.items():
            problems[kind] = problems.get(kind, 0) + count
    return AnnotateSummary(
        documents=documents,
        spans=sum(s.spans for s in shards),
        skipped=skipped,
        blank=writer.manifest.consumed - documents - skipped,
        resumed_at=resumed_at,
        seconds=round(seconds, 3),
        docs_per_second=round(run_docs / seconds, 2) if seconds > 0 else 0.0,
        shards=len(shards),
        problems=problems,
        notes=[n for shard in shards for n in shard.notes][:SUMMARY_NOTES],
    )
