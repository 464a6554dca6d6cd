"""A pipe's output compared bit for bit: ~70 short texts of the toy vocabulary, the spans and
scores a pipe writes for docs, and the check that two such outputs are identical."""

import numpy as np

from helpers.encoders import TINY_WORDS
from helpers.pipes import KEY, TRAIN, span_keys

# ~70 short texts of the toy vocabulary, the same on every run
_rng = np.random.default_rng(0)
SHORT_TEXTS = [t for t, _ in TRAIN] + [
    " ".join(_rng.choice(TINY_WORDS + ["IL-2", "Jurkat", "T"], size=int(_rng.integers(1, 9))))
    for _ in range(65)
]


def outputs(docs):
    return [(span_keys(doc), doc.spans[KEY].attrs["scores"]) for doc in docs]


def assert_bit_identical(a, b):
    assert len(a) == len(b)
    for (keys_a, scores_a), (keys_b, scores_b) in zip(a, b):
        assert keys_a == keys_b
        assert np.array_equal(scores_a, scores_b)
