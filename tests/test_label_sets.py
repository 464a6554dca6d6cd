"""Corpora that annotate their own label sets (#52): a record's "labels" (or its reader's),
the marks the reader leaves, the mixed reader's weights, what the models learn (nothing of a
label a text does not annotate) and how such text is scored."""

import json
from collections import Counter

import numpy as np
import pytest
import spacy
import torch
from helpers.locate_label import model_config as locate_label_config
from helpers.pipes import PIPE, model_config, torch_grads
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import fix_random_seed

from spacy_nested_mrc.annotation import label_mask, labeled_key
from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader
from spacy_nested_mrc.corpora.mixed import create_mixed_reader
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import build_rows
from spacy_nested_mrc.scoring.scorer import score_nested

KEY = "nested"
GENES = [
    {"tokens": ["the", "IL-2", "gene", "is", "on"], "entities": [
        {"start": 1, "end": 3, "type": "DNA"}]},
    {"tokens": ["IL-2", "binds", "its", "receptor"], "entities": [
        {"start": 0, "end": 1, "type": "DNA"}]},
]
PROTEINS = [
    {"tokens": ["Jurkat", "cells", "express", "NF-kappa", "B"], "entities": [
        {"start": 3, "end": 5, "type": "protein"}]},
    {"tokens": ["the", "kinase", "binds", "NF-kappa", "B"], "entities": [
        {"start": 1, "end": 2, "type": "protein"}]},
]


def write(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def read(nlp, path, **settings):
    return list(create_jsonl_reader(path, **settings)(nlp))


# reading


def test_record_labels_mark_the_text_and_skip_other_entities(tmp_path):
    nlp = spacy.blank("en")
    record = {"tokens": ["IL-2", "in", "T", "cells"], "labels": ["protein"],
              "entities": [{"start": 0, "end": 1, "type": "protein"},
                           {"start": 2, "end": 4, "type": "cell_type"}]}
    path = write(tmp_path / "a.jsonl", [record, GENES[0]])
    with pytest.warns(UserWarning, match="NMW001") as caught:
        first, second = read(nlp, path)
    assert "label_not_annotated: 1" in str(caught[0].message)
    reference = first.reference
    assert [(s.text, s.label_) for s in reference.spans[KEY]] == [("IL-2", "protein")]
    assert [(s.start, s.end, s.label_) for s in reference.spans[labeled_key(KEY)]] == [
        (0, 4, "protein")]
    # a record without "labels" annotates every label: no marks
    assert labeled_key(KEY) not in second.reference.spans


def test_reader_labels_apply_to_records_without_their_own(tmp_path):
    nlp = spacy.blank("en")
    own = dict(PROTEINS[0], labels=["protein", "cell_line"])
    path = write(tmp_path / "a.jsonl", [GENES[0], own])
    genes, proteins = read(nlp, path, labels=["DNA"])
    assert {s.label_ for s in genes.reference.spans[labeled_key(KEY)]} == {"DNA"}
    assert {s.label_ for s in proteins.reference.spans[labeled_key(KEY)]} == {
        "protein", "cell_line"}


def test_gzipped_jsonl_is_read(tmp_path):
    import gzip

    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf8") as file_:
        file_.write("".join(json.dumps(record) + "\n" for record in GENES))
    assert [eg.reference.text for eg in read(spacy.blank("en"), path)] == [
        "the IL-2 gene is on", "IL-2 binds its receptor"]


@pytest.mark.parametrize("labels", ["GENE", [1], ["GENE", " "]])
def test_bad_labels_are_refused_with_a_code(tmp_path, labels):
    with pytest.raises(ValueError, match="NME003"):
        create_jsonl_reader(tmp_path / "a.jsonl", labels=labels)
    path = write(tmp_path / "b.jsonl", [dict(GENES[0], labels=labels)])
    with pytest.raises(ValueError, match="NME102"):
        read(spacy.blank("en"), path)


def test_empty_label_set_is_context_only(tmp_path):
    path = write(tmp_path / "a.jsonl", [dict(GENES[0], labels=[])])
    with pytest.warns(UserWarning, match="context_only"):
        (eg,) = read(spacy.blank("en"), path)
    assert list(eg.reference.spans[KEY]) == []
    assert labeled_key(KEY) not in eg.reference.spans


def test_label_mask_follows_the_marks_by_characters(tmp_path):
    nlp = spacy.blank("en")
    path = write(tmp_path / "a.jsonl", [GENES[0]])
    (eg,) = read(nlp, path, labels=["DNA"])
    mask = label_mask(eg.reference, eg.predicted, KEY, ["DNA", "protein"])
    assert mask.shape == (len(eg.predicted), 2)
    assert mask[:, 0].all() and not mask[:, 1].any()
    with pytest.raises(ValueError, match="NME220"):
        label_mask(eg.reference, eg.predicted, KEY, ["protein"])
    (whole,) = read(nlp, path)
    assert label_mask(whole.reference, whole.predicted, KEY, ["DNA"]) is None


# the mixed reader


def test_mixed_reader_draws_at_the_weights(tmp_path):
    nlp = spacy.blank("en")
    genes = create_jsonl_reader(write(tmp_path / "g.jsonl", GENES), labels=["DNA"])
    proteins = create_jsonl_reader(write(tmp_path / "p.jsonl", PROTEINS), labels=["protein"])
    reader = create_mixed_reader({"genes": genes, "proteins": proteins},
                                 {"genes": 3.0, "proteins": 1.0}, size=800, seed=1)
    examples = list(reader(nlp))
    assert len(examples) == 800
    counts = Counter(next(iter(eg.reference.spans[labeled_key(KEY)])).label_
                     for eg in examples)
    # binomial(800, 0.75): sd 12.2; 4 sd either side
    assert abs(counts["DNA"] - 600) < 50, counts
    # each corpus is read whole before it repeats: both gene sentences, about equally
    texts = Counter(eg.reference.text for eg in examples)
    assert abs(texts[GENES[0]["tokens"][0] + " IL-2 gene is on"] - counts["DNA"] / 2) <= 1
    # the same seed draws the same examples; the next call draws anew
    again = create_mixed_reader({"genes": genes, "proteins": proteins},
                                {"genes": 3.0, "proteins": 1.0}, size=800, seed=1)
    assert [eg.reference.text for eg in again(nlp)] == [eg.reference.text for eg in examples]


def test_mixed_reader_size_zero_reads_as_many_as_the_corpora_hold(tmp_path):
    nlp = spacy.blank("en")
    genes = create_jsonl_reader(write(tmp_path / "g.jsonl", GENES))
    proteins = create_jsonl_reader(write(tmp_path / "p.jsonl", PROTEINS[:1]))
    reader = create_mixed_reader({"g": genes, "p": proteins}, {"g": 1, "p": 1})
    assert len(list(reader(nlp))) == 3


@pytest.mark.parametrize("corpora,weights,size", [
    ({}, {}, 0),
    ({"a": None}, {"b": 1.0}, 0),
    ({"a": None}, {"a": 0.0}, 0),
    ({"a": None}, {"a": 1.0}, -1),
])
def test_mixed_reader_refuses_bad_settings_with_a_code(corpora, weights, size):
    with pytest.raises(ValueError, match="NME221"):
        create_mixed_reader(corpora, weights, size=size)


def test_mixed_reader_resolves_from_a_config(tmp_path):
    genes = write(tmp_path / "g.jsonl", GENES)
    config = spacy.util.Config().from_str(f"""
[corpora]
[corpora.train]
@readers = "spacy-nested-mrc.MixedCorpus.v1"
weights = {{"genes": 1.0}}
size = 5
[corpora.train.corpora]
[corpora.train.corpora.genes]
@readers = "spacy-nested-mrc.JsonlCorpus.v1"
path = "{genes}"
labels = ["DNA"]
""")
    reader = spacy.util.registry.resolve(config)["corpora"]["train"]
    assert len(list(reader(spacy.blank("en")))) == 5


# what the models learn


def _packed_nlp(encoder, labels, packed=True, **blocks):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": model_config(
        encoder, questions={"packed": packed}, per_label_loss=0.5,
        windows={"min_context_wordpieces": 8}, **blocks)})
    for label in labels:
        pipe.add_label(label)
    fix_random_seed(0)
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    return nlp


def test_mrc_asks_only_the_annotated_labels(tiny_bert, tmp_path):
    nlp = _packed_nlp(tiny_bert, ["DNA", "protein"])
    model = nlp.get_pipe(PIPE).model
    (eg,) = read(nlp, write(tmp_path / "g.jsonl", GENES[:1]), labels=["DNA"])
    mask = label_mask(eg.reference, eg.predicted, KEY, ["DNA", "protein"])
    gold = [np.array([[1, 3, 0]])]
    full = build_rows(model, layout_of(model), [eg.predicted], gold)
    asked = build_rows(model, layout_of(model), [eg.predicted], gold, label_mask=[mask],
                       layout_for=lambda ids: layout_of(model, ids))
    assert sorted(set(full.label.tolist())) == [0, 1]
    assert asked.label.tolist() == [0]
    # the packed sequence holds DNA's question only: shorter than the one with both
    assert asked.attention_mask.sum() < full.attention_mask.sum()
    assert asked.gold_pairs.tolist() == [[0, 1, 2]]


def test_mrc_learns_nothing_of_an_unannotated_label(tiny_bert, tmp_path):
    """The gradient of a record annotating DNA only, in a pipe of DNA and protein, is the
    gradient of the same record in a pipe of DNA alone: protein's question adds nothing."""
    grads = []
    for labels, annotated in ((["DNA", "protein"], ["DNA"]), (["DNA"], None)):
        nlp = _packed_nlp(tiny_bert, labels)
        pipe = nlp.get_pipe(PIPE)
        path = write(tmp_path / "g.jsonl", GENES)
        examples = read(nlp, path, labels=annotated)
        pipe.update(examples, drop=0.0)
        grads.append(torch_grads(pipe))
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-6), (a - b).abs().max()
    # and it differs when the record is taken to annotate protein too (negatives taught)
    nlp = _packed_nlp(tiny_bert, ["DNA", "protein"])
    pipe = nlp.get_pipe(PIPE)
    pipe.update(read(nlp, write(tmp_path / "g.jsonl", GENES)), drop=0.0)
    assert any(not torch.allclose(a, b, atol=1e-6)
               for a, b in zip(torch_grads(pipe), grads[1]))


def test_locate_label_learns_nothing_of_an_unannotated_class(tiny_bert, tmp_path):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": locate_label_config(tiny_bert)})
    pipe.add_label("DNA")
    pipe.add_label("protein")
    fix_random_seed(0)
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    heads = pipe.model.get_ref("heads").attrs["torch_module"]

    def class_grads(annotated):
        heads.zero_grad()
        examples = read(nlp, write(tmp_path / "g.jsonl", GENES), labels=annotated)
        pipe.update(examples, drop=0.0)
        last = heads.classifier[-1]
        return last.weight.grad.detach().clone(), last.bias.grad.detach().clone()

    weight, bias = class_grads(["DNA"])  # classes: none, DNA, protein
    assert bias[2] == 0 and not weight[2].any()
    assert bias[0] != 0 and bias[1] != 0
    weight, bias = class_grads(None)
    assert bias[2] != 0  # annotated: "not protein" is taught


def test_two_corpora_with_disjoint_labels_train_together(tiny_bert, tmp_path):
    # one sequence per label: what a label's question reads is the same in training and
    # prediction (packed, prediction asks the questions together, which a tiny encoder
    # trained on each alone does not generalize to)
    nlp = _packed_nlp(tiny_bert, ["DNA", "protein"], packed=False)
    # each corpus is silent on the other's label: nothing tells the tiny encoder that a
    # gene is no protein, so both labels may land on one span; keep them all
    nlp.get_pipe(PIPE).cfg["one_label_per_span"] = False
    genes = create_jsonl_reader(write(tmp_path / "g.jsonl", GENES), labels=["DNA"])
    proteins = create_jsonl_reader(write(tmp_path / "p.jsonl", PROTEINS), labels=["protein"])
    reader = create_mixed_reader({"g": genes, "p": proteins}, {"g": 1, "p": 1}, size=4)
    optimizer = nlp.create_optimizer()
    for _ in range(40):
        nlp.update(list(reader(nlp)), sgd=optimizer, drop=0.0)
    found = set()
    for doc in nlp.pipe([" ".join(r["tokens"]) for r in GENES + PROTEINS]):
        found.update((span.text, span.label_) for span in doc.spans[KEY])
    assert ("IL-2 gene", "DNA") in found
    assert ("NF-kappa B", "protein") in found


def test_unknown_annotated_label_is_a_coded_error(tiny_bert, tmp_path):
    nlp = _packed_nlp(tiny_bert, ["DNA"])
    examples = read(nlp, write(tmp_path / "g.jsonl", GENES), labels=["DNA", "GENE"])
    with pytest.raises(ValueError, match="NME220.*GENE"):
        nlp.update(examples)


def test_initialize_finds_labels_a_corpus_annotates_without_mentions(tiny_bert, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": model_config(tiny_bert)})
    path = write(tmp_path / "g.jsonl", GENES)
    nlp.initialize(lambda: read(nlp, path, labels=["DNA", "RNA"]))
    assert nlp.get_pipe(PIPE).labels == ("DNA", "RNA")


# scoring


def test_scoring_takes_each_record_on_its_own_labels(tmp_path):
    nlp = spacy.blank("en")
    path = write(tmp_path / "g.jsonl", GENES[:1])
    (eg,) = read(nlp, path, labels=["DNA"])
    # "IL-2" as a protein is not annotated there: not scored
    predict = [(1, 3, "DNA"), (1, 2, "protein")]
    eg.predicted.spans[KEY] = [Span(eg.predicted, s, e, label) for s, e, label in predict]
    scores = score_nested([eg], spans_key=KEY)
    assert scores[f"spans_{KEY}_p"] == 1.0 and scores[f"spans_{KEY}_r"] == 1.0
    (whole,) = read(nlp, path)
    whole.predicted.spans[KEY] = [Span(whole.predicted, s, e, label) for s, e, label in predict]
    assert score_nested([whole], spans_key=KEY)[f"spans_{KEY}_p"] == 0.5


# a label is a question


def test_trained_pipe_gains_a_label_by_its_question_and_predicts_it(tiny_bert, tmp_path):
    # PyTorch's default initialization: untrained heads fire everywhere
    nlp = _packed_nlp(tiny_bert, ["DNA", "protein"], heads={"boundary_prior": 0.0})
    pipe = nlp.get_pipe(PIPE)
    before = {name: p.detach().clone() for name, p in
              pipe.model.get_ref("heads").attrs["torch_module"].named_parameters()}
    assert pipe.add_label("virus", "find every virus in the text: HIV, HTLV-1, EBV.") == 1
    assert pipe.labels == ("DNA", "protein", "virus")
    model = pipe.model
    assert model.attrs["questions"]["virus"].startswith("find every virus")
    assert model.attrs["questions"]["DNA"] == "DNA"  # the others keep theirs
    # packed: the new question joins the others in one sequence
    assert layout_of(model).groups == [[0, 1, 2]]
    # untrained on it, the shared heads score it as any other (threshold 0: all they score;
    # every label a span gets)
    pipe.cfg["threshold"] = 0.0
    pipe.cfg["one_label_per_span"] = False
    doc = nlp("HIV infects human T cells")
    assert "virus" in {span.label_ for span in doc.spans[KEY]}
    after = dict(model.get_ref("heads").attrs["torch_module"].named_parameters())
    assert all(torch.equal(before[name], after[name]) for name in before)
    # saved and loaded with its question
    nlp.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe")
    assert loaded.get_pipe(PIPE).labels == ("DNA", "protein", "virus")
    assert loaded.get_pipe(PIPE).model.attrs["questions"]["virus"].startswith("find every virus")
    assert loaded.get_pipe(PIPE).add_label("virus") == 0


def test_relabel_keeps_the_weights_and_asks_the_new_labels(tiny_bert):
    nlp = _packed_nlp(tiny_bert, ["DNA", "protein"])
    pipe = nlp.get_pipe(PIPE)
    pipe.relabel(["protein", "cell_line"], {"cell_line": "find every cell line"})
    assert pipe.labels == ("protein", "cell_line")
    assert pipe.model.attrs["labels"] == ["protein", "cell_line"]
    assert pipe.model.attrs["questions"] == {"protein": "protein",
                                             "cell_line": "find every cell line"}
    with pytest.raises(ValueError, match="NME002"):
        _natural_nlp(tiny_bert).get_pipe(PIPE).relabel(["DNA", "GADGET"])


def _natural_nlp(encoder):
    nlp = spacy.blank("en")
    config = model_config(encoder, questions={"style": "natural"})
    pipe = nlp.add_pipe(PIPE, config={"model": config})
    pipe.add_label("DNA")
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    return nlp


def test_relabel_callback_resolves_and_relabels(tiny_bert):
    nlp = _packed_nlp(tiny_bert, ["DNA"])
    callback = spacy.util.registry.callbacks.get("spacy-nested-mrc.relabel.v1")(
        labels=["RNA"], questions={"RNA": "find every RNA"})
    assert callback(nlp) is nlp
    assert nlp.get_pipe(PIPE).labels == ("RNA",)


def test_start_from_takes_a_trained_pipes_weights_then_the_new_labels(tiny_bert, tmp_path):
    """``start_from.v1`` (``[initialize.after_init]``) gives a pipe built from a config the
    weights of the same pipe in a trained pipeline, then the new labels; a pipe of another
    model is refused with the file named (NME012), and a config without the path at
    initialization (NME223)."""
    from spacy_nested_mrc.encoder.hf import hf_transformers

    trained = _natural_nlp(tiny_bert)
    with torch.no_grad():  # weights no fresh initialization draws
        for param in trained.get_pipe(PIPE).model.get_ref("heads").attrs[
                "torch_module"].parameters():
            param.add_(1.0)
    trained.to_disk(tmp_path / "trained")

    def params(nlp):
        model = nlp.get_pipe(PIPE).model
        return [*hf_transformers(model.get_ref("encoder"))[0].parameters(),
                *model.get_ref("heads").attrs["torch_module"].parameters()]

    fix_random_seed(1)
    fresh = _natural_nlp(tiny_bert)
    assert not all(torch.equal(a, b) for a, b in zip(params(fresh), params(trained)))
    start_from = spacy.util.registry.callbacks.get("spacy-nested-mrc.start_from.v1")
    assert start_from(str(tmp_path / "trained"), labels=["RNA", "DNA"])(fresh) is fresh
    assert all(torch.equal(a, b) for a, b in zip(params(fresh), params(trained)))
    pipe = fresh.get_pipe(PIPE)
    assert pipe.labels == ("RNA", "DNA")
    assert pipe.model.attrs["questions"]["RNA"].startswith("find every RNA")
    other = _packed_nlp(tiny_bert, ["DNA"], heads={"match_hidden": 8})
    with pytest.raises(ValueError, match="NME012.*model"):
        start_from(str(tmp_path / "trained"), labels=["DNA"])(other)
    with pytest.raises(ValueError, match="NME223"):
        start_from(None, labels=["DNA"])(fresh)


def test_models_with_parts_per_label_refuse_a_new_label_with_a_code(tiny_bert):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": locate_label_config(tiny_bert)})
    pipe.add_label("DNA")
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    with pytest.raises(ValueError, match="NME004"):
        pipe.add_label("virus", "find every virus")
    with pytest.raises(ValueError, match="NME222"):
        pipe.relabel(["DNA", "virus"])


def test_a_question_given_before_initialization_is_the_labels(tiny_bert):
    nlp = spacy.blank("en")
    config = model_config(tiny_bert, questions={"style": "natural"})
    pipe = nlp.add_pipe(PIPE, config={"model": config})
    pipe.add_label("virus", "find every virus in the text")
    nlp.initialize(lambda: [Example(nlp.make_doc("IL-2"), nlp.make_doc("IL-2"))])
    assert pipe.model.attrs["questions"] == {"virus": "find every virus in the text"}


def test_a_question_to_a_model_that_reads_none_is_refused_with_a_code(tiny_bert):
    """Locate-and-Label takes labels, not questions: a question before initialization is
    refused (NME024), not written into the model's attrs or lost."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(PIPE, config={"model": locate_label_config(tiny_bert)})
    with pytest.raises(ValueError, match="NME024.*'virus'"):
        pipe.add_label("virus", "find every virus")
    assert pipe.labels == ()
    assert pipe.add_label("virus") == 1


def test_every_label_of_the_shared_corpora_has_a_question():
    from pathlib import Path

    from spacy_nested_mrc.models.mrc.questions import load_preset

    stats = Path(__file__).parents[2] / "shared" / "data" / "biomed-ner" / "stats.json"
    if not stats.exists():
        pytest.skip("needs ../shared/data/biomed-ner (the shared biomedical corpora)")
    for corpus, counts in json.loads(stats.read_text()).items():
        labels = set(counts["train entities by label"])
        questions = load_preset(corpus)
        assert set(questions) == labels, corpus
        assert all(q.startswith("find every") for q in questions.values())


def test_mixed_reader_without_redraw_yields_the_same_examples(tmp_path):
    nlp = spacy.blank("en")
    genes = create_jsonl_reader(write(tmp_path / "g.jsonl", GENES * 5))
    proteins = create_jsonl_reader(write(tmp_path / "p.jsonl", PROTEINS * 5))
    corpora, weights = {"g": genes, "p": proteins}, {"g": 1, "p": 1}
    dev = create_mixed_reader(corpora, weights, size=7, redraw=False)
    first = [eg.reference.text for eg in dev(nlp)]
    assert [eg.reference.text for eg in dev(nlp)] == first
    train = create_mixed_reader(corpora, weights, size=7)
    assert [eg.reference.text for eg in train(nlp)] == first
    assert [eg.reference.text for eg in train(nlp)] != first


def test_relabel_command_saves_the_pipeline_with_its_new_labels(tiny_bert, tmp_path):
    from spacy_nested_mrc.cli import main

    _packed_nlp(tiny_bert, ["DNA", "protein"]).to_disk(tmp_path / "trained")
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"virus": "find every virus in the text"}))
    assert main(["relabel", str(tmp_path / "trained"), str(tmp_path / "out"),
                 "--labels", "protein,virus", "--questions", str(questions)]) == 0
    pipe = spacy.load(tmp_path / "out").get_pipe(PIPE)
    assert pipe.labels == ("protein", "virus")
    assert pipe.model.attrs["questions"]["virus"] == "find every virus in the text"


@pytest.mark.parametrize("kind", ["multi_ner", "multi_ner_packed", "mrc_packed_joined"])
def test_every_mrc_kind_learns_nothing_of_an_unannotated_label(tiny_bert, tmp_path, kind):
    """Multi-NER's typed heads keep every label's row of a window, the unannotated ones
    with no token to learn from: their heads get no gradient."""
    from helpers.multi_ner import make_nlp

    nlp = make_nlp(tiny_bert, kind, labels=("DNA", "protein"))
    pipe = nlp.get_pipe(PIPE)
    heads = pipe.model.get_ref("heads").attrs["torch_module"]
    heads.zero_grad()
    pipe.update(read(nlp, write(tmp_path / "g.jsonl", GENES), labels=["DNA"]), drop=0.0)
    if kind.startswith("multi_ner"):  # typed: weight [K, H, O], one slice per label
        assert heads.start.weight.grad[0].abs().sum() > 0
        assert heads.start.weight.grad[1].abs().sum() == 0
    else:
        assert heads.start.weight.grad.abs().sum() > 0
