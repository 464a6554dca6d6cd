"""An existing application: a pipeline with a sentencizer and a trained ``ner`` gets
``nested_mrc_ner`` added from another pipeline with ``source``; both outputs coexist, the
``ner`` output is unchanged and the nested spans are those of the source pipeline."""

import pytest
import spacy
from helpers.configs import mrc_blocks
from spacy.language import Language
from spacy.training import Example
from spacy.util import fix_random_seed

PIPE = "nested_mrc_ner"
KEY = "nested"
TRAIN = [
    ("IL-2 gene expression in human T cells .", [(0, 1, "protein"), (0, 2, "DNA")]),
    ("c-fos mRNA rose in Jurkat cells .", [(0, 1, "protein"), (4, 6, "cell_line")]),
    ("NF-kappa B binds the IL-2 promoter .", [(0, 2, "protein"), (4, 6, "DNA")]),
]
TEXTS = [
    "IL-2 gene expression in human T cells . c-fos mRNA rose in Jurkat cells .",
    "NF-kappa B binds the IL-2 promoter .",
    "",
]


def _examples(nlp: Language, flat: bool):
    examples = []
    for text, spans in TRAIN:
        reference = nlp.make_doc(text)
        group = [reference[s:e] for s, e, _ in spans]
        for span, (_, _, label) in zip(group, spans):
            span.label_ = label
        if flat:  # ner learns the outermost entities only
            reference.ents = spacy.util.filter_spans(group)
        else:
            reference.spans[KEY] = group
        examples.append(Example(nlp.make_doc(text), reference))
    return examples


def _train(nlp: Language, examples, steps: int) -> Language:
    fix_random_seed(0)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    return nlp


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """RETURNS: the saved folder of an app pipeline (sentencizer + ner) and of a nested one."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("ner")
    _train(nlp, _examples(nlp, flat=True), steps=30)
    folder = tmp_path_factory.mktemp("app")
    nlp.to_disk(folder / "app")
    return folder / "app"


@pytest.fixture(scope="module")
def nested(tiny_bert, tmp_path_factory):
    nlp = spacy.blank("en")
    # every candidate kept, so the pipe has output to compare after a few steps
    model = mrc_blocks(encoder={"name": tiny_bert, "precision": "fp32"},
                       decoder={"start_threshold": 0.0, "end_threshold": 0.0,
                                "max_span_length": 3})
    nlp.add_pipe(PIPE, config={"threshold": 0.0, "model": model})
    _train(nlp, _examples(nlp, flat=False), steps=5)
    folder = tmp_path_factory.mktemp("nested")
    nlp.to_disk(folder / "nested")
    return folder / "nested"


def _ents(doc):
    return [(e.start, e.end, e.label_) for e in doc.ents]


def _nested(doc):
    group = doc.spans[KEY]
    return [(s.start, s.end, s.label_) for s in group], list(group.attrs["scores"])


@pytest.mark.slow
def test_source_into_an_existing_pipeline(app, nested, tmp_path):
    before = [(_ents(d), [s.start for s in d.sents]) for d in spacy.load(app).pipe(TEXTS)]
    assert any(ents for ents, _ in before), "the app's ner should find something"
    source = spacy.load(nested)
    combined = spacy.load(app)
    combined.add_pipe(PIPE, source=source)
    assert combined.pipe_names == ["sentencizer", "ner", PIPE]
    # the app's sentencizer gives the docs sentence boundaries, which the nested pipe reads
    # sentence by sentence: the source pipeline gives the same with a sentencizer first
    with_sentences = spacy.load(nested)
    with_sentences.add_pipe("sentencizer", first=True)
    expected = [_nested(d) for d in with_sentences.pipe(TEXTS)]
    assert any(spans for spans, _ in expected), "thresholds of 0 give the nested pipe output"
    for doc, (ents, sents), nested_out in zip(combined.pipe(TEXTS), before, expected):
        assert _ents(doc) == ents  # the ner output is untouched
        assert [s.start for s in doc.sents] == sents
        assert _nested(doc) == nested_out
    # the combined pipeline saves and loads like any other
    combined.to_disk(tmp_path / "combined")
    reloaded = spacy.load(tmp_path / "combined")
    for doc, (ents, _), nested_out in zip(reloaded.pipe(TEXTS), before, expected):
        assert _ents(doc) == ents
        assert _nested(doc) == nested_out


def test_add_pipe_to_an_existing_pipeline_and_train_only_it(app, tiny_bert):
    """A new nested pipe is trained inside the app with the other pipes frozen."""
    nlp = spacy.load(app)
    before = [_ents(d) for d in nlp.pipe(TEXTS)]
    nlp.add_pipe(PIPE, config={"model": {"encoder": {"name": tiny_bert}}})
    examples = _examples(nlp, flat=False)
    nlp.get_pipe(PIPE).initialize(lambda: examples, nlp=nlp)
    optimizer = nlp.create_optimizer()
    with nlp.select_pipes(enable=[PIPE]):
        for _ in range(3):
            losses = nlp.update(examples, sgd=optimizer)
    assert set(losses) == {PIPE}
    assert [_ents(d) for d in nlp.pipe(TEXTS)] == before
    assert all(KEY in d.spans for d in nlp.pipe(TEXTS))
