"""spacy-nested-mrc: nested named entity recognition as a spaCy pipe, ``nested_mrc_ner``."""

from .about import __version__
from .component import NestedMRCNER, make_nested_mrc_ner
from .corpora.jsonl import SAMPLE_DIR, create_jsonl_reader
from .models.mrc.model import build_mrc_query_model
from .models.multi_ner.model import build_multi_ner_model, type_attention
from .runtime.memory import ReleaseMemory
from .runtime.processes import register_fork_handler
from .scoring.scorer import make_nested_scorer, score_nested
from .types import SpanBatch, SpanOutput

register_fork_handler()  # nlp.pipe(n_process=N) would hang in torch's thread pool otherwise

__all__ = [
    "__version__",
    "NestedMRCNER",
    "make_nested_mrc_ner",
    "SAMPLE_DIR",
    "create_jsonl_reader",
    "ReleaseMemory",
    "build_mrc_query_model",
    "build_multi_ner_model",
    "type_attention",
    "make_nested_scorer",
    "score_nested",
    "SpanBatch",
    "SpanOutput",
]
