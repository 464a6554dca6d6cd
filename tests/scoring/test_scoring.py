"""The scorer (``spacy_nested_mrc.scoring.scorer``) on documents with context-only text:
what a pipe predicts there is left out of the scores."""

import spacy
from spacy.tokens import Span
from spacy.training import Example

from spacy_nested_mrc.annotation import unannotated_key
from spacy_nested_mrc.scoring.scorer import score_nested


def test_scorer_leaves_context_only_text_out():
    nlp = spacy.blank("en")
    reference = nlp.make_doc("IL-2 gene . It binds NF-kappa B .")
    reference.spans["nested"] = [Span(reference, 0, 2, "DNA")]
    reference.spans[unannotated_key("nested")] = [reference[3:]]
    predicted = nlp.make_doc(reference.text)
    predicted.spans["nested"] = [Span(predicted, 0, 2, "DNA"), Span(predicted, 5, 7, "protein")]
    scores = score_nested([Example(predicted, reference)])
    assert scores["spans_nested_p"] == 1.0 and scores["spans_nested_r"] == 1.0
    del reference.spans[unannotated_key("nested")]
    assert score_nested([Example(predicted, reference)])["spans_nested_p"] == 0.5
