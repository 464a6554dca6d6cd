"""The rows of the MRC family over documents (``spacy_nested_mrc.models.mrc.rows``): windows
that label whole sentences and read the text around them, context-only text left out of the
targets, raw text without sentences, each sentence read alone without context, and the
windows ``plan_reading`` names."""

import numpy as np
import pytest
from helpers.documents import document
from helpers.mrc_model import make_nlp
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import fix_random_seed

from spacy_nested_mrc.annotation import unannotated_key
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import build_rows, plan_reading, sentence_starts
from spacy_nested_mrc.windows import owned_by


@pytest.mark.parametrize("packed", [False, True])
def test_rows_label_whole_sentences_and_skip_context_only_tokens(tiny_bert, packed):
    nlp = make_nlp(tiny_bert, questions={"packed": packed},
                   windows={"context_wordpieces": 4, "window_wordpieces": 40,
                            "min_context_wordpieces": 8})
    model = nlp.get_pipe("nested_mrc_ner").model
    sentence = ["the", "il-2", "gene", "binding", "site", "in", "human", "cells", "."]
    doc, starts = document(nlp, [sentence] * 6)
    layout = layout_of(model)
    unannotated = np.zeros(len(doc), dtype=bool)
    unannotated[9:18] = True  # the second sentence is context only
    gold = [np.array([[1, 3, 0]])]
    rows = build_rows(model, layout, [doc], gold, [unannotated])
    assert sentence_starts(doc).tolist() == starts.tolist()
    covered = np.zeros(len(doc), dtype=int)
    for r in range(rows.n_rows):
        tokens = rows.offset[r] + np.flatnonzero(rows.token_mask[r])
        # a row learns and predicts only its core, whole sentences, never context-only text
        assert np.all((tokens >= rows.core_start[r]) & (tokens < rows.core_end[r]))
        assert not unannotated[tokens].any()
        if rows.label[r] == 0:
            covered[tokens] += 1
        assert rows.core_start[r] in starts and (rows.core_end[r] in starts
                                                 or rows.core_end[r] == len(doc))
    # every annotated token is a target exactly once
    assert covered.tolist() == (~unannotated).astype(int).tolist()
    # the windows read beyond their cores
    assert any(rows.offset[r] < rows.core_start[r] for r in range(rows.n_rows))


def test_context_model_trains_on_documents_and_predicts_inside_sentences(tiny_bert):
    nlp = make_nlp(tiny_bert, windows={"context_wordpieces": 4, "window_wordpieces": 40})
    pipe = nlp.get_pipe("nested_mrc_ner")
    sentence = ["the", "il-2", "gene", "binding", "site", "in", "human", "cells", "."]
    doc, starts = document(nlp, [sentence] * 5)
    reference = doc.copy()
    reference.spans["nested"] = [Span(reference, 1, 3, "DNA"), Span(reference, 10, 12, "DNA")]
    reference.spans[unannotated_key("nested")] = [reference[18:27]]
    optimizer = nlp.initialize(lambda: [Example(doc.copy(), reference)])
    fix_random_seed(0)
    losses = {}
    for _ in range(2):
        nlp.update([Example(doc.copy(), reference)], sgd=optimizer, losses=losses)
    assert np.isfinite(losses["nested_mrc_ner"])
    # untrained heads (no boundary prior) propose spans everywhere; none crosses a sentence
    pipe.cfg["threshold"] = 0.0
    predicted = nlp(doc.copy())
    spans = list(predicted.spans["nested"])
    assert spans
    bounds = set(starts.tolist()) | {len(doc)}
    for span in spans:
        assert not any(span.start < b < span.end for b in bounds)


def test_raw_text_without_sentences_keeps_spans_across_window_edges(tiny_bert):
    nlp = make_nlp(tiny_bert, windows={"context_wordpieces": 4, "window_wordpieces": 24})
    pipe = nlp.get_pipe("nested_mrc_ner")
    pipe.cfg["threshold"] = 0.0
    words = ["il-2", "gene", "binding", "site", "in", "human", "cells"] * 8
    doc = Doc(nlp.vocab, words=words)
    assert sentence_starts(doc) is None
    model = pipe.model
    rows = build_rows(model, layout_of(model), [doc], None)
    assert len(set(rows.core_start.tolist())) > 2  # several windows
    spans = nlp(doc).spans["nested"]
    keys = [(s.start, s.end, s.label_) for s in spans]
    assert len(keys) == len(set(keys))  # each span reported once, from the window owning it
    owner = owned_by(np.array([s.start for s in spans]), np.array([s.end for s in spans]),
                     0, len(doc))
    assert owner.all()


def test_context_zero_reads_each_sentence_alone(tiny_bert):
    """Without context, a doc with sentence boundaries is read sentence by sentence, as a
    model trained on sentences saw its data: the same spans as each sentence passed alone."""
    nlp = make_nlp(tiny_bert, windows={"window_wordpieces": 64})
    pipe = nlp.get_pipe("nested_mrc_ner")
    pipe.cfg["threshold"] = 0.0
    sentences = [["the", "il-2", "gene", "in", "human", "cells", "."],
                 ["jurkat", "cells", "and", "c-fos", "mrna", "."]]
    doc, starts = document(nlp, sentences)
    model = pipe.model
    rows = build_rows(model, layout_of(model), [doc], None)
    assert set(rows.core_start.tolist()) == set(starts.tolist())
    assert all(rows.offset[r] >= rows.core_start[r] for r in range(rows.n_rows))
    predicted = nlp(doc)
    together = {(s.start, s.end, s.label_) for s in predicted.spans["nested"]}
    alone = set()
    for sentence, start in zip(sentences, starts):
        one = nlp(Doc(nlp.vocab, words=sentence))
        for span in one.spans["nested"]:
            alone.add((span.start + int(start), span.end + int(start), span.label_))
    assert together == alone and together


@pytest.mark.parametrize("context", [0, 4])
def test_plan_reading_names_the_windows_the_rows_read(tiny_bert, context):
    """``plan_reading`` (what bench/context_speed.py times the bare encoder over) gives the
    windows ``build_rows`` reads: each sentence alone without context, whole sentences with
    text around them with it."""
    nlp = make_nlp(tiny_bert, windows={"context_wordpieces": context, "window_wordpieces": 40})
    model = nlp.get_pipe("nested_mrc_ner").model
    sentence = ["the", "il-2", "gene", "binding", "site", "in", "human", "cells", "."]
    doc, starts = document(nlp, [sentence] * 5)
    layout = layout_of(model)
    _, (windows,) = plan_reading(model, layout, [doc])
    rows = build_rows(model, layout, [doc], None)
    per_window = len(model.attrs["labels"])
    read = [(int(rows.offset[r]), int(rows.core_start[r]), int(rows.core_end[r]))
            for r in range(0, rows.n_rows, per_window)]
    assert read == [(w.start, w.core_start, w.core_end) for w in windows]
    if context:
        assert any(w.start < w.core_start or w.end > w.core_end for w in windows)
    else:
        assert [(w.core_start, w.core_end) for w in windows] == [
            (int(a), int(b)) for a, b in zip(starts, [*starts[1:], len(doc)])]
