"""The Ray engine: the documents go through a Ray Data ``map_batches`` over an actor pool,
each actor loading the pipeline once (``--concurrency`` actors, ``--num-gpus-per-worker``
GPUs each), on a local Ray instance or a cluster (``--address``).

The driver streams the input and hands it to Ray Data one window of ``window`` documents at
a time, so its memory stays bounded; each window is one dataset, whose actor pool loads the
pipeline once per actor (a window of 10,000 documents makes that load a small share).
Every output row carries its input position. Ray Data retries failed tasks and restarts
dead actors (its defaults for actor pools), which may run a batch twice; the driver takes
each position exactly once (NME138 if one is missing or repeated) and commits the window
through the same shards and manifest as the local engine, so "every document exactly once"
rests on the driver's commit, not on the workers.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional

from ..errors import Errors
from ..inputs import Record

if TYPE_CHECKING:
    from .settings import Annotated, AnnotateSettings


@dataclass
class RayOptions:
    """Settings of the Ray engine.

    address (Optional[str]): the cluster to join ("auto", "ray://host:10001"); None
        starts a local instance (``num_cpus`` CPUs) unless Ray is already initialized.
    concurrency (int): actors, each with the pipeline loaded.
    num_cpus_per_worker (float): CPUs each actor holds.
    num_gpus_per_worker (float): GPUs each actor holds (0: CPU); an actor with a GPU runs
        the pipeline on it.
    window (int): documents per Ray dataset (the driver's memory bound).
    num_cpus (Optional[int]): CPUs of a local instance (None: all).
    """

    address: Optional[str] = None
    concurrency: int = 1
    num_cpus_per_worker: float = 1.0
    num_gpus_per_worker: float = 0.0
    window: int = 10000
    num_cpus: Optional[int] = None


class PipelineActor:
    """A Ray Data callable class: loads the pipeline once, annotates batches of rows
    ``{"position", "id", "text", "doc"}`` into ``{"position", "record", "doc"}`` (the
    output record as JSON, the doc's bytes for DocBin output)."""

    def __init__(
        self, pipeline: str, quantize: Optional[str], spans_key: str, settings: Dict[str, Any],
        use_gpu: bool, runtime: Optional[str] = None, release_every: int = 0,
        precision: Optional[str] = None, onednn_cache: Optional[int] = None,
    ) -> None:
        import spacy

        from .loading import load_annotator

        if use_gpu:
            spacy.require_gpu()
        self.nlp = load_annotator(pipeline, quantize, runtime, release_every, precision=precision,
                                  onednn_cache=onednn_cache)
        if settings.get("max_length") is not None:
            self.nlp.max_length = settings["max_length"]
        self.spans_key = spans_key
        self.settings = settings

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        from spacy.tokens import Doc

        from .outputs import doc_record
        from .pieces import pipe_any_length

        inputs = []
        for text, data in zip(batch["text"], batch["doc"]):
            inputs.append(Doc(self.nlp.vocab).from_bytes(data) if len(data) else str(text))
        records, docs = [], []
        docs_in = pipe_any_length(self.nlp, ((x, None) for x in inputs), batch_size=len(inputs))
        for doc_id, (doc, _) in zip(batch["id"], docs_in):
            out = doc_record(doc, str(doc_id), self.spans_key,
                             with_ents=self.settings["write_ents"],
                             with_text=self.settings["with_text"])
            records.append(json.dumps(out, ensure_ascii=False))
            docs.append(doc.to_bytes() if self.settings["output_format"] == "spacy" else b"")
        return {"position": batch["position"], "record": records, "doc": docs}


def _init_ray(options: RayOptions) -> Any:
    try:
        import ray
    except ImportError as err:
        raise ImportError(Errors.NME137.format(error=err)) from err
    if not ray.is_initialized():
        if options.address:
            ray.init(address=options.address, log_to_driver=False)
        else:
            ray.init(num_cpus=options.num_cpus, log_to_driver=False, include_dashboard=False)
    return ray


def annotate_ray(
    pipeline: str,
    records: Iterator[Record],
    spans_key: str,
    settings: "AnnotateSettings",
    options: Dict[str, Any],
) -> Iterator["Annotated"]:
    """Annotate the records on Ray, yielding them in input order as the local engine does.

    pipeline (str): the pipeline (a path every Ray worker can read, or an installed package).
    records (Iterator[Record]): the input, from ``inputs.iter_records``.
    spans_key (str): the doc.spans key to write.
    settings (AnnotateSettings): output and batching settings.
    options (Dict[str, Any]): ``RayOptions`` fields.
    YIELDS (Annotated): (record, output record, Doc) per record, in input order.
    """
    from spacy.tokens import Doc

    opts = RayOptions(**options)
    ray = _init_ray(opts)
    path = Path(pipeline)
    location = str(path.resolve()) if path.exists() else pipeline
    constructor = {
        "pipeline": location,
        "quantize": settings.quantize,
        "runtime": settings.runtime,
        "precision": settings.precision,
        "onednn_cache": settings.onednn_cache,
        "release_every": settings.release_every,
        "spans_key": spans_key,
        "settings": {"write_ents": settings.write_ents, "with_text": settings.with_text,
                     "output_format": settings.output_format,
                     "max_length": settings.max_length},
        "use_gpu": opts.num_gpus_per_worker > 0,
    }
    vocab = None
    while True:
        window = list(islice(records, opts.window))
        if not window:
            return
        rows = [
            {"position": r.position, "id": r.id or "", "text": r.text or "",
             "doc": r.doc.to_bytes() if r.doc is not None else b""}
            for r in window if not r.skip
        ]
        results: Dict[int, Dict[str, Any]] = {}
        if rows:
            dataset = ray.data.from_items(rows).map_batches(
                PipelineActor,
                fn_constructor_kwargs=constructor,
                batch_size=settings.batch_size,
                concurrency=opts.concurrency,
                num_cpus=opts.num_cpus_per_worker,
                num_gpus=opts.num_gpus_per_worker,
            )
            for row in dataset.iter_rows():
                position = int(row["position"])
                if position in results:
                    raise RuntimeError(Errors.NME138.format(position=position, problem="twice"))
                results[position] = row
        expected = {row["position"] for row in rows}
        missing = sorted(expected - set(results))
        if missing or set(results) - expected:
            problem = "missing" if missing else "not in the window"
            first = missing[0] if missing else min(set(results) - expected)
            raise RuntimeError(Errors.NME138.format(position=first, problem=problem))
        for record in window:
            if record.skip:
                yield record, None, None
                continue
            row = results[record.position]
            doc = None
            if settings.output_format == "spacy":
                if vocab is None:
                    from spacy.vocab import Vocab

                    vocab = Vocab()
                doc = Doc(vocab).from_bytes(row["doc"])
            yield record, json.loads(row["record"]), doc


