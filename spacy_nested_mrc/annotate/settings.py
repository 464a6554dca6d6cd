"""What an ``annotate`` job is asked to do, shared by the runner and its engines."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from ..inputs import Record

if TYPE_CHECKING:
    from spacy.tokens import Doc

ENGINES = ("local", "ray")

# what an engine yields for every input record, in input order: the record, and for a
# document its output record and (for DocBin output) its Doc
Annotated = Tuple[Record, Optional[Dict[str, Any]], Optional["Doc"]]


@dataclass
class AnnotateSettings:
    """How to annotate, beside the input and the output.

    spans_key (Optional[str]): the doc.spans key to write; None: the pipe's own.
    output_format (str): "jsonl" or "spacy".
    write_ents (bool): also write ``doc.ents`` in each record.
    with_text (bool): write each document's text in its record.
    batch_size (int): documents per ``nlp.pipe`` batch (per actor call with Ray).
    sort_buffer (int): local engine: documents read ahead and sent through ``nlp.pipe``
        sorted by length (so a batch holds documents of similar length and the encoder
        pads little), written in input order; buffers never cross a shard, so a resumed
        job batches every document as an uninterrupted one. 0: input order.
    n_process (int): local engine: processes of ``nlp.pipe``.
    shard_size (int): documents per output shard (the unit of a resumed job's progress).
    quantize (Optional[str]): "int8": dynamic int8 quantization of the encoder on CPU.
    runtime (Optional[str]): "onnxruntime": the encoder run by ONNX Runtime on CPU; "torch";
        None: as the pipeline was saved.
    precision (Optional[str]): "fp32", "bf16", "fp16" or "auto": the arithmetic of every
        encoder and head (``runtime.precision``); None: as the pipeline's config says.
    onednn_cache (Optional[int]): the most bf16 primitives oneDNN keeps built, in each
        process (``runtime.memory.limit_onednn_cache``): every batch of another shape
        builds and keeps one, and over a long job they hold memory that grows with the
        shapes seen; None: oneDNN's own default (1,024) or the environment's. Only bf16 on
        a CPU builds them.
    release_every (int): give free heap memory back every that many documents, in each
        process (the ``nested_mrc_release_memory`` pipe); 0: never. Without it the
        resident size of a long job grows with the documents it has seen.
    encoding_errors (str): a line that is not UTF-8: "replace" its bad bytes, or "skip" it.
    long_docs (str): a text longer than ``max_length``: "split" (annotated in pieces, cut
        where the text breaks, spans at their offsets in the whole) or "skip".
    max_length (Optional[int]): the longest text annotated in one piece (None: the
        pipeline's ``nlp.max_length``, spaCy's 1,000,000 characters by default).
    """

    spans_key: Optional[str] = None
    output_format: str = "jsonl"
    write_ents: bool = False
    with_text: bool = True
    batch_size: int = 64
    sort_buffer: int = 1000
    n_process: int = 1
    shard_size: int = 1000
    quantize: Optional[str] = None
    runtime: Optional[str] = None
    precision: Optional[str] = None
    onednn_cache: Optional[int] = 256
    release_every: int = 256
    encoding_errors: str = "replace"
    long_docs: str = "split"
    max_length: Optional[int] = None
