"""Annotate a corpus with a pipeline: streaming input, shards committed with a manifest
(resumable), the local engine (``nlp.pipe``) or Ray (an actor pool)."""
from ..inputs import InputSpec, Record, iter_records
from .outputs import MANIFEST, Manifest, ShardWriter, doc_record
from .runner import AnnotateSummary, annotate_corpus
from .settings import AnnotateSettings

__all__ = [
    "AnnotateSettings",
    "AnnotateSummary",
    "InputSpec",
    "MANIFEST",
    "Manifest",
    "Record",
    "ShardWriter",
    "annotate_corpus",
    "doc_record",
    "iter_records",
]
