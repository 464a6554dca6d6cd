"""A block of a model's config returns the part it makes, kept by the model as it is: a config
that names another registered function for a block (returning an object of the same
interface) changes what the model does, as spancat's suggester or scorer can be swapped."""

from dataclasses import dataclass
from functools import wraps
from typing import List

import numpy as np
import pytest
import spacy
from helpers.configs import mrc_blocks
from helpers.locate_label import model_config as locate_label_config
from helpers.pipes import PIPE
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry

from spacy_nested_mrc.models.locate_label.blocks import (
    SoftNMSDecoder,
    configure_soft_nms_decoder,
)
from spacy_nested_mrc.models.mrc.blocks import (
    QueryWindows,
    configure_mrc_loss,
    configure_query_windows,
)
from spacy_nested_mrc.models.mrc.loss import MRCLoss
from spacy_nested_mrc.models.mrc.model import layout_of
from spacy_nested_mrc.models.mrc.rows import plan_reading
from spacy_nested_mrc.windows import Window

TEXT = "IL-2 gene expression . It needs NF-kappa B ."


@dataclass(frozen=True)
class WholeDocWindows(QueryWindows):
    """A window planner that reads a doc as one text, whatever its sentences."""

    def plan(self, counts: np.ndarray, starts, room: int) -> List[Window]:
        return super().plan(counts, None, room)


@registry.misc("test.whole_doc_windows.v1")
@wraps(configure_query_windows)  # its settings, checked by it
def whole_doc_windows(**settings) -> WholeDocWindows:
    planner = configure_query_windows(**settings)
    return WholeDocWindows(**vars(planner))


@dataclass(frozen=True)
class FirstTokenDecoder(SoftNMSDecoder):
    """A decoder that makes each doc's first token an entity of the first label, whatever
    the heads proposed."""

    def decode(self, doc, start, end, label, score, n_docs):
        spans = [np.asarray([[0, 1, 0]], dtype=np.int64) for _ in range(n_docs)]
        return spans, [np.ones(1, dtype=np.float32) for _ in range(n_docs)]


@registry.misc("test.first_token_decoder.v1")
@wraps(configure_soft_nms_decoder)
def first_token_decoder(**settings) -> FirstTokenDecoder:
    return FirstTokenDecoder(**vars(configure_soft_nms_decoder(**settings)))


CALLS: List[int] = []


@dataclass(frozen=True)
class CountingLoss(MRCLoss):
    """The MRC loss, counting its calls."""

    def __call__(self, *args, **kwargs):
        CALLS.append(1)
        return super().__call__(*args, **kwargs)


@registry.misc("test.counting_loss.v1")
@wraps(configure_mrc_loss)
def counting_loss(**settings) -> CountingLoss:
    return CountingLoss(**vars(configure_mrc_loss(**settings)))


def mrc_pipeline(encoder: str, **blocks: str):
    """An initialized packed MRC pipe whose blocks named in ``blocks`` are made by the
    registered functions given."""
    config = mrc_blocks(encoder={"name": encoder, "precision": "fp32"},
                        heads={"dropout": 0.0, "boundary_prior": 0.0, "match_hidden": 8},
                        **{block: {"@misc": function} for block, function in blocks.items()})
    nlp = spacy.blank("en")
    nlp.add_pipe(PIPE, config={"model": config})
    doc = nlp.make_doc(TEXT)
    reference = doc.copy()
    reference.spans["nested"] = [Span(reference, 0, 2, "DNA")]
    fix_random_seed(0)
    nlp.initialize(lambda: [Example(doc, reference)])
    return nlp, Example(nlp.make_doc(TEXT), reference)


def test_a_registered_window_planner_cuts_the_docs(tiny_bert):
    nlp, _ = mrc_pipeline(tiny_bert, windows="test.whole_doc_windows.v1")
    model = nlp.get_pipe(PIPE).model
    assert isinstance(model.attrs["settings"].windows, WholeDocWindows)
    doc = nlp.make_doc(TEXT)
    doc[5].is_sent_start = True  # two sentences: the block's own planner reads each alone
    _, windows = plan_reading(model, layout_of(model), [doc])
    assert len(windows[0]) == 1 and (windows[0][0].start, windows[0][0].end) == (0, len(doc))
    plain, _ = mrc_pipeline(tiny_bert)
    plain_model = plain.get_pipe(PIPE).model
    _, plain_windows = plan_reading(plain_model, layout_of(plain_model), [doc])
    assert [(w.start, w.end) for w in plain_windows[0]] == [(0, 5), (5, len(doc))]


def test_a_registered_loss_is_the_one_trained(tiny_bert):
    nlp, example = mrc_pipeline(tiny_bert, loss="test.counting_loss.v1")
    heads = nlp.get_pipe(PIPE).model.get_ref("heads").attrs["torch_module"]
    assert isinstance(heads.loss, CountingLoss)
    assert heads.loss.per_label == 0.5  # the architecture's per_label_loss, set on the part
    CALLS.clear()
    nlp.update([example])
    assert CALLS


def test_a_registered_decoder_picks_the_entities(tiny_bert):
    def pipeline(decoder: str):
        config = locate_label_config(tiny_bert, decoder={"@misc": decoder})
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe(PIPE, config={"model": config})
        for label in ("DNA", "protein"):
            pipe.add_label(label)
        fix_random_seed(0)
        nlp.initialize()
        return nlp

    texts = [TEXT, "Jurkat cells express IL-2 ."]
    swapped = [[(s.start, s.end, s.label_) for s in doc.spans["nested"]]
               for doc in pipeline("test.first_token_decoder.v1").pipe(texts)]
    assert swapped == [[(0, 1, "DNA")], [(0, 1, "DNA")]]
    plain = [[(s.start, s.end, s.label_) for s in doc.spans["nested"]]
             for doc in pipeline("spacy-nested-mrc.SoftNMSDecoder.v1").pipe(texts)]
    assert plain != swapped


@registry.misc("test.dict_windows.v1")
def dict_windows(window_wordpieces: int = 256) -> dict:
    return {"window_wordpieces": window_wordpieces}


@registry.misc("test.dict_decoder.v1")
def dict_decoder(nms_score: float = 0.45) -> dict:
    return {"nms_score": nms_score}


def test_a_block_that_gives_something_else_fails_with_a_coded_error(tiny_bert):
    config = mrc_blocks(encoder=tiny_bert, windows={"@misc": "test.dict_windows.v1"})
    with pytest.raises(ValueError, match=r"NME023.*'windows'.*QueryWindows.*QueryWindows\.v1"):
        spacy.blank("en").add_pipe(PIPE, config={"model": config})
    config = locate_label_config(tiny_bert, decoder={"@misc": "test.dict_decoder.v1"})
    with pytest.raises(ValueError, match=r"NME023.*'decoder'.*SoftNMSDecoder"):
        spacy.blank("en").add_pipe(PIPE, config={"model": config})
