"""Tests of Multi-NER (spacy-nested-mrc.MultiNER.v2) and of packed questions (MRC and Multi-NER):
registration and settings, per-type heads, type attention, task weights, packed layouts and
label groups, encoder passes, training to a perfect fit and serialization."""

import inspect
import math
from importlib.metadata import entry_points

import numpy as np
import pytest
import spacy
import torch
from helpers.configs import MRC, MULTI_NER, blocks_config, build, multi_ner_blocks
from helpers.mrc_model import change_blocks
from helpers.multi_ner import make_nlp, model_config
from helpers.pipes import KEY, LABELS, PIPE, TRAIN, make_examples, span_keys
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry
from thinc.api import Config, ConfigValidationError, Model

from spacy_nested_mrc import type_attention
from spacy_nested_mrc import windows as windows_module
from spacy_nested_mrc.encoder.hf import get_tokenizer
from spacy_nested_mrc.models.mrc import model as mrc_model
from spacy_nested_mrc.models.mrc.layers import TypedLinear
from spacy_nested_mrc.models.mrc.loss import MRCLoss
from spacy_nested_mrc.models.mrc.model import build_mrc_query_model, build_rows, query_layout
from spacy_nested_mrc.models.multi_ner.model import build_multi_ner_model
from spacy_nested_mrc.types import SpanBatch, contract_of

MAX_STEPS = 300
# questions of four wordpieces each under the tiny BERT (every word is in its vocabulary)
FOUR_PIECES = {
    "DNA": "dna gene site promoter",
    "RNA": "rna mrna expression of",
    "cell_line": "cell line of human",
    "cell_type": "cell type t cells",
    "protein": "protein kinase factor receptor",
    "complex": "binding site and factor",
}
# [CLS] q1 [SEP] q2 [SEP] context [SEP] is 12 + context: 24 wordpieces and 8 for the context
# hold two questions, so six labels make three groups
# natural questions, a separator after each (as the natural-question configs set it)
GROUPED = {"questions": {"style": "natural", "queries": FOUR_PIECES, "separate": True},
           "windows": {"window_wordpieces": 24, "min_context_wordpieces": 8}}
GROUPED_LABELS = tuple(FOUR_PIECES)


def overfit(nlp, examples):
    optimizer = nlp.initialize(lambda: examples)
    for step in range(MAX_STEPS):
        nlp.update(examples, sgd=optimizer, drop=0.0)
        if step % 5 == 4 and nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0:
            break
    return nlp


@pytest.fixture(scope="module", params=["multi_ner", "mrc_packed", "mrc_packed_joined"])
def trained(request, tiny_bert):
    """A Multi-NER or packed MRC pipe trained until it predicts its examples perfectly."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    # every pair as a match candidate: the match head learns fastest this way
    config = model_config(tiny_bert, request.param, heads={"match_candidates": "all"})
    nlp.add_pipe(PIPE, config={"model": config})
    examples = make_examples(nlp, TRAIN)
    return overfit(nlp, examples), examples


def count_encoder_sequences(model: Model, monkeypatch) -> list:
    """Patch the model's encoder to record the number of sequences of each call."""
    encoder = model.get_ref("encoder")
    calls = []
    func = encoder._func

    def counting(layer, inputs, is_train):
        calls.append(int(inputs.kwargs["input_ids"].shape[0]))
        return func(layer, inputs, is_train)

    monkeypatch.setattr(encoder, "_func", counting)
    return calls


def record_windows(monkeypatch) -> list:
    """Patch the window planner to record the windows of each doc."""
    windows = []
    plan = windows_module.plan_windows

    def recording(counts, room, overlap):
        planned = plan(counts, room, overlap)
        windows.append(planned)
        return planned

    monkeypatch.setattr(windows_module, "plan_windows", recording)
    return windows


def long_doc(vocab, n_tokens: int) -> Doc:
    words = "the il-2 gene promoter binding site of human t cells and the jurkat cell line".split()
    return Doc(vocab, words=[words[i % len(words)] for i in range(n_tokens)])


# registration and settings

MULTI_NER_CFG = """
[model]
@architectures = "spacy-nested-mrc.MultiNER.v2"
attention_heads = 4

[model.encoder]
@misc = "spacy-nested-mrc.QueryEncoder.v1"
name = "no/such-encoder"
max_rows_per_pass = 12

[model.questions]
@misc = "spacy-nested-mrc.Questions.v1"
style = "pseudo"
packed = true

[model.windows]
@misc = "spacy-nested-mrc.QueryWindows.v1"
min_context_wordpieces = 16

[model.heads]
@misc = "spacy-nested-mrc.MRCHeads.v1"

[model.loss]
@misc = "spacy-nested-mrc.MRCLoss.v1"

[model.decoder]
@misc = "spacy-nested-mrc.MRCDecoder.v1"

[model.task_weights]
DNA = 2.0
"""


def test_architecture_resolves_from_config_string():
    model = registry.resolve(Config().from_str(MULTI_NER_CFG))["model"]
    assert isinstance(model, Model)
    assert model.name == "multi_ner"
    # construction loads nothing: the encoder is only looked up at initialization
    assert model.attrs["settings"].encoder.name == "no/such-encoder"
    assert model.attrs["task_weights"] == {"DNA": 2.0}
    assert model.attrs["settings"].questions.packed is True and model.attrs["typed"] is True
    assert model.attrs["settings"].windows.min_context_wordpieces == 16
    assert model.attrs["docs_per_pass"] == 12
    assert callable(contract_of(model).set_labels)
    # packed: one sequence per window until the label groups are known
    contract_of(model).set_labels(model, ["DNA", "protein", "RNA"])
    assert model.attrs["docs_per_pass"] == 12


def test_packed_mrc_resolves_from_config_string():
    cfg = MULTI_NER_CFG.replace("MultiNER.v2", "MRCQuery.v2").replace("attention_heads = 4", "")
    cfg = cfg[: cfg.index("[model.task_weights]")]
    model = registry.resolve(Config().from_str(cfg))["model"]
    assert model.name == "mrc_query"
    assert model.attrs["settings"].questions.packed is True and model.attrs["typed"] is False


def test_entry_point_declared():
    found = [
        ep
        for ep in entry_points(group="spacy_architectures")
        if ep.name == "spacy-nested-mrc.MultiNER.v2"
    ]
    assert len(found) == 1
    assert found[0].load() is build_multi_ner_model


def test_multi_ner_takes_the_mrc_models_blocks():
    """MultiNER.v2 takes MRCQuery.v2's blocks (the same names and types: each block's
    defaults are written once, in its registered function) but ``per_label_loss`` (every
    task's loss is its own), then its own two; confection refuses a setting it lacks."""
    mrc = inspect.signature(build_mrc_query_model).parameters
    multi = inspect.signature(build_multi_ner_model).parameters
    own = {"task_weights", "attention_heads"}  # Multi-NER's alone
    assert set(multi) - set(mrc) == own
    assert set(mrc) - set(multi) == {"per_label_loss"}
    for name in set(multi) - own:
        assert multi[name].annotation == mrc[name].annotation, name
        assert multi[name].default is inspect.Parameter.empty, name
    config = Config().from_str(MULTI_NER_CFG)
    filled = registry.fill(config)["model"]
    assert filled["encoder"]["max_pass_tokens"] == 1024 and filled["attention_heads"] == 4
    config["model"]["per_label_loss"] = 0.5
    with pytest.raises(ConfigValidationError, match="per_label_loss"):
        registry.resolve(config)


@pytest.mark.parametrize(
    "architecture,block,setting,value,code",
    [
        (MULTI_NER, None, "attention_heads", 0, "NME003"),
        (MULTI_NER, None, "attention_heads", 1.5, "NME003"),
        (MULTI_NER, None, "task_weights", {"DNA": -1.0}, "NME003"),
        (MULTI_NER, None, "task_weights", {"DNA": "high"}, "NME003"),
        (MULTI_NER, "windows", "min_context_wordpieces", 0, "NME003"),
        (MULTI_NER, "questions", "packed", "yes", "NME003"),
        (MULTI_NER, "heads", "dropout", 2.0, "NME003"),
        (MULTI_NER, "heads", "match_candidates", "bogus", "NME006"),
        (MRC, "windows", "min_context_wordpieces", -3, "NME003"),
        (MRC, "questions", "packed", 1, "NME003"),
    ],
)
def test_invalid_settings_fail_at_construction(architecture, block, setting, value, code):
    """Each setting's check, of the architecture or of its block (``block``); the error names
    it."""
    given = {setting: value} if block is None else {block: {setting: value}}
    with pytest.raises(ValueError, match=code) as err:
        build(blocks_config(architecture, {"encoder": "no/such-encoder"}, given))
    assert setting in str(err.value)


def test_task_weights_of_unknown_labels_fail(tiny_bert):
    with pytest.raises(ValueError, match="NME031") as err:
        make_nlp(tiny_bert, "multi_ner", task_weights={"DNA": 1.0, "GADGET": 2.0})
    assert "GADGET" in str(err.value)


def test_attention_heads_must_divide_the_hidden_size(tiny_bert):
    # the tiny BERT is 32 wide
    with pytest.raises(ValueError, match="NME030"):
        make_nlp(tiny_bert, "multi_ner", attention_heads=5)


# per-type heads, type attention and task weights


def test_typed_linear_applies_each_types_own_weights():
    torch.manual_seed(0)
    layer = TypedLinear(3)
    x = torch.randn(2, 4, 5, 6)  # [W, K, T, H]
    grid = layer(x)
    assert layer.weight.shape == (4, 6, 3) and layer.bias.shape == (4, 3)
    expected = torch.stack(
        [torch.nn.functional.linear(x[:, k], layer.weight[k].T, layer.bias[k]) for k in range(4)],
        dim=1,
    )
    assert torch.allclose(grid, expected, atol=1e-6)
    # pick mode: item p with the weights of its own type
    types = torch.tensor([3, 0, 2])
    items = x[0, types, 1]  # [P, H]
    assert torch.allclose(layer(items, types, 4), grid[0, types, 1], atol=1e-6)


def test_multi_ner_heads_have_a_type_dimension(tiny_bert):
    nlp = make_nlp(tiny_bert, "multi_ner")
    heads = nlp.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"]
    k, hidden = len(LABELS), 32
    assert heads.start.weight.shape == (k, hidden, 1)
    assert heads.end.weight.shape == (k, hidden, 1)
    assert heads.match_start.weight.shape == (k, hidden, 32)
    assert heads.match_end.weight.shape == (k, hidden, 32)
    assert heads.match_out.weight.shape == (k, 32, 1)
    assert heads.mixer.in_proj_weight.shape == (3 * hidden, hidden)


def test_type_attention_maps(tiny_bert):
    nlp = make_nlp(tiny_bert, "multi_ner")
    texts = ["IL-2 gene expression in human T cells", "kinase"]
    maps = type_attention(nlp, texts)
    k = len(LABELS)
    assert maps.shape == (k, k)
    assert np.allclose(maps.sum(axis=1), 1.0, atol=1e-5)
    assert (maps >= 0).all()
    per_token = type_attention(nlp, [nlp.make_doc(t) for t in texts], per_token=True)
    assert [m.shape for m in per_token] == [(7, k, k), (1, k, k)]
    assert np.allclose(per_token[0].sum(axis=-1), 1.0, atol=1e-5)
    tokens = np.concatenate(per_token)
    assert np.allclose(tokens.mean(axis=0), maps, atol=1e-5)
    # the model alone takes docs; a token without wordpieces has no map
    doc = Doc(nlp.vocab, words=["gene", " ", "kinase"], spaces=[True, False, False])
    (alone,) = type_attention(nlp.get_pipe(PIPE).model, [doc], per_token=True)
    assert np.isnan(alone[1]).all() and not np.isnan(alone[[0, 2]]).any()


def test_type_attention_across_label_groups(tiny_bert):
    """Packed with several label groups, each token's type vectors are gathered across its
    window's groups, so the map still covers every label."""
    with pytest.warns(UserWarning, match="NMW012"):
        nlp = make_nlp(tiny_bert, "multi_ner_packed", GROUPED_LABELS, **GROUPED)
    maps = type_attention(nlp, ["IL-2 gene expression in human T cells"])
    k = len(GROUPED_LABELS)
    assert maps.shape == (k, k)
    assert np.allclose(maps.sum(axis=1), 1.0, atol=1e-5)


def test_type_attention_needs_an_initialized_multi_ner_model(tiny_bert):
    mrc = make_nlp(tiny_bert, "mrc_packed")
    with pytest.raises(ValueError, match="NME032"):
        type_attention(mrc, ["gene"])
    with pytest.raises(ValueError, match="NME032"):
        type_attention(mrc.get_pipe(PIPE).model, ["gene"])
    multi = make_nlp(tiny_bert, "multi_ner")
    with pytest.raises(ValueError, match="NME033"):
        type_attention(multi.get_pipe(PIPE).model, ["gene"])
    fresh = build(multi_ner_blocks(encoder=tiny_bert))
    with pytest.raises(ValueError, match="NME001"):
        type_attention(fresh, [Doc(multi.vocab, words=["gene"])])


def test_per_task_loss_hand_computed():
    loss = MRCLoss("bce")
    logits = torch.tensor([0.0, 0.0, 20.0])
    targets = torch.tensor([1.0, 0.0, 1.0])
    tasks = torch.tensor([0, 0, 1])
    per_task = loss.per_task(logits, targets, tasks, 3)
    # task 0: log 2; task 1: ~0; task 2 has no positions: 0
    assert per_task.tolist() == pytest.approx([math.log(2), 0.0, 0.0], abs=1e-6)
    weights = torch.tensor([2.0, 1.0, 1.0])
    one = torch.tensor([1.0])
    joint = loss(logits, logits, targets, targets, one * 0, one, (tasks, tasks[:1], weights))
    # the mean is over the tasks asked (with tokens): 0 and 1, not 2 (a label its text does
    # not annotate, which must not dilute the others). start and end: (2 log 2 + 0) / 2;
    # match: one pair of task 0 at logit 0 -> 2 log 2 / 2
    assert float(joint) == pytest.approx(3 * 2 * math.log(2) / 2, abs=1e-5)
    # every task asked: the mean over all of them, as before
    all_tasks = torch.tensor([0, 1, 2])
    joint = loss(logits, logits, targets, targets, one * 0, one, (all_tasks, all_tasks[:1],
                                                                  weights))
    per_task = loss.per_task(logits, targets, all_tasks, 3) * weights
    assert float(joint) == pytest.approx(2 * float(per_task.mean()) + 2 * math.log(2) / 3,
                                         abs=1e-5)
    dice = MRCLoss("dice", dice_smooth=0.0).per_task(logits, targets, tasks, 3)
    assert float(dice[2]) == 0.0 and not torch.isnan(dice).any()


def test_task_weights_balance_the_joint_loss(tiny_bert):
    def first_loss(**settings):
        nlp = make_nlp(tiny_bert, "multi_ner", **settings)
        return nlp.update(make_examples(nlp, TRAIN[:3]), drop=0.0)[PIPE]

    default = first_loss()
    assert first_loss(task_weights={label: 1.0 for label in LABELS}) == pytest.approx(default)
    assert first_loss(task_weights={label: 0.0 for label in LABELS}) == 0.0
    assert first_loss(task_weights={"DNA": 3.0}) > default


@pytest.mark.parametrize(
    "kind,settings",
    [("multi_ner", {"task_weights": {"DNA": 2.0}}), ("mrc_packed", {"per_label_loss": 0.5})],
)
def test_get_loss_gradient_is_the_heads_own(tiny_bert, kind, settings, check_backprop):
    """Typed heads with task weights, and packed rows with a loss partly per label."""
    nlp = make_nlp(tiny_bert, kind, **settings)
    pipe = nlp.get_pipe(PIPE)
    examples = make_examples(nlp, TRAIN[:3])
    batch = SpanBatch([eg.predicted for eg in examples], pipe._gold(examples))
    output, backprop = pipe.model.begin_update(batch)
    assert check_backprop(pipe.model, output, backprop) > 0


# packed sequences and label groups


def test_packed_layout_uses_the_tokenizers_special_tokens(tiny_bert):
    nlp = make_nlp(tiny_bert, "mrc_packed", ["DNA", "RNA"])
    model = nlp.get_pipe(PIPE).model
    tokenizer = get_tokenizer(model.get_ref("encoder"))
    questions = ["dna gene", "rna"]
    layout = query_layout(tokenizer, questions, ["DNA", "RNA"], 40, min_context=8)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    q1, q2 = (tokenizer(q, add_special_tokens=False)["input_ids"] for q in questions)
    assert layout.packed and layout.groups == [[0, 1]]
    assert layout.prefix[0].tolist() == [cls, *q1, sep, *q2, sep]
    assert layout.suffix[0].tolist() == [sep]
    assert layout.question_spans[0].tolist() == [[1, 3], [4, 5]]
    assert layout.prefix_types[0].tolist() == [0] * len(layout.prefix[0])
    assert layout.room == 40 - len(layout.prefix[0]) - 1
    joined = query_layout(tokenizer, questions, ["DNA", "RNA"], 40, min_context=8,
                          separate=False)
    assert joined.prefix[0].tolist() == [cls, *q1, *q2, sep]
    assert joined.question_spans[0].tolist() == [[1, 3], [3, 4]]
    assert joined.room == layout.room + 1
    # one sequence per window carries both labels' rows
    doc = Doc(nlp.vocab, words=["gene", "kinase"])
    rows = build_rows(model, mrc_model.layout_of(model), [doc], None)
    assert rows.n_sequences == 1 and rows.n_rows == 2
    assert rows.sequence.tolist() == [0, 0] and rows.slot.tolist() == [0, 1]
    real = rows.input_ids[0, : rows.attention_mask[0].sum()]
    prefix = mrc_model.layout_of(model).prefix[0]
    assert real[: len(prefix)].tolist() == prefix.tolist() and real[-1] == sep
    assert (rows.token_type_ids[0, len(prefix) : len(real)] == 1).all()
    assert (rows.start_index[0] == rows.start_index[1]).all()
    pool = rows.head_inputs(False).packing.question_pool.numpy()  # [S, Q, L]
    spans = mrc_model.layout_of(model).question_spans[0]
    for q, (start, end) in enumerate(spans):
        assert pool[0, q, start:end] == pytest.approx([1 / (end - start)] * (end - start))
        assert pool[0, q].sum() == pytest.approx(1.0)


def test_labels_split_into_groups_when_questions_do_not_fit(tiny_bert):
    """More labels than fit in one window: greedy groups in label order, reported with a code;
    rows, gold and predictions still cover every label."""
    with pytest.warns(UserWarning, match="NMW012") as record:
        nlp = make_nlp(tiny_bert, "mrc_packed", GROUPED_LABELS,
                       decoder={"start_threshold": 0.0, "end_threshold": 0.0}, **GROUPED)
    assert "['DNA', 'RNA']; group 2: ['cell_line', 'cell_type']" in str(record[0].message)
    model = nlp.get_pipe(PIPE).model
    layout = mrc_model.layout_of(model)
    assert layout.groups == [[0, 1], [2, 3], [4, 5]]
    for prefix, suffix in zip(layout.prefix, layout.suffix):
        assert len(prefix) + len(suffix) + 8 <= 24
    assert model.attrs["docs_per_pass"] == model.attrs["settings"].encoder.max_rows_per_pass // 3
    doc = nlp.make_doc("IL-2 gene")
    gold = [np.asarray([[0, 1, k] for k in range(len(GROUPED_LABELS))])]
    rows = build_rows(model, layout, [doc], gold)
    assert rows.n_sequences == 3
    assert rows.label.tolist() == list(range(6))
    assert rows.sequence.tolist() == [0, 0, 1, 1, 2, 2]
    assert rows.slot.tolist() == [0, 1, 0, 1, 0, 1]
    assert rows.gold_start[:, 0].all() and sorted(rows.gold_pairs[:, 0].tolist()) == list(range(6))
    # training covers every group; prediction returns every label's spans
    losses = nlp.update(make_examples(nlp, [("IL-2 gene", [(0, 1, "complex"), (0, 2, "DNA")])]))
    assert np.isfinite(losses[PIPE]) and losses[PIPE] > 0
    nlp.get_pipe(PIPE).cfg["threshold"] = 0.0
    nlp.get_pipe(PIPE).cfg["one_label_per_span"] = False  # every label's spans, unfiltered
    found = {label for _, _, label in span_keys(nlp("IL-2 gene expression"))}
    assert found == set(GROUPED_LABELS)


def test_grouped_packed_multi_ner_learns_every_label(tiny_bert):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    # four labels, three questions to a group
    config = model_config(tiny_bert, "multi_ner_packed", GROUPED,
                          windows={"min_context_wordpieces": 6}, heads={"match_candidates": "all"})
    nlp.add_pipe(PIPE, config={"model": config})
    examples = make_examples(nlp, TRAIN)
    with pytest.warns(UserWarning, match="NMW012"):
        overfit(nlp, examples)
    assert len(mrc_model.layout_of(nlp.get_pipe(PIPE).model).groups) == 2
    assert nlp.evaluate(examples)[f"spans_{KEY}_f"] == 1.0


def test_encoder_runs_once_per_window_and_group(tiny_bert, monkeypatch):
    with pytest.warns(UserWarning, match="NMW012"):
        nlp = make_nlp(tiny_bert, "mrc_packed", GROUPED_LABELS, **GROUPED)
    model = nlp.get_pipe(PIPE).model
    calls = count_encoder_sequences(model, monkeypatch)
    windows = record_windows(monkeypatch)
    doc = long_doc(nlp.vocab, 30)
    nlp(doc.copy())
    (planned,) = windows
    assert len(planned) > 1
    assert calls == [len(planned) * 3]  # one pass, one sequence per window and group
    # training: the same sequences, in one pass
    calls.clear()
    windows.clear()
    reference = doc.copy()
    reference.spans[KEY] = [Span(reference, 1, 3, "DNA")]
    nlp.update([Example(doc.copy(), reference)])
    assert calls == [len(windows[0]) * 3]
    # with fewer rows per pass, windows read one a sequence are never split across passes
    # (packed sentences are cut between sequences: heads that are not typed take any rows)
    calls.clear()
    change_blocks(model, encoder={"max_rows_per_pass": 4}, windows={"pack_wordpieces": 0})
    nlp(doc.copy())
    assert sum(calls) == len(planned) * 3 and set(calls) == {3}


def test_multi_ner_keeps_each_window_in_one_pass(tiny_bert, monkeypatch):
    """Rows of one window are never split across encoder passes, with the same spans and
    scores as in one pass."""
    nlp = make_nlp(tiny_bert, "multi_ner", windows={"window_wordpieces": 24},
                   decoder={"start_threshold": 0.3, "end_threshold": 0.3})
    model = nlp.get_pipe(PIPE).model
    doc = long_doc(nlp.vocab, 40)
    first = nlp(doc.copy())
    one_pass = first.spans[KEY]
    calls = count_encoder_sequences(model, monkeypatch)
    # fewer than two windows' rows
    change_blocks(model, encoder={"max_rows_per_pass": 6})
    second = nlp(doc.copy())
    split = second.spans[KEY]
    assert len(calls) > 1 and set(calls) == {len(LABELS)}
    assert [(s.start, s.end, s.label_) for s in split] == [
        (s.start, s.end, s.label_) for s in one_pass
    ]
    assert np.allclose(split.attrs["scores"], one_pass.attrs["scores"], atol=1e-5)


# training to a perfect fit, and serialization


def test_overfit_gives_perfect_scores(trained):
    nlp, examples = trained
    scores = nlp.evaluate(examples)
    assert scores[f"spans_{KEY}_f"] == 1.0
    assert scores[f"spans_{KEY}_p"] == 1.0
    assert scores[f"spans_{KEY}_r"] == 1.0
    assert scores[f"spans_{KEY}_nested_r"] == 1.0


def test_to_disk_and_load_predict_the_same(trained, tmp_path):
    nlp, examples = trained
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    texts = [eg.reference.text for eg in examples] + ["IL-2 gene expression in human T cells"]
    for before, after in zip(nlp.pipe(texts), loaded.pipe(texts)):
        assert span_keys(before) == span_keys(after)
        np.testing.assert_allclose(
            before.spans[KEY].attrs["scores"], after.spans[KEY].attrs["scores"], atol=1e-6
        )
    model = loaded.get_pipe(PIPE).model
    assert model.attrs["labels"] == list(LABELS)
    assert model.attrs["docs_per_pass"] == nlp.get_pipe(PIPE).model.attrs["docs_per_pass"]
