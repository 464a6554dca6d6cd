"""Dev predictions through ``spacy evaluate``'s protocol, scored by both span scorers: ours
(``spacy-nested-mrc.nested_scorer.v1``, exact characters) and spaCy's
``spacy.spancat_scorer.v1`` (``Scorer.score_spans``)."""
from typing import Any, Dict, List, Optional, Sequence


def score_pipeline(path: str, dev: str, spans_key: str, batch_size: int,
                   tokenizer: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Predict dev once with the pipeline at ``path`` (its tokenizer replaced by the
    registered ``tokenizer`` block, e.g. ``{"@tokenizers": "spacy.Tokenizer.v1"}``, if
    given); RETURNS both scorers' P/R/F and the predicted spans that cannot be aligned to
    the gold tokens."""
    nlp = _load(path, tokenizer)
    return _scores(_predicted(nlp, dev, batch_size), spans_key)


def score_by_threshold(path: str, dev: str, spans_key: str, batch_size: int, pipe: str,
                       thresholds: Sequence[float]) -> List[Dict[str, Any]]:
    """``score_pipeline`` at each of ``thresholds`` of the pipe ``pipe`` (spaCy's
    ``spancat``: a span takes each label whose probability is at least its ``threshold``).
    Dev is predicted once at the lowest threshold; a higher one keeps the spans whose
    score (``doc.spans[key].attrs["scores"]``) reaches it, which is what the pipe predicts at
    that threshold where it keeps every label over it (``max_positive = null``).
    RETURNS: per threshold, its scores and ``threshold``."""
    from spacy.tokens import SpanGroup

    nlp = _load(path, None)
    component = nlp.get_pipe(pipe)
    if component.cfg.get("max_positive") is not None:
        raise ValueError(f"{pipe} keeps at most max_positive labels a span: its spans at a "
                         "higher threshold are not a subset of those at a lower one")
    component.cfg["threshold"] = min(thresholds)
    examples = _predicted(nlp, dev, batch_size)
    found = [(list(eg.predicted.spans.get(spans_key, [])),
              list(eg.predicted.spans[spans_key].attrs["scores"]) if spans_key in
              eg.predicted.spans else []) for eg in examples]
    results = []
    for threshold in sorted(thresholds):
        for eg, (spans, scores) in zip(examples, found):
            kept = [span for span, score in zip(spans, scores) if score >= threshold]
            eg.predicted.spans[spans_key] = SpanGroup(eg.predicted, name=spans_key,
                                                      spans=kept)
        results.append({"threshold": threshold, **_scores(examples, spans_key)})
    return results


def _load(path: str, tokenizer: Optional[Dict[str, Any]]):
    import spacy
    from spacy.util import registry

    nlp = spacy.load(path)
    if tokenizer is not None:
        nlp.tokenizer = registry.resolve({"tokenizer": tokenizer})["tokenizer"](nlp)
    return nlp


def _predicted(nlp, dev: str, batch_size: int) -> list:
    """The examples of the ``.spacy`` file ``dev``, each predicted by ``nlp`` from its text
    through ``nlp``'s tokenizer."""
    from spacy.training import Corpus

    examples = list(Corpus(dev)(nlp))
    for eg, doc in zip(examples, nlp.pipe([eg.predicted for eg in examples],
                                          batch_size=batch_size)):
        eg.predicted = doc
    return examples


def _scores(examples: list, spans_key: str) -> Dict[str, Any]:
    from spacy.util import registry

    from spacy_nested_mrc.scoring.scorer import score_nested

    ours = score_nested(examples, spans_key=spans_key)
    spacys = registry.scorers.get("spacy.spancat_scorer.v1")()(examples, spans_key=spans_key)
    predicted = unaligned = 0
    for eg in examples:
        found = list(eg.predicted.spans.get(spans_key, []))
        predicted += len(found)
        unaligned += len(found) - len(eg.get_aligned_spans_x2y(found, allow_overlap=True))
    attr = f"spans_{spans_key}"
    return {
        "ours": {k: round(100 * ours[f"{attr}_{k}"], 2) for k in ("p", "r", "f")},
        "spacy": {k: round(100 * spacys[f"{attr}_{k}"], 2) for k in ("p", "r", "f")},
        "predicted_spans": predicted,
        "unaligned_spans": unaligned,
    }
