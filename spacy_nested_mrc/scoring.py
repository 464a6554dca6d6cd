"""The registered scorer: P/R/F of exact labelled spans (overall and per type), and recall of
nested vs non-nested gold entities."""

from typing import Any, Callable, Dict, Iterable

import numpy as np
from spacy.scorer import PRFScore, Scorer
from spacy.training import Example
from spacy.util import registry

from .spans import nested_mask


def score_nested(
    examples: Iterable[Example], *, spans_key: str = "nested", **kwargs: Any
) -> Dict[str, Any]:
    """Score the spans in ``doc.spans[spans_key]`` against the gold ones.

    RETURNS (Dict[str, Any]): ``spans_{key}_p/r/f``, ``spans_{key}_per_type`` and
        ``spans_{key}_nested_r`` / ``spans_{key}_non_nested_r`` (recall of gold entities
        that contain or lie in another gold entity, and of the others).
    """
    examples = list(examples)
    attr = f"spans_{spans_key}"
    scores = Scorer.score_spans(
        examples,
        attr=attr,
        getter=lambda doc, _: doc.spans.get(spans_key, []),
        has_annotation=lambda doc: spans_key in doc.spans,
        allow_overlap=True,
        labeled=True,
    )
    nested, flat = PRFScore(), PRFScore()
    for eg in examples:
        if spans_key not in eg.reference.spans:
            continue
        gold = eg.reference.spans[spans_key]
        predicted = eg.predicted.spans.get(spans_key, [])
        found = {(span.start_char, span.end_char, span.label_) for span in predicted}
        starts = np.asarray([s.start for s in gold], dtype=np.int64)
        ends = np.asarray([s.end for s in gold], dtype=np.int64)
        for span, is_nested in zip(gold, nested_mask(starts, ends)):
            hit = (span.start_char, span.end_char, span.label_) in found
            target = nested if is_nested else flat
            target.tp += int(hit)
            target.fn += int(not hit)
    scores[f"{attr}_nested_r"] = nested.recall if nested.tp + nested.fn else None
    scores[f"{attr}_non_nested_r"] = flat.recall if flat.tp + flat.fn else None
    return scores


@registry.scorers("spacy-nested-mrc.nested_scorer.v1")
def make_nested_scorer() -> Callable[..., Dict[str, Any]]:
    """RETURNS (Callable): the scorer of ``nested_mrc_ner``."""
    return score_nested
