"""The encoder layers built for a config (``spacy_nested_mrc.encoder.build``): the shared
``transformer`` component's settings, and the own-window alignment of its token vectors."""

import numpy as np
import pytest
import spacy
from helpers.locate_label import ENCODER, shipped_pipeline
from thinc.types import Ragged

from spacy_nested_mrc.encoder.build import own_window_alignment


def test_max_windows_per_pass_is_validated(tiny_bert, tmp_path):
    key = f"{ENCODER}.max_windows_per_pass"
    with pytest.raises(ValueError, match="NME003.*max_windows_per_pass"):
        shipped_pipeline("locate_label_cpu.cfg", tiny_bert, tmp_path, {key: -1})


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
