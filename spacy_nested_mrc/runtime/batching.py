"""Batches of docs for prediction: read ahead by tokens, so that a model that reads a batch's
docs by length (fewer, fuller encoder calls) sees more of them at once."""
from typing import Iterable, Iterator, List, Sized, TypeVar

Item = TypeVar("Item", bound=Sized)


def read_ahead(stream: Iterable[Item], min_items: int, min_tokens: int) -> Iterator[List[Item]]:
    """The stream in order, in batches of at least ``min_items`` items that hold at least
    ``min_tokens`` tokens between them (``len`` of each), the last one whatever is left.
    ``min_tokens`` 0: batches of ``min_items`` (spaCy's ``minibatch``). Memory: a batch
    holds at most ``min_items`` items beyond the first ``min_tokens`` tokens' worth.

    YIELDS (List[Item]): a batch.
    """
    batch: List[Item] = []
    tokens = 0
    for item in stream:
        batch.append(item)
        tokens += len(item)
        if len(batch) >= max(1, min_items) and tokens >= min_tokens:
            yield batch
            batch, tokens = [], 0
    if batch:
        yield batch
