"""Robustness of the ``nested_mrc_ner`` pipe: odd text at prediction (hand-picked, and
generated with hypothesis), serialization and damaged pipeline folders, determinism across
batch sizes, processes and runs, settings validated at construction, and problem gold
spans in training."""

import math
import pickle
import shutil
import warnings

import numpy as np
import pytest
import spacy
from helpers.configs import PER_LABEL_MRC, build, mrc_blocks
from helpers.encoders import TINY_WORDS, make_tiny_bert
from helpers.locate_label import shared_pipeline, shipped_pipeline
from helpers.multi_ner import make_nlp as multi_ner_nlp
from helpers.outputs import SHORT_TEXTS, assert_bit_identical, outputs
from helpers.pipes import (
    KEY,
    LABELS,
    PIPE,
    TRAIN,
    blank_nlp,
    initialized_nlp,
    make_examples,
    span_keys,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.lang.en import English
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import fix_random_seed
from thinc.api import ConfigValidationError

from spacy_nested_mrc.component import NestedMRCNER

STEPS = 100


@pytest.fixture(scope="module")
def nlp(tiny_bert):
    """A small pipe trained for a fixed number of steps on the toy nested examples: it finds
    spans, so the checks below see real output, not only empty groups."""
    fix_random_seed(0)
    nlp = blank_nlp(tiny_bert, model={"heads": {"match_candidates": "all"}})
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(STEPS):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    return nlp


@pytest.fixture(scope="module")
def saved(nlp, tmp_path_factory):
    """RETURNS (Path): the pipeline of ``nlp`` written with to_disk."""
    path = tmp_path_factory.mktemp("robust") / "pipeline"
    nlp.to_disk(path)
    return path


def check_doc(doc, threshold: float = 0.5) -> int:
    """Assert that the pipe's output on ``doc`` is well formed. RETURNS (int): spans found."""
    group = doc.spans[KEY]
    scores = group.attrs["scores"]
    assert isinstance(scores, np.ndarray) and scores.dtype == np.float32
    assert scores.shape == (len(group),)
    assert ((scores >= threshold) & (scores <= 1.0)).all()
    keys = span_keys(doc)
    assert len(keys) == len(set(keys))
    for start, end, label in keys:
        assert 0 <= start < end <= len(doc)
        assert label in LABELS
    return len(group)


@pytest.mark.slow
def test_trained_pipe_finds_spans(nlp):
    """The checks below are not vacuous: the pipe does write spans."""
    assert sum(check_doc(doc) for doc in nlp.pipe(SHORT_TEXTS)) > 0


# bad input at prediction

BAD_TEXTS = {
    "empty": "",
    "spaces": "   ",
    "whitespace": " \t\n\r\x0b\x0c\u00a0\u2003\u3000 ",
    "one_char": "x",
    "one_symbol": "-",
    "long_word": "a" * 10_000,
    "long_word_in_text": "IL-2 " + "gene" * 2_500 + " expression",
    # tokens of more wordpieces than a window: cut to first and last pieces (NMW011)
    "many_pieces": "a." * 5_000,
    "many_pieces_hash": "IL-2 " + "a#" * 100 + " gene",
    "long_cjk_run": "人" * 300,
    "long_doc": "IL-2 gene expression in human T cells . " * 60,
    "emoji": "\U0001f600\U0001f389 IL-2 gene \U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469",
    "cjk": "人类T细胞中的IL-2基因表达 東京 한국어",
    "arabic": "التعبير عن جين IL-2 في الخلايا التائية",
    "hebrew": "ביטוי הגן IL-2 בתאי T אנושיים",
    "bidi_controls": "\u202eIL-2 gene\u202c \u2067cells\u2069",
    "controls": "\x00\x07\u200b\ufeff",
    "controls_between": "IL-2\x00gene\x07 \u200bexpression\ufeff cells\x1b[0m",
    "combining": "e\u0301\u0301\u0301 cafe\u0301 Z\u0351\u0352\u0353algo",
    "replacement": "\ufffd\ufffd IL-2 \ufffd",
    "mixed": (
        "IL-2 \U0001f600 人类 עברית مرحبا \x00 gene\u200b \ufeff expression\n\n  T cells "
        + "x" * 500
    ),
}


def annotated(nlp, text):
    """A doc of ``text`` with other span keys and entities set before the pipe runs."""
    doc = nlp.make_doc(text)
    n = len(doc)
    doc.spans["other"] = [Span(doc, 0, n, "ALL")] if n else []
    doc.spans["other"].attrs["note"] = "keep"
    doc.spans["empty"] = []
    if n:
        doc.ents = [Span(doc, n - 1, n, "LAST")]
    return doc


def snapshot(doc):
    """What a pipe writing only ``doc.spans[KEY]`` must leave as it was."""
    groups = {
        key: ([(s.start, s.end, s.label_) for s in group], dict(group.attrs))
        for key, group in doc.spans.items()
        if key != KEY
    }
    ents = [(e.start, e.end, e.label_) for e in doc.ents]
    return doc.text, len(doc), groups, ents, [t.ent_iob_ for t in doc]


@pytest.mark.parametrize("name", list(BAD_TEXTS))
def test_bad_text_at_prediction(nlp, name):
    doc = annotated(nlp, BAD_TEXTS[name])
    before = snapshot(doc)
    doc = nlp(doc)
    check_doc(doc)
    assert snapshot(doc) == before


def test_bad_texts_in_one_batch(nlp):
    """All of them together, in one pass and with a batch size that mixes them."""
    texts = list(BAD_TEXTS.values())
    alone = outputs(nlp(text) for text in texts)
    for batch_size in (3, len(texts)):
        docs = [annotated(nlp, text) for text in texts]
        before = [snapshot(doc) for doc in docs]
        docs = list(nlp.pipe(docs, batch_size=batch_size))
        assert [snapshot(doc) for doc in docs] == before
        for doc in docs:
            check_doc(doc)
        assert [keys for keys, _ in outputs(docs)] == [keys for keys, _ in alone]


def other_architecture(kind: str, tiny_bert: str, tmp_path):
    """An initialized pipeline of another architecture on the tiny BERT: the shipped
    Locate-and-Label CPU config, Multi-NER, packed MRC."""
    if kind == "locate_label":
        model = "components.nested_mrc_ner.model"
        nlp = shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path,
                               {f"{model}.heads.hidden_width": 32,
                                f"{model}.decoder.filter_threshold": 0.0,
                                f"{model}.decoder.nms_score": 0.0})
        fix_random_seed(0)
        nlp.initialize(lambda: make_examples(nlp, TRAIN))
        return nlp
    return multi_ner_nlp(tiny_bert, kind)


@pytest.mark.parametrize("kind", ["locate_label", "multi_ner", "mrc_packed"])
def test_bad_texts_through_every_architecture(kind, tiny_bert, tmp_path):
    """Every bad text, alone and in one batch, through the other architectures: well-formed
    output and other annotations untouched (with a low threshold, so spans are written)."""
    nlp = other_architecture(kind, tiny_bert, tmp_path)
    nlp.get_pipe(PIPE).cfg["threshold"] = 0.0
    texts = list(BAD_TEXTS.values())
    found = 0
    for docs in ([nlp(annotated(nlp, text)) for text in texts],
                 list(nlp.pipe([annotated(nlp, text) for text in texts], batch_size=8))):
        for text, doc in zip(texts, docs):
            assert snapshot(doc) == snapshot(annotated(nlp, text))
            found += check_doc(doc, threshold=0.0)
    assert found > 0


def test_bad_text_with_write_ents(nlp):
    pipe = nlp.get_pipe(PIPE)
    pipe.cfg["write_ents"] = True
    try:
        docs = list(nlp.pipe([annotated(nlp, text) for text in BAD_TEXTS.values()]))
    finally:
        pipe.cfg["write_ents"] = False
    for doc in docs:
        check_doc(doc)
        ents = [(e.start, e.end, e.label_) for e in doc.ents]
        assert set(ents) <= set(span_keys(doc))
        covered = [i for start, end, _ in ents for i in range(start, end)]
        assert len(covered) == len(set(covered))  # no overlaps
        assert doc.spans["other"].attrs["note"] == "keep"


def test_pre_existing_spans_key_is_replaced(nlp):
    """The pipe's own key is overwritten, not appended to."""
    doc = nlp.make_doc("IL-2 gene expression")
    doc.spans[KEY] = [Span(doc, 2, 3, "STALE")]
    doc = nlp(doc)
    assert "STALE" not in {label for _, _, label in span_keys(doc)}
    check_doc(doc)


# generated text (hypothesis)

ODD_WORDS = [
    "IL-2",
    "Jurkat",
    "T",
    "cells",
    "\U0001f600",
    "東京",
    "مرحبا",
    "שלום",
    "\x00",
    "\u200b",
    "\ufeff",
    "-",
    "(",
    ")",
    "'s",
    "a" * 150,
]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\t", "", " \x00 ", "\u200b", "\u3000", "\r\n"]

# texts over every code point but surrogates (controls included), some long enough for
# tokens of more wordpieces than the window (cut with a warning, NMW011), and words joined
# by odd separators
ANY_TEXT = st.text(max_size=80) | st.text(min_size=150, max_size=400)
JOINED_WORDS = st.lists(
    st.tuples(st.sampled_from(TINY_WORDS + ODD_WORDS), st.sampled_from(SEPARATORS)), max_size=10
).map(lambda pairs: "".join(word + sep for word, sep in pairs))
TEXTS = st.one_of(ANY_TEXT, JOINED_WORDS)


@pytest.mark.slow
def test_generated_texts(nlp):
    """At least 1,000 generated texts through nlp.pipe: well-formed output, never an error."""
    seen = []
    found = []

    @settings(
        max_examples=1000,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.lists(TEXTS, min_size=1, max_size=4))
    def check(texts):
        docs = list(nlp.pipe(texts, batch_size=3))
        assert [doc.text for doc in docs] == texts
        found.extend(check_doc(doc) for doc in docs)
        seen.extend(texts)

    check()
    assert len(seen) >= 1000
    assert sum(found) > 0


# serialization and state


def test_bytes_round_trip_is_bit_identical(nlp):
    fresh = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    expected = outputs(nlp.pipe(SHORT_TEXTS, batch_size=8))
    assert_bit_identical(outputs(fresh.pipe(SHORT_TEXTS, batch_size=8)), expected)


def test_disk_round_trip_is_bit_identical(nlp, saved):
    loaded = spacy.load(saved)
    assert loaded.get_pipe(PIPE).cfg == nlp.get_pipe(PIPE).cfg
    expected = outputs(nlp.pipe(SHORT_TEXTS, batch_size=8))
    assert_bit_identical(outputs(loaded.pipe(SHORT_TEXTS, batch_size=8)), expected)


def test_pickle_round_trip_is_bit_identical(nlp):
    """Pickling is how spaCy hands the pipeline to processes started by spawn."""
    restored = pickle.loads(pickle.dumps(nlp))
    expected = outputs(nlp.pipe(SHORT_TEXTS, batch_size=8))
    assert_bit_identical(outputs(restored.pipe(SHORT_TEXTS, batch_size=8)), expected)


def _remove(path):
    path.unlink()


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _empty(path):
    path.write_bytes(b"")


def _garbage(path):
    path.write_bytes(b"not what to_disk wrote\x00\x01")


@pytest.mark.parametrize(
    "part,damage,code",
    [
        ("model", _remove, "NME011"),
        ("cfg", _remove, "NME011"),
        ("model", _truncate, "NME012"),
        ("model", _empty, "NME012"),
        ("model", _garbage, "NME012"),
        ("cfg", _truncate, "NME012"),
        ("cfg", _garbage, "NME012"),
    ],
)
def test_damaged_pipe_folder_names_the_file(saved, tmp_path, part, damage, code):
    path = tmp_path / "pipeline"
    shutil.copytree(saved, path)
    damage(path / PIPE / part)
    error = FileNotFoundError if code == "NME011" else ValueError
    with pytest.raises(error, match=code) as err:
        spacy.load(path)
    assert str(path / PIPE / part) in str(err.value)


class _RunsCode:
    """What a crafted weights file holds: unpickled, it runs a command (touching a file)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def _torch_bytes(obj) -> bytes:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _replace_encoder_state(model_file, replace) -> None:
    """Rewrite the encoder weights in a saved model file (thinc's msgpack, each shim's bytes a
    msgpack of its config, tokenizer and torch state) with ``replace(state bytes)``."""
    import srsly

    msg = srsly.msgpack_loads(model_file.read_bytes())
    found = 0
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim = srsly.msgpack_loads(shim_bytes)
            if isinstance(shim, dict) and shim.get("config") and "tokenizer" in shim:
                shim["state"] = replace(shim["state"])
                node_shims[i] = srsly.msgpack_dumps(shim)
                found += 1
    assert found == 1
    model_file.write_bytes(srsly.msgpack_dumps(msg))


def _renamed_key(state: bytes) -> bytes:
    import io

    import torch

    weights = torch.load(io.BytesIO(state), weights_only=True)
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    weights["renamed." + key] = weights.pop(key)
    return _torch_bytes(weights)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mrc", "locate_label", "shared_transformer"])
def test_crafted_or_mismatched_encoder_weights_are_refused(kind, nlp, saved, tiny_bert,
                                                           tmp_path):
    """A pipeline folder whose encoder weights would run code when unpickled runs none at
    ``spacy.load``, even with ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (coded NME013), for the
    MRC family's own encoder, Locate-and-Label's own and a shared transformer component's;
    weights that do not fit the encoder are refused (NME014) rather than left random."""
    import subprocess
    import sys

    model_file = "nested_mrc_ner/model"
    if kind == "mrc":
        source = saved
    elif kind == "locate_label":
        source = tmp_path / "locate_label"
        other_architecture("locate_label", tiny_bert, tmp_path).to_disk(source)
    else:
        source = tmp_path / "shared"
        shared = shared_pipeline(tiny_bert, tmp_path)
        shared.initialize(lambda: make_examples(shared, TRAIN))
        shared.to_disk(source)
        model_file = "transformer/model"
    marker = tmp_path / "code-ran"
    crafted, mismatched = tmp_path / "crafted", tmp_path / "mismatched"
    for path, replace in ((crafted, lambda _: _torch_bytes({"w": _RunsCode(str(marker))})),
                          (mismatched, _renamed_key)):
        shutil.copytree(source, path)
        _replace_encoder_state(path / model_file, replace)
    load = "import spacy, sys; spacy.load(sys.argv[1])"
    env = {**__import__("os").environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    for path, code in ((crafted, "NME013"), (mismatched, "NME014")):
        result = subprocess.run([sys.executable, "-c", load, str(path)], env=env,
                                capture_output=True, text=True)
        assert result.returncode != 0 and code in result.stderr, result.stderr[-2000:]
    assert not marker.exists(), "the crafted file ran code at spacy.load"
    spacy.load(source)  # the untouched folder loads


def test_missing_pipe_folder(nlp, tmp_path):
    with pytest.raises(FileNotFoundError, match="NME011") as err:
        English.from_config(nlp.config).get_pipe(PIPE).from_disk(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere" / "cfg") in str(err.value)


def test_excluded_parts_are_not_required(nlp, saved, tmp_path):
    path = tmp_path / PIPE
    shutil.copytree(saved / PIPE, path)
    (path / "model").unlink()
    pipe = English.from_config(nlp.config).get_pipe(PIPE)
    pipe.from_disk(path, exclude=["vocab", "model"])
    assert pipe.labels == LABELS


def test_batch_size_does_not_change_predictions(nlp):
    """Spans are the same for any batch size; scores agree up to float rounding (padding to
    another length changes the encoder's sums in the last bits)."""
    results = [outputs(nlp.pipe(SHORT_TEXTS, batch_size=size)) for size in (1, 7, 64)]
    for other in results[1:]:
        for (keys_a, scores_a), (keys_b, scores_b) in zip(results[0], other):
            assert keys_a == keys_b
            np.testing.assert_allclose(scores_a, scores_b, rtol=0, atol=1e-6)


def test_repeated_runs_are_bit_identical(nlp):
    first = outputs(nlp.pipe(SHORT_TEXTS, batch_size=7))
    nlp("something else in between")
    assert_bit_identical(outputs(nlp.pipe(SHORT_TEXTS, batch_size=7)), first)


N_PROCESS_SCRIPT = """
import sys, time
import spacy
from spacy_nested_mrc import SAMPLE_DIR, create_jsonl_reader
nlp = spacy.blank("en")
nlp.add_pipe("nested_mrc_ner")  # the embedded all-MiniLM-L6-v2: multi-threaded matmuls
nlp.initialize(lambda: create_jsonl_reader(SAMPLE_DIR / "train.jsonl", limit=8)(nlp))
texts = ["IL-2 gene expression was induced in Jurkat cells but not c-fos mRNA ."] * 24
one = [len(doc.spans["nested"]) for doc in nlp.pipe(texts)]  # the parent's pool is in use
two = [len(doc.spans["nested"]) for doc in nlp.pipe(texts, n_process=2, batch_size=4)]
assert one == two, (one, two)
print("done")
"""


@pytest.mark.slow
def test_n_process_in_a_default_python_process_does_not_hang():
    """A user's program, torch at its default threads (no test setting), runs the pipe and
    then ``nlp.pipe(..., n_process=2)``: it finishes (it hung before the fork handler)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", N_PROCESS_SCRIPT], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "done" in result.stdout


def test_two_processes_give_the_same_output(nlp, monkeypatch):
    """Two processes write what one writes, to the bit, given the same batches: the pipe
    reads no further ahead than ``batch_size`` (a batch of other docs rounds otherwise)."""
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setitem(nlp.get_pipe(PIPE).cfg, "read_ahead_tokens", 0)
    one = outputs(nlp.pipe(SHORT_TEXTS, batch_size=8))
    two = outputs(nlp.pipe(SHORT_TEXTS, batch_size=8, n_process=2))
    assert_bit_identical(two, one)


# settings validated at construction (complementing test_component and test_mrc_model)


@pytest.mark.parametrize(
    "setting,value",
    [
        ("windows.window_wordpieces", 0),
        ("windows.overlap_tokens", -1),
        ("decoder.start_threshold", 2),
        ("heads.dropout", 1.5),
        ("heads.match_hidden", 0),
    ],
)
def test_invalid_model_settings_through_the_factory(setting, value):
    """A bad value in a block of the default model, named as its block names it."""
    nlp = spacy.blank("en")
    block, name = setting.split(".")
    with pytest.raises(ValueError, match="NME003") as err:
        nlp.add_pipe(PIPE, config={"model": {block: {name: value}}})
    assert repr(name) in str(err.value)
    assert PIPE not in nlp.pipe_names


@pytest.mark.parametrize(
    "config,setting",
    [
        ({"threshold": "x"}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"spans_key": None}, "spans_key"),
        ({"model": {"windows": {"window_wordpieces": 1.5}}}, "window_wordpieces"),
        ({"model": {"decoder": {"end_threshold": "x"}}}, "end_threshold"),
    ],
)
def test_wrong_types_in_config_fail_in_spacy_validation(config, setting):
    nlp = spacy.blank("en")
    with pytest.raises(ConfigValidationError, match=setting):
        nlp.add_pipe(PIPE, config=config)
    assert PIPE not in nlp.pipe_names


@pytest.mark.parametrize(
    "settings,name",
    [
        ({"threshold": math.nan}, "threshold"),
        ({"threshold": math.inf}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"threshold": None}, "threshold"),
        ({"spans_key": None}, "spans_key"),
        ({"spans_key": b"nested"}, "spans_key"),
    ],
)
def test_invalid_component_settings_in_python(settings, name):
    """Built in Python, without spaCy's config validation, the class still checks."""
    model = build(mrc_blocks(PER_LABEL_MRC, encoder="x"))
    with pytest.raises(ValueError, match="NME003") as err:
        NestedMRCNER(spacy.blank("en").vocab, model, **settings)
    assert repr(name) in str(err.value)


@pytest.mark.parametrize(
    "block,setting,value,code",
    [
        ("heads", "match_hidden", 0, "NME003"),
        ("windows", "window_wordpieces", True, "NME003"),
        ("windows", "overlap_tokens", 1.5, "NME003"),
        ("encoder", "max_rows_per_pass", None, "NME003"),
        ("heads", "dropout", math.nan, "NME003"),
        ("decoder", "start_threshold", "x", "NME003"),
        ("heads", "boundary_prior", 1.0, "NME003"),
        ("heads", "boundary_prior", -0.1, "NME003"),
        ("questions", "style", None, "NME006"),
    ],
)
def test_invalid_model_settings_in_python(block, setting, value, code):
    with pytest.raises(ValueError, match=code) as err:
        build(mrc_blocks(PER_LABEL_MRC, {"encoder": "x"}, {block: {setting: value}}))
    assert setting in str(err.value)


# bad gold spans in training


def gold_example(nlp, text, spans, key=KEY):
    predicted = nlp.make_doc(text)
    reference = predicted.copy()
    reference.spans[key] = [Span(reference, s, e, label) for s, e, label in spans]
    return Example(predicted, reference)


def test_duplicate_gold_spans_count_once(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    pipe = nlp.get_pipe(PIPE)
    clean = [(0, 2, "DNA"), (0, 1, "protein")]
    doubled = [(0, 2, "DNA"), (0, 1, "protein"), (0, 2, "DNA"), (0, 2, "DNA"), (0, 1, "protein")]
    eg_clean = gold_example(nlp, "IL-2 gene expression", clean)
    eg_doubled = gold_example(nlp, "IL-2 gene expression", doubled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # duplicates are not a problem to report
        (rows,) = pipe._gold([eg_doubled])
        # the pipe without an optimizer leaves the weights as they are (nlp.update would
        # use its default optimizer): the same model scores both
        loss_clean = pipe.update([eg_clean], sgd=None, drop=0.0)[PIPE]
        loss_doubled = pipe.update([eg_doubled], sgd=None, drop=0.0)[PIPE]
    assert rows.tolist() == [[0, 1, 3], [0, 2, 0]]
    assert loss_doubled == pytest.approx(loss_clean, rel=1e-6)


def test_duplicate_gold_spans_with_strict_spans(tiny_bert):
    nlp = initialized_nlp(tiny_bert, strict_spans=True)
    eg = gold_example(nlp, "IL-2 gene", [(0, 2, "DNA"), (0, 2, "DNA")])
    losses = nlp.update([eg], sgd=nlp.create_optimizer())
    assert np.isfinite(losses[PIPE])


def test_unknown_labels_and_missing_keys_are_counted(tiny_bert):
    nlp = initialized_nlp(tiny_bert)
    examples = [
        gold_example(nlp, "IL-2 gene", [(0, 2, "GADGET"), (0, 1, "protein")]),
        gold_example(nlp, "human T cells", [(0, 3, "WIDGET"), (1, 3, "WIDGET")]),
        gold_example(nlp, "IL-2 gene", [(0, 2, "DNA")], key="elsewhere"),
        gold_example(nlp, "Jurkat cells", [(0, 2, "cell_line")], key="elsewhere"),
    ]
    with pytest.warns(UserWarning, match="NMW002") as record:
        losses = nlp.update(examples, sgd=nlp.create_optimizer())
    messages = [str(r.message) for r in record if "NMW002" in str(r.message)]
    assert len(messages) == 1
    assert "3 unknown label" in messages[0]
    assert "2 docs without the spans key" in messages[0]
    assert np.isfinite(losses[PIPE])


def test_strict_spans_raise_on_missing_key(tiny_bert):
    nlp = initialized_nlp(tiny_bert, strict_spans=True)
    eg = gold_example(nlp, "IL-2 gene", [(0, 2, "DNA")], key="elsewhere")
    with pytest.raises(ValueError, match="NME103") as err:
        nlp.update([eg], sgd=nlp.create_optimizer())
    assert "1 docs without the spans key" in str(err.value)


def test_training_on_bad_text(tiny_bert):
    """The odd texts of prediction, as training docs (no gold spans), learn without error."""
    nlp = initialized_nlp(tiny_bert)
    examples = [gold_example(nlp, text, []) for text in BAD_TEXTS.values()]
    losses = nlp.update(examples, sgd=nlp.create_optimizer(), drop=0.0)
    assert np.isfinite(losses[PIPE])
    check_doc(nlp("IL-2 gene expression"))


# one pipeline shared by threads (a web server's pool)

# 60 tokens of 24 characters (a DNA sequence): windows that must be refitted to the encoder
LONG_TOKENS = " ".join(["acgtacgtacgtacgtacgtacgt"] * 60)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["locate_label", "multi_ner", "mrc_packed"])
def test_threads_sharing_a_pipeline_get_the_sequential_output(kind, tmp_path):
    """``nlp.pipe`` from four threads at once over one pipeline (an encoder with dropout, so a
    call run in training mode would show; short texts mixed with windows that need refitting)
    gives every doc the output of a sequential run, and no thread fails."""
    from concurrent.futures import ThreadPoolExecutor

    encoder = str(make_tiny_bert(tmp_path / "encoder", dropout=0.3))
    nlp = other_architecture(kind, encoder, tmp_path)
    nlp.get_pipe(PIPE).cfg["threshold"] = 0.0
    texts = SHORT_TEXTS[:40] + [LONG_TOKENS, "T cells"] * 4
    shifted = [texts[k:] + texts[:k] for k in (0, 7, 13, 29)]

    def run(part):
        return outputs(nlp.pipe(part, batch_size=8))

    expected = [run(part) for part in shifted]
    assert sum(len(keys) for keys, _ in expected[0]) > 0
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(run, shifted))
        for result, alone in zip(results, expected):
            assert_bit_identical(result, alone)
