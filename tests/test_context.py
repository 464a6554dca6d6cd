"""Documents and context: the reader's documents with context-only sentences, GENIA's dev and
test inside their abstracts, windows that label whole sentences and read the text around them,
and the scorer and tuning leaving context-only text out."""

import json
import pickle

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry
from test_genia_xml import EXPECTED, read_lines, write_xml
from test_locate_label import shipped_pipeline
from test_mrc_model import make_nlp
from thinc.types import Ragged

from spacy_nested_mrc.annotation import (
    annotated_only,
    in_regions,
    unannotated_key,
    unannotated_regions,
    unannotated_tokens,
)
from spacy_nested_mrc.corpora.genia_xml import convert_genia_xml
from spacy_nested_mrc.corpora.jsonl import (
    ConversionReport,
    convert,
    create_jsonl_reader,
    read_jsonl,
)
from spacy_nested_mrc.encoder.build import own_window_alignment
from spacy_nested_mrc.evaluation.scoring import score_nested
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import build_rows, plan_reading, sentence_starts
from spacy_nested_mrc.spans import (
    enumerate_spans,
    owned_by,
    plan_context_windows,
    within_sentences,
)

# windows


def check_partition(windows, counts, room):
    cum = np.concatenate([[0], np.cumsum(counts)])
    assert windows[0].core_start == 0 and windows[-1].core_end == len(counts)
    for a, b in zip(windows[:-1], windows[1:]):
        assert a.core_end == b.core_start
    for w in windows:
        assert w.start <= w.core_start < w.core_end <= w.end
        assert cum[w.end] - cum[w.start] <= room


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("context", [0, 1, 3, 8])
def test_context_windows_partition_any_doc(seed, context):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    counts = rng.integers(0, 4, size=n)
    room = int(rng.integers(max(4, counts.max()), 30))
    sentences = np.flatnonzero(rng.random(n) < 0.15) if seed % 2 else None
    windows = plan_context_windows(counts, sentences, room, context)
    check_partition(windows, counts, room)
    bounds = set() if sentences is None else {0, *sentences.tolist(), n}
    for w in windows:
        if w.strict:  # whole sentences, and the context is at most what was asked
            assert w.core_start in bounds and w.core_end in bounds
        cum = np.concatenate([[0], np.cumsum(counts)])
        limit = min(context, room // 4)
        assert cum[w.core_start] - cum[w.start] <= limit
        assert cum[w.end] - cum[w.core_end] <= limit


def test_context_windows_hand_worked():
    counts = np.array([2, 1, 1, 3, 1, 1, 1, 2, 1, 1, 1, 1])
    # room 12, context 2: cores of at most 8 wordpieces, whole sentences [0,4) [4,8) [8,12)
    windows = plan_context_windows(counts, np.array([0, 4, 8]), 12, 2)
    assert [(w.start, w.end, w.core_start, w.core_end, w.strict) for w in windows] == [
        (0, 6, 0, 4, True),
        (4, 10, 4, 8, True),
        (7, 12, 8, 12, True),
    ]
    # sentences that fit together share a core
    assert [(w.core_start, w.core_end) for w in plan_context_windows(counts, [0, 4, 8], 40, 2)] \
        == [(0, 12)]
    # no sentences: cut between any tokens, not strict
    windows = plan_context_windows(counts, None, 12, 2)
    assert [(w.core_start, w.core_end, w.strict) for w in windows] == [(0, 5, False),
                                                                      (5, 12, False)]


def test_sentence_longer_than_the_core_is_cut_and_not_strict():
    counts = np.ones(30, dtype=np.int64)
    windows = plan_context_windows(counts, np.array([0, 3, 25]), 12, 2)
    check_partition(windows, counts, 12)
    assert windows[0].strict and (windows[0].core_start, windows[0].core_end) == (0, 3)
    middle = [w for w in windows if 3 <= w.core_start < 25]
    assert len(middle) > 1 and not any(w.strict for w in middle)


# the reader's documents


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf8")
    return path


RECORDS = [
    {"tokens": ["IL-2", "gene", "."], "entities": [{"start": 0, "end": 2, "type": "DNA"},
                                                   {"start": 0, "end": 1, "type": "protein"}],
     "doc": "A"},
    {"tokens": ["It", "binds", "NF-kappa", "B", "."],
     "entities": [{"start": 2, "end": 4, "type": "protein"}], "doc": "A", "annotated": False},
    {"tokens": ["c-fos", "mRNA", "rises", "."],
     "entities": [{"start": 0, "end": 2, "type": "RNA"}], "doc": "A"},
    {"tokens": ["Jurkat", "cells", "."], "entities": [{"start": 0, "end": 2, "type": "cell_line"}],
     "doc": "B"},
]


def test_reader_groups_sentences_into_documents(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", RECORDS)
    vocab = spacy.blank("en").vocab
    report = ConversionReport()
    with pytest.warns(UserWarning, match="NMW001"):
        docs = list(read_jsonl(path, vocab, group_by="doc", report=report))
    assert len(docs) == 2
    doc = docs[0]
    assert doc.text == "IL-2 gene . It binds NF-kappa B . c-fos mRNA rises ."
    assert [s.start for s in doc.sents] == [0, 3, 8]
    assert doc.user_data["doc_id"] == "A"
    found = {(s.text, s.label_) for s in doc.spans["nested"]}
    # the context-only sentence's entity is skipped and counted, not kept
    assert found == {("IL-2 gene", "DNA"), ("IL-2", "protein"), ("c-fos mRNA", "RNA")}
    assert report.skipped == {"context_only": 1}
    assert [s.text for s in doc.spans[unannotated_key("nested")]] == ["It binds NF-kappa B ."]
    assert unannotated_key("nested") not in docs[1].spans
    # without group_by: one doc per line, as before
    with pytest.warns(UserWarning, match="NMW001"):
        assert len(list(read_jsonl(path, vocab, report=ConversionReport()))) == 4


def test_reader_gives_the_predicted_doc_the_files_sentences(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", RECORDS)
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="NMW001"):
        examples = list(create_jsonl_reader(path, group_by="doc")(nlp))
    predicted = examples[0].predicted
    assert predicted.text == examples[0].reference.text
    assert [s.text for s in predicted.sents] == [s.text for s in examples[0].reference.sents]
    mask = unannotated_tokens(examples[0].reference, predicted, "nested")
    assert [t.text for t, m in zip(predicted, mask) if m] == ["It", "binds", "NF", "-", "kappa",
                                                              "B", "."]
    assert unannotated_tokens(examples[1].reference, examples[1].predicted, "nested") is None
    with pytest.warns(UserWarning, match="NMW001"):
        assert len(list(create_jsonl_reader(path, group_by="doc", limit=1)(nlp))) == 1


def test_annotated_must_be_a_boolean(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{**RECORDS[0], "annotated": "no"}])
    with pytest.raises(ValueError, match="NME102.*annotated"):
        list(read_jsonl(path, spacy.blank("en").vocab))


def test_convert_writes_documents_unless_asked_for_sentences(tmp_path):
    path = write_jsonl(tmp_path / "docs.jsonl", RECORDS)
    vocab = spacy.blank("en").vocab
    with pytest.warns(UserWarning, match="NMW001"):
        convert(path, tmp_path / "docs.spacy", show_progress=False)
        convert(path, tmp_path / "sents.spacy", show_progress=False, group_by=None)
    docs = list(DocBin().from_disk(tmp_path / "docs.spacy").get_docs(vocab))
    assert len(docs) == 2 and [s.start for s in docs[0].sents] == [0, 3, 8]
    assert [s.text for s in docs[0].spans[unannotated_key("nested")]] == ["It binds NF-kappa B ."]
    assert len(list(DocBin().from_disk(tmp_path / "sents.spacy").get_docs(vocab))) == 4


def test_convert_genia_writes_dev_inside_its_abstracts(tmp_path):
    # dev: sentences 0 and 2 (article 1: 0-2), train: 1 and 3, test: 4 (article 2: 3-4,
    # without a MEDLINE id, so each of its sentences is a document of its own)
    out = tmp_path / "out"
    report = convert_genia_xml(write_xml(tmp_path / "genia.xml"), out, n_train_dev=4,
                               dev_pool=3, dev_every=2, documents=True)
    dev_docs = read_lines(out / "dev.documents.jsonl")
    # the whole abstract in order: dev's sentences as they are, train's as context only
    assert dev_docs == [EXPECTED[0], {**EXPECTED[1], "entities": [], "annotated": False},
                       EXPECTED[2]]
    assert read_lines(out / "test.documents.jsonl") == [EXPECTED[4]]
    assert report.output_paths["dev.documents"] == str(out / "dev.documents.jsonl")
    # read as documents: one doc, the train sentence marked as context only
    docs = list(read_jsonl(out / "dev.documents.jsonl", spacy.blank("en").vocab, group_by="doc"))
    assert len(docs) == 1 and len(list(docs[0].sents)) == 3
    assert docs[0].spans[unannotated_key("nested")][0].text == " ".join(EXPECTED[1]["tokens"])
    # without --documents nothing else is written
    convert_genia_xml(write_xml(tmp_path / "genia.xml"), tmp_path / "plain", n_train_dev=4)
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [
        "dev.jsonl", "test.jsonl", "train.jsonl"]


# scoring and tuning


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


def test_regions_by_characters():
    regions = np.array([[5, 10], [20, 30]])
    assert in_regions(np.array([0, 5, 9, 10, 19, 20, 29, 30]), regions).tolist() == [
        False, True, True, False, False, True, True, False]
    assert annotated_only({(0, 3, "A"), (6, 8, "B")}, regions) == {(0, 3, "A")}
    doc = spacy.blank("en").make_doc("a b")
    assert unannotated_regions(doc, "nested").shape == (0, 2)


# MRC with context


def document(nlp, texts, unannotated=()):
    """A doc of sentences (lists of words) with its sentence starts."""
    words = [w for sentence in texts for w in sentence]
    doc = Doc(nlp.vocab, words=words)
    starts = np.cumsum([0] + [len(s) for s in texts[:-1]])
    for token in doc:
        token.is_sent_start = token.i in set(starts.tolist())
    return doc, starts


@pytest.mark.parametrize("packed", [False, True])
def test_rows_label_whole_sentences_and_skip_context_only_tokens(tiny_bert, packed):
    nlp = make_nlp(tiny_bert, context=4, max_length=40, packed=packed, min_context=8)
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
    nlp = make_nlp(tiny_bert, context=4, max_length=40)
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
    nlp = make_nlp(tiny_bert, context=4, max_length=24)
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


# Locate-and-Label with context: the shared transformer's windows and seeds


def test_context_windows_getter_reads_around_whole_sentences():
    getter = registry.span_getters.get("spacy-nested-mrc.context_windows.v1")(window=8, context=2)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    doc = nlp("a b . c d e . f g . h")
    windows = [(w.start, w.end) for w in getter([doc])[0]]
    # cores of whole sentences up to 4 tokens ([0,3) [3,7) [7,11)), 2 tokens around
    assert windows == [(0, 5), (1, 9), (5, 11)]
    # no boundaries: cores of 4 tokens, 2 around; picklable for spawned worker processes
    raw = spacy.blank("en")("a b c d e f g h i j")
    assert [(w.start, w.end) for w in getter([raw])[0]] == [(0, 6), (2, 10), (6, 10)]
    assert pickle.loads(pickle.dumps(getter))([raw]) == getter([raw])
    with pytest.raises(ValueError, match="NME003"):
        registry.span_getters.get("spacy-nested-mrc.context_windows.v1")(window=0, context=1)


def test_own_window_alignment_keeps_each_tokens_own_window():
    doc = spacy.blank("en")("a b c d e f")
    windows = [doc[0:4], doc[2:6]]
    # one wordpiece per token, windows padded to 5 wordpieces: window 0 holds tokens 0-3 at
    # 0-3, window 1 tokens 2-5 at 5-8
    data = np.array([0, 1, 2, 5, 3, 6, 7, 8], dtype="i")
    lengths = np.array([1, 1, 2, 2, 1, 1], dtype="i")
    own = own_window_alignment([windows], Ragged(data, lengths), 5)
    # the overlap [2, 4) is split at 3: token 2 from window 0, token 3 from window 1
    assert own.lengths.tolist() == [1, 1, 1, 1, 1, 1]
    assert own.dataXd.ravel().tolist() == [0, 1, 2, 6, 7, 8]


def test_seeds_stay_inside_sentences_and_out_of_context_only_text():
    nlp = spacy.blank("en")
    doc, _ = document(nlp, [["a", "b", "c"], ["d", "e"], ["f", "g", "h"]])
    raw = Doc(nlp.vocab, words=["x", "y", "z"])
    spans = enumerate_spans([len(doc), len(raw)], [1, 2, 3])
    skip = np.zeros(len(doc), dtype=bool)
    skip[3:5] = True  # "d e" is context only
    starts = [sentence_starts(doc), sentence_starts(raw)]  # raw: None, read as one text
    keep = within_sentences([len(doc), len(raw)], starts, *spans, [skip, None])
    kept = {(int(d), int(s), int(e)) for d, s, e, k in zip(*spans, keep) if k}
    assert kept == {(0, 0, 1), (0, 1, 2), (0, 2, 3), (0, 0, 2), (0, 1, 3), (0, 0, 3),
                    (0, 5, 6), (0, 6, 7), (0, 7, 8), (0, 5, 7), (0, 6, 8), (0, 5, 8),
                    (1, 0, 1), (1, 1, 2), (1, 2, 3), (1, 0, 2), (1, 1, 3), (1, 0, 3)}


def test_locate_label_with_context_trains_on_documents(tiny_bert, tmp_path):
    """The shipped Locate-and-Label CPU config with context windows and own-window token
    vectors: trains on a document with a context-only sentence, and predicts no span that
    crosses a sentence."""
    context_only = {**RECORDS[1], "entities": []}
    corpus = write_jsonl(tmp_path / "documents.jsonl", [RECORDS[0], context_only, RECORDS[2]])
    nlp = shipped_pipeline(
        "locate_label_cpu.cfg", tiny_bert, tmp_path,
        {"paths.train": str(corpus), "corpora.train.group_by": "doc",
         "components.nested_mrc_ner.model.hidden_width": 32,
         "components.transformer.model.token_vectors": "own_window",
         "components.transformer.model.get_spans": {
             "@span_getters": "spacy-nested-mrc.context_windows.v1", "window": 8,
             "context": 2}},
    )
    examples = list(create_jsonl_reader(corpus, group_by="doc")(nlp))
    assert unannotated_tokens(examples[0].reference, examples[0].predicted, "nested").any()
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples)
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert np.isfinite(losses["nested_mrc_ner"]) and losses["nested_mrc_ner"] > 0
    pipe = nlp.get_pipe("nested_mrc_ner")
    pipe.cfg["threshold"] = 0.0
    predicted = nlp(examples[0].predicted.copy())
    bounds = {s.start for s in predicted.sents}
    for span in predicted.spans["nested"]:
        assert not any(span.start < b < span.end for b in bounds)


def test_context_zero_reads_each_sentence_alone(tiny_bert):
    """Without context, a doc with sentence boundaries is read sentence by sentence, as a
    model trained on sentences saw its data: the same spans as each sentence passed alone."""
    nlp = make_nlp(tiny_bert, max_length=64)
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
    nlp = make_nlp(tiny_bert, context=context, max_length=40)
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
