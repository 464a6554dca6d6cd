"""Training steps as the studies time them: a shipped config built in a precision on the
GENIA train file, and the batches ``spacy train`` would make of it."""
from typing import Any, Dict, List, Optional

import spacy
from spacy.training import Example
from spacy.util import load_config

from spacy_nested_mrc.annotate.loading import precision_overrides
from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.encoder.hf import resolve_encoder


def build(config_path: str, train: str, precision: str, encoder: str,
          overrides: Optional[Dict[str, Any]] = None):
    """The config's pipeline in ``precision`` on ``encoder``, reading ``train``, with
    ``overrides`` (``SECTION.KEY``: value) set."""
    config = load_config(config_path, interpolate=False)
    settings: Dict[str, Any] = {"paths.train": train, "paths.dev": train,
                                "paths.encoder": resolve_encoder(encoder), **(overrides or {})}
    settings.update(precision_overrides(config, precision))
    config = load_config(config_path, overrides=settings, interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    return nlp


def batches(nlp, train: str, words: int, steps: int) -> List[List[Example]]:
    """The first ``steps`` batches of about ``words`` words, in file order."""
    examples = create_jsonl_reader(train, spans_key="nested")(nlp)
    batcher = spacy.util.registry.batchers.get("spacy.batch_by_words.v1")(
        size=words, tolerance=0.2, discard_oversize=False)
    result = []
    for batch in batcher(examples):
        result.append(list(batch))
        if len(result) == steps + 1:  # one to warm up
            break
    return result
