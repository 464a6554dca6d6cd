"""Several corpora read as one, each drawn at its own weight: a user's own data beside public
corpora of related labels, each reader saying which labels its corpus annotates.

    [corpora.train]
    @readers = "spacy-nested-mrc.MixedCorpus.v1"
    weights = {"genia": 1.0, "bc2gm": 0.5}
    size = 0
    seed = 0

    [corpora.train.corpora.genia]
    @readers = "spacy-nested-mrc.JsonlCorpus.v1"
    path = ${paths.train}

    [corpora.train.corpora.bc2gm]
    @readers = "spacy-nested-mrc.JsonlCorpus.v1"
    path = "../shared/data/biomed-ner/bc2gm/train.jsonl.gz"
    labels = ["GENE"]

A call (``spacy train`` makes one, or one per epoch when it streams) yields ``size``
examples: each is drawn from a corpus chosen at random in proportion to the weights, and
each corpus is read in a shuffled order, from where the previous draw from it stopped,
shuffled anew and started over when it is used up. So a corpus of weight w gives about
w / sum(weights) of the examples, whatever its size: a small corpus is seen several times,
a large one in part.
"""

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Dict

import numpy as np
import spacy
from spacy.language import Language
from spacy.training import Example

from ..errors import Errors

Reader = Callable[[Language], Iterable[Example]]


class _Cycle:
    """The examples of one corpus in a shuffled order, read anew and shuffled again each
    time they run out."""

    def __init__(self, name: str, reader: Reader, seed: int, number: int) -> None:
        self.name = name
        self.reader = reader
        self.seed = (seed, number)
        self.passes = 0
        self.examples: Iterator[Example] = iter(())

    def next(self, nlp: Language) -> Example:
        example = next(self.examples, None)
        if example is None:
            examples = list(self.reader(nlp))
            if not examples:
                raise ValueError(Errors.NME221.format(
                    setting="corpora", problem=f"the corpus '{self.name}' holds no example"
                ))
            order = np.random.default_rng([*self.seed, self.passes]).permutation(len(examples))
            self.passes += 1
            self.examples = (examples[int(i)] for i in order)
            example = next(self.examples)
        return example


@spacy.registry.readers("spacy-nested-mrc.MixedCorpus.v1")
def create_mixed_reader(
    corpora: Dict[str, Any],
    weights: Dict[str, float],
    size: int = 0,
    seed: int = 0,
    redraw: bool = True,
) -> Reader:
    """Create a reader that draws from several corpora at their weights.

    corpora (Dict[str, Callable[[Language], Iterable[Example]]]): name -> reader, each a
        registered reader of its own section (``spacy-nested-mrc.JsonlCorpus.v1`` with the
        ``labels`` its corpus annotates, or any other).
    weights (Dict[str, float]): name -> weight > 0, one for every corpus: the expected share
        of a corpus among the examples is its weight over the sum of the weights.
    size (int): examples per call; 0: as many as the corpora hold together (counted by
        reading each once, at the first call).
    seed (int): the seed of the draws; call n draws with (seed, n), so a run is repeatable.
    redraw (bool): draw anew at each call (training); False: every call yields the same
        examples (a dev set, the same at every evaluation).
    RETURNS (Callable[[Language], Iterable[Example]]): the reader.
    RAISES (ValueError): NME221 when the corpora and weights do not match, a weight is not
        positive, ``size`` is negative, or (when read) a corpus holds no example.
    """
    names = sorted(corpora)
    problem = None
    if not names:
        problem = "no corpus is given"
    elif set(weights) != set(names):
        problem = (f"the corpora {names} and the weights {sorted(weights)} name different "
                   "corpora")
    elif not all(callable(reader) for reader in corpora.values()):
        problem = f"every corpus must be a reader, got {corpora}"
    elif any(not isinstance(w, (int, float)) or isinstance(w, bool) or not w > 0
             for w in weights.values()):
        problem = f"every weight must be a number > 0, got {weights}"
    elif not isinstance(size, int) or size < 0:
        problem = f"'size' must be an integer >= 0, got {size!r}"
    if problem is not None:
        raise ValueError(Errors.NME221.format(setting="corpora", problem=problem))
    share = np.asarray([weights[name] for name in names], dtype=np.float64)
    share /= share.sum()
    cycles = [_Cycle(name, corpora[name], seed, k) for k, name in enumerate(names)]
    calls = [0]
    total = [size]

    def read_examples(nlp: Language) -> Iterator[Example]:
        if total[0] == 0:
            total[0] = sum(sum(1 for _ in corpora[name](nlp)) for name in names)
        rng = np.random.default_rng([seed, calls[0]])
        if redraw:
            calls[0] += 1
        else:
            cycles[:] = [_Cycle(name, corpora[name], seed, k) for k, name in enumerate(names)]
        for k in rng.choice(len(names), size=total[0], p=share):
            yield cycles[int(k)].next(nlp)

    return read_examples
