"""Dev predictions through ``spacy evaluate``'s protocol, scored by both span scorers: ours
(``spacy-nested-mrc.nested_scorer.v1``, exact characters) and spaCy's
``spacy.spancat_scorer.v1`` (``Scorer.score_spans``)."""
from typing import Any, Dict, Optional


def score_pipeline(path: str, dev: str, spans_key: str, batch_size: int,
                   tokenizer: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Predict dev once with the pipeline at ``path`` (its tokenizer replaced by the
    registered ``tokenizer`` block, e.g. ``{"@tokenizers": "spacy.Tokenizer.v1"}``, if
    given); RETURNS both scorers' P/R/F and the predicted spans that cannot be aligned to
    the gold tokens."""
    import spacy
    from spacy.training import Corpus
    from spacy.util import registry

    from spacy_nested_mrc.scoring.scorer import score_nested

    nlp = spacy.load(path)
    if tokenizer is not None:
        nlp.tokenizer = registry.resolve({"tokenizer": tokenizer})["tokenizer"](nlp)
    examples = list(Corpus(dev)(nlp))
    for eg, doc in zip(examples, nlp.pipe([eg.predicted for eg in examples],
                                          batch_size=batch_size)):
        eg.predicted = doc
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
