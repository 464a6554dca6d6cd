"""Batches read ahead by tokens (``runtime.batching``)."""
import pytest

from spacy_nested_mrc.runtime.batching import read_ahead


@pytest.mark.parametrize(
    "lengths,min_items,min_tokens,expected",
    [
        ([3, 1, 4, 1, 5], 2, 0, [[3, 1], [4, 1], [5]]),  # spaCy's minibatch
        ([3, 1, 4, 1, 5], 2, 6, [[3, 1, 4], [1, 5]]),  # the tokens decide
        ([3, 1, 4, 1, 5], 2, 2, [[3, 1], [4, 1], [5]]),  # the items decide
        ([9, 1, 1], 1, 5, [[9], [1, 1]]),  # one long item is a batch
        ([], 2, 5, []),
    ],
)
def test_read_ahead_hand_worked(lengths, min_items, min_tokens, expected):
    stream = ["x" * n for n in lengths]
    batches = list(read_ahead(iter(stream), min_items, min_tokens))
    assert [[len(item) for item in batch] for batch in batches] == expected
    assert [item for batch in batches for item in batch] == stream  # in order, all of it
