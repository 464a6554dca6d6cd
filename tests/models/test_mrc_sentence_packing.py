"""Sentences packed into shared encoder sequences (``pack_wordpieces``, ``rows.reads_packed``):
each sentence attends only to its own questions and itself, its positions and token types
restarting, so the packed and the per-label MRC predict what they predict reading one
sentence a sequence, on BERT and on MPNet (RoBERTa-style positions, relative attention
bias)."""

import string
from pathlib import Path
from typing import List, Tuple

import numpy as np
import pytest
import torch
from helpers.configs import MULTI_NER
from helpers.documents import document
from helpers.encoders import TINY_WORDS
from helpers.mrc_model import change_blocks, make_nlp
from helpers.pipes import torch_grads
from spacy.tokens import Span
from spacy.training import Example

from spacy_nested_mrc.encoder.hf import reads_shared_prefix
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import (
    build_rows,
    place_segments,
    reads_packed,
    trains_packed,
)
from spacy_nested_mrc.types import SpanBatch

# sentences of different lengths; the last is longer than a window of 48 wordpieces alone
SHORT = ["the", "il-2", "gene", "."]
MIDDLE = ["jurkat", "cells", "and", "c-fos", "mrna", "in", "human", "t", "cells", "."]
LONG = ["nf-kappa", "b", "binding", "site", "in", "the", "promoter", "of", "il-2"] * 4


def make_tiny_mpnet(path: Path, max_positions: int = 130) -> Path:
    """A randomly initialised 2-layer MPNet (position ids after the padding index, a
    relative attention bias) with the tiny BERT's words."""
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "[UNK]"]
    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab += list(chars) + ["##" + c for c in chars] + list(TINY_WORDS)
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf8")
    tokenizer = MPNetTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True,
                                   model_max_length=max_positions - 2)
    tokenizer.save_pretrained(str(path))
    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=max_positions, pad_token_id=1)
    MPNetModel(config).save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory) -> str:
    return str(make_tiny_mpnet(tmp_path_factory.mktemp("tiny_mpnet")))


@pytest.fixture(params=["bert", "mpnet"])
def encoder(request, tiny_bert) -> str:
    return tiny_bert if request.param == "bert" else request.getfixturevalue("tiny_mpnet")


def model_of(encoder: str, packed: bool, max_length: int = 48):
    nlp = make_nlp(encoder, labels=("DNA", "protein", "RNA"), questions={"packed": packed},
                   windows={"window_wordpieces": max_length,
                            **({"min_context_wordpieces": 8} if packed else {})})
    model = nlp.get_pipe("nested_mrc_ner").model
    change_blocks(model, windows={"pack_wordpieces": 128})
    torch.manual_seed(1)  # heads away from PyTorch's init: every term of them counts
    with torch.no_grad():
        for parameter in model.get_ref("heads").attrs["torch_module"].parameters():
            parameter.normal_(0.0, 0.3)
    return nlp, model


def predict(model, docs, pack: bool) -> List[Tuple[np.ndarray, np.ndarray]]:
    change_blocks(model, windows={"pack_wordpieces": 128 if pack else 0})
    assert reads_packed(model) == pack
    output = model.predict(SpanBatch(docs))
    return list(zip(output.spans, output.scores))


def assert_same(got, expected) -> None:
    for (spans, scores), (spans_alone, scores_alone) in zip(got, expected):
        assert len(spans_alone) > 0
        assert spans.tolist() == spans_alone.tolist()
        np.testing.assert_allclose(scores, scores_alone, rtol=1e-5, atol=1e-6)


def two_docs_read(nlp, model):
    """Two docs of sentences of different lengths (the last of the first longer than a
    window), their layout, and their rows one sentence a sequence and packed."""
    doc, _ = document(nlp, [SHORT, MIDDLE, LONG, SHORT, MIDDLE])
    other, _ = document(nlp, [MIDDLE, SHORT])
    layout = layout_of(model)
    alone = build_rows(model, layout, [doc, other], None)
    return (doc, other), layout, alone, build_rows(model, layout, [doc, other], None,
                                                    pack_sentences=True)


@pytest.mark.parametrize("packed", [False, True])
def test_packed_sentences_predict_what_each_sentence_alone_does(encoder, packed):
    """Two docs of sentences of different lengths, one longer than the window alone (read
    in overlapping windows): the same spans with the same scores, packed or one sentence a
    sequence, and fewer sequences packed, several sentences (and docs) sharing one."""
    nlp, model = model_of(encoder, packed)
    (doc, other), layout, alone, rows = two_docs_read(nlp, model)
    assert rows.n_rows == alone.n_rows and rows.n_sequences < alone.n_sequences
    assert rows.attention_mask.sum(axis=1).max() <= layout.max_length
    assert (rows.label == alone.label).all() and (rows.offset == alone.offset).all()
    assert len(set(rows.segments[0].tolist()) - {-1}) > 1  # sentences share a sequence
    if not packed:  # the short questions leave room: the docs share a sequence too
        assert set(rows.sequence[rows.doc == 0]) & set(rows.sequence[rows.doc == 1])
    assert_same(predict(model, [doc, other], True), predict(model, [doc, other], False))


@pytest.mark.parametrize("packed", [False, True])
def test_a_packed_sentence_does_not_see_its_neighbours(tiny_bert, packed):
    """Another word in the second sentence changes no score of the first, which shares its
    sequence, and changes scores of the second."""
    nlp, model = model_of(tiny_bert, packed, max_length=128)
    changed = ["c-fos"] + MIDDLE[1:]
    doc, starts = document(nlp, [SHORT, MIDDLE])
    other, _ = document(nlp, [SHORT, changed])
    rows = build_rows(model, layout_of(model), [doc], None, pack_sentences=True)
    assert rows.n_sequences == 1
    (spans, scores), (other_spans, other_scores) = predict(model, [doc, other], True)
    first = spans[:, 1] <= starts[1]
    assert first.any() and (other_spans[:, 1] <= starts[1]).sum() == first.sum()
    assert spans[first].tolist() == other_spans[other_spans[:, 1] <= starts[1]].tolist()
    np.testing.assert_allclose(scores[first], other_scores[other_spans[:, 1] <= starts[1]],
                               rtol=1e-5, atol=1e-6)
    assert not np.allclose(scores[~first][:5], other_scores[other_spans[:, 1] > starts[1]][:5])


def test_segments_fill_sequences_in_order():
    sequence, column = place_segments(np.array([10, 20, 30, 60, 4, 70]), 64, True)
    assert sequence.tolist() == [0, 0, 0, 1, 1, 2]
    assert column.tolist() == [0, 10, 30, 0, 60, 0]
    sequence, column = place_segments(np.array([10, 20]), 64, False)
    assert sequence.tolist() == [0, 1] and column.tolist() == [0, 0]


def test_windows_with_context_and_typed_heads_keep_one_window_a_sequence(tiny_bert):
    nlp = make_nlp(tiny_bert, windows={"context_wordpieces": 4, "window_wordpieces": 40})
    assert not reads_packed(nlp.get_pipe("nested_mrc_ner").model)
    nlp = make_nlp(tiny_bert, architecture=MULTI_NER)
    assert not reads_packed(nlp.get_pipe("nested_mrc_ner").model)


# questions read apart from the text (questions.attend_to_text = false)


def apart_model(encoder: str, packed: bool, max_length: int = 48):
    nlp, model = model_of(encoder, packed, max_length)
    change_blocks(model, questions={"attend_to_text": False})
    return nlp, model


@pytest.mark.parametrize("packed", [False, True])
def test_sentences_share_questions_read_apart_and_predict_as_alone(encoder, packed):
    """Questions read apart: the sentences of a sequence share one copy of their questions
    (fewer wordpieces than a copy each; on MPNet, whose attention bias reads columns, a
    copy each), and predict what each sentence alone does under the same setting; the
    setting changes the scores (the questions no longer read the text)."""
    nlp, model = apart_model(encoder, packed)
    (doc, other), layout, alone, rows = two_docs_read(nlp, model)
    change_blocks(model, questions={"attend_to_text": True})
    copies = build_rows(model, layout, [doc, other], None, pack_sentences=True)
    with_text = predict(model, [doc, other], False)
    change_blocks(model, questions={"attend_to_text": False})
    assert rows.n_rows == alone.n_rows and rows.n_sequences < alone.n_sequences
    assert rows.attention_mask.sum(axis=1).max() <= layout.max_length
    expected = predict(model, [doc, other], False)
    assert_same(predict(model, [doc, other], True), expected)
    assert any(not np.allclose(a[1], b[1]) for a, b in zip(expected, with_text)
               if len(a[1]) == len(b[1]))
    if not reads_shared_prefix(model.get_ref("encoder")):
        # MPNet's relative attention bias reads columns: a copy of the questions each
        assert rows.attention_mask.sum() == copies.attention_mask.sum()
        return
    assert rows.attention_mask.sum() < copies.attention_mask.sum()
    assert sorted(zip(rows.doc, rows.label, rows.offset)) == sorted(
        zip(alone.doc, alone.label, alone.offset))
    assert (np.diff(rows.sequence) >= 0).all()  # rows follow their sequences
    # each sequence holds one label group's questions once, at its start
    prefix = rows.reads[rows.reads >= 0]
    assert len(np.unique(prefix)) == rows.n_sequences


def test_questions_read_apart_do_not_see_the_text(tiny_bert):
    """Read apart, a question's hidden states are the same whatever the text beside it."""
    nlp, model = apart_model(tiny_bert, True, max_length=128)
    docs = [document(nlp, [SHORT])[0], document(nlp, [["c-fos"] + MIDDLE[1:]])[0]]
    layout = layout_of(model)
    (q_start, q_end), = layout.question_spans[0][:1]
    states = []
    for doc in docs:
        rows = build_rows(model, layout, [doc], None)
        hidden = model.get_ref("encoder").predict(rows.encoder_inputs())
        states.append(hidden[0, : layout.question_spans[0][-1, 1] + 1])
    torch.testing.assert_close(states[0], states[1], rtol=1e-5, atol=1e-6)
    assert q_end > q_start


@pytest.mark.parametrize("packed", [False, True])
def test_training_on_shared_questions_has_the_gradient_of_sentences_alone(tiny_bert, packed):
    """Training packs sentences where they share their questions: the same loss and
    gradient as one sentence a sequence (dropout off)."""
    grads, losses = [], []
    for pack in (128, 0):
        nlp, model = apart_model(tiny_bert, packed)
        change_blocks(model, windows={"pack_wordpieces": pack})
        assert trains_packed(model) == (pack > 0)
        examples = []
        for sentences in ([SHORT, MIDDLE, LONG], [MIDDLE, SHORT]):
            doc, _ = document(nlp, sentences)
            reference = doc.copy()
            reference.spans["nested"] = [Span(reference, 1, 3, "DNA"),
                                         Span(reference, 1, 2, "protein"),
                                         Span(reference, 5, 7, "RNA")]
            examples.append(Example(doc, reference))
        got = {}
        nlp.get_pipe("nested_mrc_ner").update(examples, drop=0.0, losses=got)
        losses.append(got["nested_mrc_ner"])
        grads.append(torch_grads(nlp.get_pipe("nested_mrc_ner")))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_segments_sharing_a_prefix_fill_sequences_by_prefix():
    sequence, column = place_segments(np.array([10, 20, 30, 5, 4, 7]), 40, True,
                                      np.array([8, 8, 5, 8, 5, 5]), np.array([0, 0, 1, 0, 1, 1]))
    assert sequence.tolist() == [0, 0, 2, 1, 2, 3]
    assert column.tolist() == [8, 18, 5, 8, 35, 5]


def test_questions_read_apart_need_an_encoder_that_reads_masks_per_wordpiece(tiny_bert):
    """An encoder whose positions are not absolute (here BERT set to relative position
    embeddings) cannot read questions apart: NME025, not a crash inside the encoder."""
    from spacy_nested_mrc.encoder.hf import hf_objects

    nlp, model = apart_model(tiny_bert, True)
    hf_objects(model.get_ref("encoder")).transformer.config.position_embedding_type = (
        "relative_key")
    with pytest.raises(ValueError, match="NME025"):
        nlp("the il-2 gene .")
