"""Tests of the ``nested_mrc_ner`` pipe: registration, training to a perfect fit on toy nested
examples, serialization, edge-case docs, settings and errors, and gold-span problems."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import PER_LABEL_MRC, build, mrc_blocks
from helpers.pipes import (
    KEY,
    LABELS,
    PIPE,
    TRAIN,
    blank_nlp,
    initialized_nlp,
    make_examples,
    span_keys,
    torch_grads,
)
from spacy.lang.en import English
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry
from thinc.api import Config, Model

from spacy_nested_mrc.component import NestedMRCNER
from spacy_nested_mrc.types import SpanOutput, contract_of

MAX_STEPS = 400


@pytest.fixture(scope="module")
def trained(tiny_bert):
    """A pipe trained until it predicts its training examples perfectly."""
    fix_random_seed(0)
    # every pair as a match candidate: the match head learns fastest this way
    nlp = blank_nlp(tiny_bert, model={"heads": {"match_candidates": "all"}})
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.initialize(lambda: examples)
    assert nlp.get_pipe(PIPE).labels == LABELS
    for step in range(MAX_STEPS):
        losses = nlp.update(examples, sgd=optimizer, drop=0.0)
        if step % 5 == 4 and nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0:
            break
    return nlp, examples, losses[PIPE]


# registration


FRESH_FACTORY = """
import sys, spacy
assert "spacy_nested_mrc" not in sys.modules
nlp = spacy.blank("en")
pipe = nlp.add_pipe("nested_mrc_ner")
print(type(pipe).__name__, pipe.key, pipe.cfg["threshold"])
"""

FRESH_ARCHITECTURE = f"""
import sys
from spacy.util import registry
from thinc.api import Config
assert "spacy_nested_mrc" not in sys.modules
cfg = Config().from_str({Config({"model": mrc_blocks(
    encoder={"name": "not/downloaded", "max_rows_per_pass": 8})}).to_str()!r})
model = registry.resolve(cfg)["model"]
print(model.name, model.attrs["docs_per_pass"])
"""


@pytest.mark.slow
def test_registered_through_entry_points_without_import():
    """In a fresh interpreter that never imports spacy_nested_mrc, spaCy finds the factory
    and the architecture (alone, from a config string) through the entry points."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for code in (FRESH_FACTORY, FRESH_ARCHITECTURE)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        outputs.append(out.split())
    assert outputs == [["NestedMRCNER", "nested", "0.5"], ["mrc_query", "8"]]


def test_default_model_is_the_packed_mrc_with_index_questions(tiny_bert):
    """``nlp.add_pipe("nested_mrc_ner")`` builds the most accurate measured model: every
    label's question (its index) packed into one sequence per window, which trains and
    predicts."""
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": {"encoder": {"name": tiny_bert}}})
    model_cfg = nlp.config["components"][PIPE]["model"]
    assert model_cfg["@architectures"] == "spacy-nested-mrc.MRCQuery.v2"
    assert (model_cfg["questions"]["packed"], model_cfg["questions"]["style"]) == (True, "index")
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.initialize(lambda: examples)
    model = nlp.get_pipe(PIPE).model
    assert model.attrs["settings"].questions.packed and model.attrs["questions"]["DNA"] == "1"
    # one sequence per window carries all labels: max_rows_per_pass windows a pass
    assert model.attrs["docs_per_pass"] == model_cfg["encoder"]["max_rows_per_pass"]
    losses = nlp.update(examples, sgd=optimizer)
    assert losses[PIPE] > 0
    assert all(KEY in doc.spans for doc in nlp.pipe([text for text, _ in TRAIN]))


def test_scorer_and_reader_resolve(tmp_path):
    cfg = Config().from_str(
        f"""
        [scorer]
        @scorers = "spacy-nested-mrc.nested_scorer.v1"

        [reader]
        @readers = "spacy-nested-mrc.JsonlCorpus.v1"
        path = "{tmp_path / "x.jsonl"}"
        spans_key = "{KEY}"
        limit = 3
        """
    )
    resolved = registry.resolve(cfg)
    assert callable(resolved["scorer"]) and callable(resolved["reader"])
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"tokens": ["IL-2", "gene"], "entities": [{"start": 0, "end": 2, "type": "DNA"}]}\n'
    )
    examples = list(resolved["reader"](spacy.blank("en")))
    assert [span_keys(eg.reference) for eg in examples] == [[(0, 2, "DNA")]]
    # a perfect prediction scores 1
    eg = examples[0]
    eg.predicted.spans[KEY] = [Span(eg.predicted, 0, 2, "DNA")]
    scores = resolved["scorer"]([eg], spans_key=KEY)
    assert scores[f"spans_{KEY}_f"] == 1.0


def test_factory_defaults():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE)
    assert isinstance(pipe, NestedMRCNER)
    assert pipe.key == KEY
    assert pipe.cfg["threshold"] == 0.5
    assert pipe.cfg["write_ents"] is False
    assert pipe.cfg["strict_spans"] is False
    assert pipe.labels == ()


def test_filled_config_can_be_copied_and_rebuilt():
    """The filled-in defaults are plain values: the config deep-copies and rebuilds."""
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE)
    copied = nlp.config.copy()
    presets = copied["components"][PIPE]["model"]["questions"]["presets"]
    assert list(presets) == ["genia", "ace2005", "conll03", "ontonotes"]
    rebuilt = English.from_config(nlp.config)
    assert rebuilt.pipe_names == [PIPE]
    again = English.from_config(Config().from_str(nlp.config.to_str()))
    assert again.get_pipe(PIPE).model.attrs["query_settings"]["presets"] == list(presets)


# training to a perfect fit


@pytest.mark.slow
def test_overfit_gives_perfect_scores(trained):
    nlp, examples, last_loss = trained
    scores = nlp.evaluate(examples)
    assert scores[f"spans_{KEY}_f"] == 1.0
    assert scores[f"spans_{KEY}_p"] == 1.0
    assert scores[f"spans_{KEY}_r"] == 1.0
    assert scores[f"spans_{KEY}_nested_r"] == 1.0
    assert scores[f"spans_{KEY}_non_nested_r"] == 1.0
    assert last_loss < 0.5


def test_predictions_match_gold_with_scores(trained):
    nlp, examples, _ = trained
    threshold = nlp.get_pipe(PIPE).cfg["threshold"]
    for (text, gold), doc in zip(TRAIN, nlp.pipe([t for t, _ in TRAIN])):
        assert doc.text == text
        assert sorted(span_keys(doc)) == sorted(gold)
        group = doc.spans[KEY]
        scores = group.attrs["scores"]
        assert isinstance(scores, np.ndarray)
        assert scores.shape == (len(group),)
        assert scores.dtype == np.float32
        assert ((scores >= threshold) & (scores <= 1.0)).all()


def test_doc_ents_and_other_span_keys_untouched(trained):
    nlp, _, _ = trained
    doc = nlp.make_doc("IL-2 gene expression")
    doc.ents = [Span(doc, 2, 3, "THING")]
    doc.spans["other"] = [Span(doc, 0, 3, "SENT"), Span(doc, 1, 2, "X")]
    doc = nlp(doc)
    assert [(e.start, e.end, e.label_) for e in doc.ents] == [(2, 3, "THING")]
    assert span_keys(doc, "other") == [(0, 3, "SENT"), (1, 2, "X")]
    assert sorted(span_keys(doc)) == [(0, 1, "protein"), (0, 2, "DNA")]


def test_predict_does_not_change_docs(trained):
    nlp, _, _ = trained
    pipe = nlp.get_pipe(PIPE)
    doc = nlp.make_doc("IL-2 gene expression")
    output = pipe.predict([doc])
    assert KEY not in doc.spans
    assert isinstance(output, SpanOutput)
    assert output.spans[0].shape[1] == 3


def test_threshold_filters_spans(trained):
    nlp, _, _ = trained
    pipe = nlp.get_pipe(PIPE)
    texts = [t for t, _ in TRAIN]
    output = pipe.predict([nlp.make_doc(t) for t in texts])
    all_scores = np.concatenate(output.scores)
    assert len(all_scores)
    cut = float(np.median(all_scores))
    saved = pipe.cfg["threshold"]
    try:
        pipe.cfg["threshold"] = cut
        docs = list(nlp.pipe(texts))
    finally:
        pipe.cfg["threshold"] = saved
    kept = np.concatenate([doc.spans[KEY].attrs["scores"] for doc in docs])
    assert len(kept) == int((all_scores >= cut).sum())
    assert (kept >= cut).all()


def test_prediction_does_not_depend_on_batching(trained):
    nlp, _, _ = trained
    model = nlp.get_pipe(PIPE).model
    texts = [t for t, _ in TRAIN] + ["IL-2 gene", "human T cells"]
    saved = model.attrs["docs_per_pass"]
    results = []
    try:
        for per_pass in (1, 2, 100):
            model.attrs["docs_per_pass"] = per_pass
            results.append(list(nlp.pipe(texts, batch_size=len(texts))))
    finally:
        model.attrs["docs_per_pass"] = saved
    for docs in results[1:]:
        for a, b in zip(results[0], docs):
            assert span_keys(a) == span_keys(b)
            np.testing.assert_allclose(
                a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"], atol=1e-4
            )


def test_pipe_reads_ahead_by_tokens_and_keeps_input_order(trained, monkeypatch):
    """Inside ``nlp.pipe`` the model predicts over batches of at least ``batch_size`` docs
    holding at least ``read_ahead_tokens`` tokens, and writes what batches of
    ``batch_size`` write; the docs come out in input order."""
    nlp, _, _ = trained
    pipe = nlp.get_pipe(PIPE)
    texts = [t for t, _ in TRAIN] * 3 + ["IL-2 gene", "human T cells", "Jurkat cells"]
    lengths = [len(nlp.make_doc(t)) for t in texts]
    seen = []
    predict = pipe.predict

    def counting(docs):
        docs = list(docs)
        seen.append(len(docs))
        return predict(docs)

    monkeypatch.setattr(pipe, "predict", counting)
    saved = pipe.cfg["read_ahead_tokens"]
    try:
        pipe.cfg["read_ahead_tokens"] = 0
        alone = list(nlp.pipe(texts, batch_size=2))
        assert seen == [2] * (len(texts) // 2) + [1] * (len(texts) % 2)
        budget = sum(lengths[:4]) + 1  # more than four docs' tokens
        pipe.cfg["read_ahead_tokens"] = budget
        seen.clear()
        ahead = list(nlp.pipe(texts, batch_size=2))
    finally:
        pipe.cfg["read_ahead_tokens"] = saved
    expected, count, tokens = [], 0, 0
    for n in lengths:
        count, tokens = count + 1, tokens + n
        if count >= 2 and tokens >= budget:
            expected.append(count)
            count = tokens = 0
    expected += [count] if count else []
    assert seen == expected and seen[0] > 4 and sum(seen) == len(texts)
    assert [d.text for d in ahead] == texts
    for a, b in zip(alone, ahead):
        assert span_keys(a) == span_keys(b)
        np.testing.assert_allclose(a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"],
                                   atol=1e-4)


# serialization


def assert_same_predictions(nlp_a, nlp_b, texts):
    for a, b in zip(nlp_a.pipe(texts), nlp_b.pipe(texts)):
        assert span_keys(a) == span_keys(b)
        np.testing.assert_allclose(
            a.spans[KEY].attrs["scores"], b.spans[KEY].attrs["scores"], rtol=1e-5, atol=1e-6
        )


TEXTS = [t for t, _ in TRAIN] + ["IL-2 gene in human T cells", "Jurkat cells"]


def test_to_disk_and_load(trained, tmp_path):
    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    pipe = loaded.get_pipe(PIPE)
    assert pipe.labels == LABELS
    assert pipe.model.attrs["labels"] == list(LABELS)
    assert pipe.model.attrs["questions"] == nlp.get_pipe(PIPE).model.attrs["questions"]
    assert pipe.model.attrs["docs_per_pass"] == nlp.get_pipe(PIPE).model.attrs["docs_per_pass"]
    assert_same_predictions(nlp, loaded, TEXTS)
    assert loaded.evaluate(trained[1])[f"spans_{KEY}_f"] == 1.0


def test_load_needs_no_encoder_files(trained, tmp_path):
    """The weights and tokenizer travel with the pipeline: the encoder folder it was
    trained from is not needed."""
    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipeline")
    override = {"components": {PIPE: {"model": {"encoder": {"name": str(tmp_path / "gone")}}}}}
    loaded = spacy.load(tmp_path / "pipeline", config=override)
    assert_same_predictions(nlp, loaded, TEXTS)


def test_pipeline_saved_before_match_widths_existed_loads_with_the_papers_head(
    tiny_bert, tmp_path
):
    """A pipeline saved without width vectors and without ``match_widths`` in its config
    (saved before the setting existed) loads with the default's vectors at zero, so its
    predictions are unchanged."""
    nlp = initialized_nlp(tiny_bert,
                          model={"heads": {"match_widths": 0, "boundary_prior": 0.0}})
    nlp.to_disk(tmp_path / "pipeline")
    config_file = tmp_path / "pipeline" / "config.cfg"
    lines = config_file.read_text(encoding="utf8").splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith("match_widths")]
    assert len(kept) == len(lines) - 1
    config_file.write_text("".join(kept), encoding="utf8")
    loaded = spacy.load(tmp_path / "pipeline")
    heads = loaded.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"]
    assert heads.match_width.num_embeddings == 16
    assert not heads.match_width.weight.any()
    assert any(len(doc.spans[KEY]) for doc in nlp.pipe(TEXTS))
    assert_same_predictions(nlp, loaded, TEXTS)


def test_factory_default_has_width_vectors(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    heads = nlp.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"]
    assert heads.match_width is not None and heads.match_width.num_embeddings == 16


def test_to_bytes_and_from_bytes(trained):
    nlp, _, _ = trained
    data = nlp.to_bytes()
    fresh = English.from_config(nlp.config)
    fresh.from_bytes(data)
    assert fresh.get_pipe(PIPE).labels == LABELS
    assert_same_predictions(nlp, fresh, TEXTS)
    # the pipe alone
    pipe_bytes = nlp.get_pipe(PIPE).to_bytes()
    fresh2 = English.from_config(nlp.config)
    fresh2.get_pipe(PIPE).from_bytes(pipe_bytes)
    assert_same_predictions(nlp, fresh2, TEXTS)


def test_spans_with_scores_survive_docbin(trained):
    from spacy.tokens import DocBin

    nlp, _, _ = trained
    docs = list(nlp.pipe(TEXTS))
    restored = list(DocBin(docs=docs, store_user_data=True).get_docs(nlp.vocab))
    for a, b in zip(docs, restored):
        assert span_keys(a) == span_keys(b)
        np.testing.assert_allclose(
            np.asarray(a.spans[KEY].attrs["scores"]), np.asarray(b.spans[KEY].attrs["scores"])
        )


# edge-case docs


@pytest.mark.parametrize(
    "texts",
    [
        [""],
        ["IL-2"],
        ["   "],
        ["\n"],
        ["binding of the kinase"],
        ["", "IL-2 gene", "  ", "x", "IL-2  gene \n expression"],
    ],
)
def test_edge_case_docs(trained, texts):
    nlp, _, _ = trained
    for doc in nlp.pipe(texts):
        group = doc.spans[KEY]
        assert len(group.attrs["scores"]) == len(group)
        for span in group:
            assert 0 <= span.start < span.end <= len(doc)
            assert span.label_ in LABELS
        if not doc.text.strip() or doc.text == "binding of the kinase":
            assert len(group) == 0


def test_docs_without_wordpieces_only(trained):
    nlp, _, _ = trained
    doc = Doc(nlp.vocab, words=[" ", "\n", "\t"], spaces=[False, False, False])
    assert len(nlp(doc).spans[KEY]) == 0


# write_ents


def test_write_ents_projection_on_hand_made_output(tiny_bert):
    nlp = blank_nlp(tiny_bert, write_ents=True)
    pipe = nlp.get_pipe(PIPE)
    for label in LABELS:
        pipe.add_label(label)
    doc = nlp.make_doc("IL-2 gene expression in human T cells")
    doc.ents = [Span(doc, 3, 4, "OLD")]
    spans = np.asarray(
        [
            [0, 1, 3],  # IL-2 protein          0.8
            [0, 2, 0],  # IL-2 gene DNA         0.8: as good, longer -> wins
            [4, 7, 2],  # human T cells         0.6
            [5, 7, 2],  # T cells               0.7: higher score -> wins
            [2, 3, 0],  # expression            0.4: below the threshold
        ]
    )
    scores = np.asarray([0.8, 0.8, 0.6, 0.7, 0.4], dtype=np.float32)
    pipe.set_annotations([doc], SpanOutput([spans], [scores]))
    assert span_keys(doc) == [
        (0, 1, "protein"),
        (0, 2, "DNA"),
        (4, 7, "cell_type"),
        (5, 7, "cell_type"),
    ]
    assert [(e.start, e.end, e.label_) for e in doc.ents] == [(0, 2, "DNA"), (5, 7, "cell_type")]
    np.testing.assert_allclose(doc.spans[KEY].attrs["scores"], [0.8, 0.8, 0.6, 0.7])


def test_label_thresholds_cut_each_label_after_conflicts(tiny_bert):
    """A label's own threshold replaces ``threshold`` for its spans; conflicts are settled
    among the spans above the lowest threshold first (one label per span: the higher score
    wins), then each span is cut by its label's threshold."""
    nlp = blank_nlp(tiny_bert, threshold=0.5,
                    label_thresholds={"protein": 0.85, "cell_type": 0.3})
    pipe = nlp.get_pipe(PIPE)
    for label in LABELS:
        pipe.add_label(label)
    doc = nlp.make_doc("IL-2 gene expression in human T cells")
    spans = np.asarray(
        [
            [0, 1, 3],  # IL-2 protein          0.8: below protein's 0.85
            [0, 2, 0],  # IL-2 gene DNA         0.6: above the threshold (DNA has none)
            [2, 3, 0],  # expression DNA        0.45: below the threshold
            [4, 7, 2],  # human T cells         0.35: above cell_type's 0.3
            [5, 7, 3],  # T cells protein       0.9
            [5, 7, 2],  # T cells cell_type     0.4: loses the span to protein's 0.9
        ]
    )
    scores = np.asarray([0.8, 0.6, 0.45, 0.35, 0.9, 0.4], dtype=np.float32)
    pipe.set_annotations([doc], SpanOutput([spans], [scores]))
    assert sorted(span_keys(doc)) == [(0, 2, "DNA"), (4, 7, "cell_type"), (5, 7, "protein")]
    assert pipe.label_cuts().tolist() == [0.5, 0.5, 0.3, 0.85]


def test_label_thresholds_naming_an_unknown_label_warn_at_initialize(tiny_bert):
    with pytest.warns(UserWarning, match="NMW161.*'RNA'"):
        initialized_nlp(tiny_bert, label_thresholds={"RNA": 0.7, "DNA": 0.4})


def test_write_ents_with_no_spans_clears_ents(tiny_bert):
    nlp = blank_nlp(tiny_bert, write_ents=True)
    pipe = nlp.get_pipe(PIPE)
    pipe.add_label("DNA")
    doc = nlp.make_doc("IL-2 gene")
    doc.ents = [Span(doc, 0, 1, "OLD")]
    empty = SpanOutput([np.zeros((0, 3), dtype=np.int64)], [np.zeros(0, dtype=np.float32)])
    pipe.set_annotations([doc], empty)
    assert len(doc.spans[KEY]) == 0
    assert doc.ents == ()


def test_write_ents_on_trained_pipe(trained):
    nlp, _, _ = trained
    pipe = nlp.get_pipe(PIPE)
    doc = nlp.make_doc("IL-2 gene expression")
    doc.ents = [Span(doc, 2, 3, "OLD")]
    pipe.cfg["write_ents"] = True
    try:
        doc = nlp(doc)
    finally:
        pipe.cfg["write_ents"] = False
    scores = dict(zip(span_keys(doc), doc.spans[KEY].attrs["scores"]))
    best = max(scores, key=lambda k: (scores[k], k[1] - k[0]))
    ents = [(e.start, e.end, e.label_) for e in doc.ents]
    assert ents == [best]
    # the default does not touch doc.ents
    doc2 = nlp.make_doc("IL-2 gene expression")
    doc2.ents = [Span(doc2, 2, 3, "OLD")]
    assert [(e.start, e.end, e.label_) for e in nlp(doc2).ents] == [(2, 3, "OLD")]


def test_write_ents_from_config(tiny_bert):
    nlp = blank_nlp(tiny_bert, write_ents=True)
    assert nlp.get_pipe(PIPE).cfg["write_ents"] is True
    assert nlp.config["components"][PIPE]["write_ents"] is True


def test_custom_spans_key(tiny_bert):
    nlp = blank_nlp(tiny_bert, spans_key="genes")
    examples = make_examples(nlp, TRAIN[:2], key="genes")
    fix_random_seed(0)
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe(PIPE)
    assert pipe.key == "genes"
    assert pipe.labels == ("DNA", "cell_type", "protein")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the gold spans are found under the custom key
        nlp.update(examples, sgd=nlp.create_optimizer())
    doc = nlp("IL-2 gene expression")
    assert "genes" in doc.spans and KEY not in doc.spans
    scores = nlp.evaluate(examples)
    assert "spans_genes_f" in scores


# labels and questions


def test_unknown_label_without_question(tiny_bert):
    nlp = blank_nlp(tiny_bert, model={"questions": {"style": "natural"}})
    examples = make_examples(nlp, [("IL-2 gene", [(0, 2, "GADGET"), (0, 1, "protein")])])
    with pytest.raises(ValueError, match="NME002") as err:
        nlp.initialize(lambda: examples)
    assert "GADGET" in str(err.value)


def test_user_question_for_unknown_label(tiny_bert):
    nlp = blank_nlp(tiny_bert, model={"questions": {"style": "natural",
                                                    "queries": {"GADGET": "find gadgets"}}})
    examples = make_examples(nlp, [("IL-2 gene", [(0, 2, "GADGET"), (0, 1, "protein")])])
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe(PIPE)
    assert pipe.labels == ("GADGET", "protein")
    assert pipe.model.attrs["questions"]["GADGET"] == "find gadgets"
    assert pipe.model.attrs["questions"]["protein"]
    doc = nlp("IL-2 gene")
    assert len(doc.spans[KEY].attrs["scores"]) == len(doc.spans[KEY])


@pytest.mark.parametrize("style", ["pseudo", "index"])
def test_any_label_with_pseudo_or_index_questions(tiny_bert, style):
    nlp = blank_nlp(tiny_bert, model={"questions": {"style": style}})
    examples = make_examples(nlp, [("IL-2 gene", [(0, 2, "GADGET"), (0, 1, "WIDGET_X")])])
    nlp.initialize(lambda: examples)
    questions = nlp.get_pipe(PIPE).model.attrs["questions"]
    expected = {
        "pseudo": {"GADGET": "GADGET", "WIDGET_X": "WIDGET X"},
        "index": {"GADGET": "1", "WIDGET_X": "2"},
    }[style]
    assert questions == expected
    nlp("IL-2 gene")


def test_labels_from_initialize_argument(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    examples = make_examples(nlp, TRAIN[:1])
    # as `spacy init labels` + [initialize.components] would give them
    nlp.config["initialize"]["components"][PIPE] = {"labels": ["protein", "DNA", "RNA"]}
    nlp.initialize(lambda: examples)
    # the given order is kept
    assert nlp.get_pipe(PIPE).labels == ("protein", "DNA", "RNA")
    assert nlp.get_pipe(PIPE).label_data == ["protein", "DNA", "RNA"]


def test_no_labels(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    examples = make_examples(nlp, [("IL-2 gene", [])])
    with pytest.raises(ValueError, match="NME005"):
        nlp.initialize(lambda: examples)


# invalid settings


@pytest.mark.parametrize(
    "config,code,what",
    [
        ({"threshold": 1.5}, "NME003", "threshold"),
        ({"threshold": -0.5}, "NME003", "threshold"),
        ({"label_thresholds": {"DNA": 1.5}}, "NME003", "label_thresholds"),
        ({"label_thresholds": {"": 0.5}}, "NME003", "label_thresholds"),
        ({"spans_key": ""}, "NME003", "spans_key"),
        ({"read_ahead_tokens": -1}, "NME003", "read_ahead_tokens"),
        ({"model": {"heads": {"match_candidates": "bogus"}}}, "NME006", "match_candidates"),
        ({"model": {"loss": {"kind": "bogus"}}}, "NME006", "kind"),
        ({"model": {"questions": {"style": "bogus"}}}, "NME006", "style"),
        ({"model": {"encoder": {"max_rows_per_pass": 0}}}, "NME003", "max_rows_per_pass"),
    ],
)
def test_invalid_settings_fail_at_construction(config, code, what):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=code) as err:
        nlp.add_pipe(PIPE, config=config)
    assert what in str(err.value)
    assert PIPE not in nlp.pipe_names


def test_spans_key_must_be_a_string():
    nlp = spacy.blank("en")
    # spaCy's own config validation catches it in the factory
    with pytest.raises(Exception, match="spans_key"):
        nlp.add_pipe(PIPE, config={"spans_key": 5})
    # and the class checks it too
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x"))
    with pytest.raises(ValueError, match="NME003"):
        NestedMRCNER(nlp.vocab, model, spans_key=5)
    with pytest.raises(ValueError, match="NME003"):
        NestedMRCNER(nlp.vocab, model, threshold="high")


# use before / after initialization


def test_predict_before_initialize(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    pipe = nlp.get_pipe(PIPE)
    pipe.add_label("DNA")
    with pytest.raises(ValueError, match="NME001"):
        nlp("IL-2 gene")
    with pytest.raises(ValueError, match="NME001"):
        pipe.predict([nlp.make_doc("IL-2 gene")])


def test_add_label_after_initialize(tiny_bert):
    from helpers.multi_ner import make_nlp as make_multi_ner_nlp

    nlp = initialized_nlp(tiny_bert, labels=("DNA",))
    pipe = nlp.get_pipe(PIPE)
    # labels added before, and found in the examples
    assert pipe.labels == ("DNA", "protein")
    assert pipe.add_label("DNA") == 0
    # the MRC model's heads are shared by every label: it takes a label by its question
    assert pipe.add_label("RNA") == 1
    assert pipe.labels == ("DNA", "protein", "RNA")
    assert pipe.model.attrs["labels"] == ["DNA", "protein", "RNA"]
    # a model with parts per label does not (tests/test_label_sets.py)
    with pytest.raises(ValueError, match="NME004") as err:
        multi_ner = make_multi_ner_nlp(tiny_bert, "multi_ner", labels=("DNA",))
        multi_ner.get_pipe(PIPE).add_label("RNA")
    assert "RNA" in str(err.value)


def test_add_label_before_initialize():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE)
    assert pipe.add_label("DNA") == 1
    assert pipe.add_label("DNA") == 0
    assert pipe.labels == ("DNA",)
    with pytest.raises(ValueError, match="NME003"):
        pipe.add_label("")


# training in passes


def test_update_splits_batch_into_passes(tiny_bert, monkeypatch):
    nlp = initialized_nlp(tiny_bert, model={"encoder": {"max_rows_per_pass": 9}})
    pipe = nlp.get_pipe(PIPE)
    # 4 labels: 9 rows a pass leave room for 2 docs
    assert pipe.model.attrs["docs_per_pass"] == max(1, 9 // len(LABELS)) == 2
    examples = make_examples(nlp, TRAIN)
    passes = []
    begin_update = Model.begin_update

    def counting(model, batch):
        output, backprop = begin_update(model, batch)
        if model is pipe.model:
            loss, _ = contract_of(model).get_loss(model, output.scored)
            passes.append((len(batch.docs), len(batch.gold), loss))
        return output, backprop

    # thinc models have slots: count the calls on the class, for this model only
    monkeypatch.setattr(Model, "begin_update", counting)
    losses = nlp.update(examples, sgd=nlp.create_optimizer(), drop=0.0)
    assert [(n_docs, n_gold) for n_docs, n_gold, _ in passes] == [(2, 2), (2, 2), (1, 1)]
    # the losses of the passes add up, weighted by their share of the batch
    expected = sum(n * loss for n, _, loss in passes) / len(examples)
    assert losses[PIPE] == pytest.approx(expected, rel=1e-5)


def test_update_one_doc_per_pass_when_labels_exceed_rows(tiny_bert, monkeypatch):
    nlp = initialized_nlp(tiny_bert, model={"encoder": {"max_rows_per_pass": 2}})
    pipe = nlp.get_pipe(PIPE)
    assert pipe.model.attrs["docs_per_pass"] == 1
    sizes = []
    begin_update = Model.begin_update

    def counting(model, batch):
        if model is pipe.model:
            sizes.append(len(batch.docs))
        return begin_update(model, batch)

    monkeypatch.setattr(Model, "begin_update", counting)
    nlp.update(make_examples(nlp, TRAIN[:3]), sgd=nlp.create_optimizer())
    assert sizes == [1, 1, 1]


def test_passes_add_up_to_the_gradient_of_the_batch(tiny_bert):
    """Two copies of one example: one pass over both, or one pass each weighted by half,
    must give the same gradients with bce, a mean over tokens (dice is a ratio of sums over
    the tokens of one pass, so with dice each pass is its own mini-batch)."""
    grads = []
    for max_rows in (64, 1):
        nlp = initialized_nlp(tiny_bert, model={"encoder": {"max_rows_per_pass": max_rows},
                                                "loss": {"kind": "bce"}})
        examples = make_examples(nlp, TRAIN[:1] * 2)
        losses = nlp.update(examples, sgd=None, drop=0.0)
        grads.append((losses[PIPE], torch_grads(nlp.get_pipe(PIPE))))
    (loss_one, grads_one), (loss_split, grads_split) = grads
    assert loss_one == pytest.approx(loss_split, rel=1e-5)
    assert len(grads_one) == len(grads_split) > 0
    for a, b in zip(grads_one, grads_split):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_update_of_only_empty_docs(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    losses = nlp.update(make_examples(nlp, [("", []), ("", [])]), sgd=nlp.create_optimizer())
    assert losses[PIPE] == 0.0


def test_update_learns(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.create_optimizer()
    first = nlp.update(examples, sgd=optimizer, drop=0.0)[PIPE]
    for _ in range(10):
        last = nlp.update(examples, sgd=optimizer, drop=0.0)[PIPE]
    assert last < first


# gold-span problems


def test_unknown_gold_label_warns(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    examples = make_examples(nlp, [("IL-2 gene", [(0, 2, "GADGET"), (0, 1, "protein")])])
    with pytest.warns(UserWarning, match="NMW002") as record:
        nlp.update(examples, sgd=nlp.create_optimizer())
    message = str(record[0].message)
    assert "1 unknown label" in message
    assert PIPE in message


def test_gold_problems_are_counted_by_reason(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    # a gold span that no predicted token boundary matches
    predicted = Doc(nlp.vocab, words=["IL-2", "gene"])
    reference = Doc(nlp.vocab, words=["IL", "-2", "gene"], spaces=[False, True, False])
    reference.spans[KEY] = [Span(reference, 1, 2, "protein"), Span(reference, 0, 3, "DNA")]
    misaligned = Example(predicted, reference)
    # a reference without the spans key
    no_key = Example(nlp.make_doc("IL-2 gene"), nlp.make_doc("IL-2 gene"))
    with pytest.warns(UserWarning, match="NMW002") as record:
        nlp.update([misaligned, no_key], sgd=nlp.create_optimizer())
    message = str(record[0].message)
    assert "2 gold spans" in message
    assert "1 not aligned to tokens" in message
    assert "1 docs without the spans key" in message


def test_clean_gold_does_not_warn(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlp.update(make_examples(nlp, TRAIN), sgd=nlp.create_optimizer())


def test_strict_spans_raise(tiny_bert):
    nlp = initialized_nlp(tiny_bert, strict_spans=True)
    examples = make_examples(nlp, [("IL-2 gene", [(0, 2, "GADGET")])])
    with pytest.raises(ValueError, match="NME103") as err:
        nlp.update(examples, sgd=nlp.create_optimizer())
    assert "unknown label" in str(err.value)


def test_gold_span_on_token_without_wordpieces_warns(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    predicted = Doc(nlp.vocab, words=["IL-2", "\u0000", "gene"])
    reference = predicted.copy()
    reference.spans[KEY] = [Span(reference, 1, 3, "DNA"), Span(reference, 0, 1, "protein")]
    with pytest.warns(UserWarning, match="NMW010") as record:
        nlp.update([Example(predicted, reference)], sgd=nlp.create_optimizer())
    assert str(record[0].message).startswith("[NMW010] 1 gold span ")


def test_written_spans_form_a_valid_nested_annotation(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    pipe = nlp.get_pipe(PIPE)
    for label in LABELS:
        pipe.add_label(label)
    spans = np.asarray(
        [
            [0, 2, 0],  # IL-2 gene DNA            0.9
            [0, 2, 3],  # IL-2 gene protein        0.6: same boundaries, lower -> dropped
            [1, 3, 0],  # gene expression DNA      0.8: crosses IL-2 gene -> dropped
            [0, 1, 3],  # IL-2 protein             0.7: nested -> kept
            [4, 7, 2],  # human T cells            0.6: apart -> kept
        ]
    )
    scores = np.asarray([0.9, 0.6, 0.8, 0.7, 0.6], dtype=np.float32)
    doc = nlp.make_doc("IL-2 gene expression in human T cells")
    pipe.set_annotations([doc], SpanOutput([spans], [scores]))
    assert span_keys(doc) == [(0, 2, "DNA"), (0, 1, "protein"), (4, 7, "cell_type")]
    free = blank_nlp(tiny_bert, allow_crossing=True, one_label_per_span=False)
    free_pipe = free.get_pipe(PIPE)
    for label in LABELS:
        free_pipe.add_label(label)
    doc = free.make_doc("IL-2 gene expression in human T cells")
    free_pipe.set_annotations([doc], SpanOutput([spans], [scores]))
    assert len(doc.spans[KEY]) == 5


def test_initialize_warns_about_gold_spans_it_would_never_write(tiny_bert):
    nlp = blank_nlp(tiny_bert)
    crossing = [("IL-2 gene expression", [(0, 2, "DNA"), (1, 3, "DNA"), (0, 2, "protein")])]
    with pytest.warns(UserWarning) as caught:
        nlp.initialize(lambda: make_examples(nlp, crossing))
    codes = " ".join(str(w.message) for w in caught)
    # (1, 3) crosses (0, 2) under both of its labels
    assert "NMW004" in codes and "2 pair(s)" in codes and "NMW005" in codes


def test_span_length_limit_learned_at_initialize_saved_and_overridden(tiny_bert, tmp_path):
    """max_span_length = 0: the limit is the longest training entity (2 tokens) plus the
    margin; it is saved with the model, and a value given at load replaces it."""
    every_pair = {"decoder": {"span_length_margin": 1, "start_threshold": 0.0,
                              "end_threshold": 0.0}}
    nlp = initialized_nlp(tiny_bert, model=every_pair, threshold=0.0)
    model = nlp.get_pipe(PIPE).model
    heads = model.get_ref("heads").attrs["torch_module"]
    assert model.attrs["longest_entity"] == 2 and heads.max_span_length == 3
    long_text = "IL-2 gene expression in human T cells requires NF-kappa B binding"
    doc = nlp(long_text)
    lengths = [len(span) for span in doc.spans[KEY]]
    assert lengths and max(lengths) <= 3
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"].max_span_length == 3
    wide = spacy.load(tmp_path / "p",
                      config={f"components.{PIPE}.model.decoder.max_span_length": 6})
    assert wide.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"].max_span_length == 6
    doc = wide(long_text)
    assert max(len(span) for span in doc.spans[KEY]) > 3
