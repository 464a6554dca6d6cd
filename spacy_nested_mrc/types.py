"""The interface between the component and its models.

A model of ``nested_mrc_ner`` is a thinc ``Model[SpanBatch, SpanOutput]`` that declares what
the pipe needs from it in a ``ModelContract`` kept in ``attrs["contract"]`` (as spaCy's
spancat takes a ``Suggester``): how to fix its labels, its loss, the settings ``tune``
searches and what to derive after loading. The pipe reads the contract through
``contract_of`` and nothing else of the model's attrs but these two learned values:

- ``"labels"`` (List[str]): the labels, in the order of the label ids used below;
- ``"docs_per_pass"`` (int): how many docs one forward/backward pass may take in training,
  so that memory stays flat in the number of labels (the component splits its batches);
  0 for the whole batch in one pass.

Settings: what a layer's config sets and a saved pipeline must not override (the windows of
a long doc, the rows of a pass, the decoding) lives in one frozen dataclass per layer in
``attrs["settings"]``: for a model, the parts its config's blocks returned, kept as they are
(``QueryBlocks``, ``LocateLabelBlocks``). thinc serializes the attrs it can (msgpack) and
skips the rest, so a loaded layer always has the settings of the config it was built from
(``spacy.load(path, config=...)``, a tuned config), whichever pipe loads it; learned values
(labels, questions, span limits) are plain attrs and are restored as saved.

Prediction: ``model.predict(SpanBatch(docs))`` gives scored spans. The pipe says by which
sentences each doc is read (``SpanBatch.sentence_starts``); a model windows and proposes
spans within them. Training:
``model.begin_update(SpanBatch(docs, gold))`` gives the pass's scores with their gold
(``SpanOutput.scored``); the contract's ``get_loss`` turns them into the loss and its
gradient ``d_scores``, and ``backprop(d_scores)`` adds the gradients of the parameters, as in
spaCy's trainable pipes.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc
from thinc.api import Model

from .errors import Errors
from .spans import sentence_starts

# where a model keeps its contract, and a layer its config-governed settings
CONTRACT = "contract"
SETTINGS = "settings"
# the ``doc.spans`` key the pipe writes, and its readers and tools read, by default
DEFAULT_SPANS_KEY = "nested"


@dataclass
class SpanBatch:
    """Docs, and in training their gold spans.

    docs (List[Doc]): the docs.
    gold (Optional[List[np.ndarray]]): per doc, [S, 3] int rows (start, end, label id) in
        the doc's own tokens; None at prediction.
    unannotated (Optional[List[Optional[np.ndarray]]]): training: per doc, [N] bool, the
        tokens of text given as context only (no annotation: neither learned nor scored),
        or None where the whole doc is annotated.
    label_mask (Optional[List[Optional[np.ndarray]]]): training: per doc, [N, K] bool,
        the labels each token is annotated for (its corpus's labels,
        ``annotation.label_mask``), or None where it is annotated for every label. A model
        learns nothing of label k at a token where it is False: no question asked, no
        negative taught.
    sentence_starts (Optional[List[Optional[np.ndarray]]]): per doc, the ascending token
        indices where the sentences the model reads start (the doc's own boundaries or
        those the pipe found, ``sentences.reading_starts``), None for a doc read as one
        text; None for the list: each doc's own boundaries.
    """

    docs: List[Doc]
    gold: Optional[List[np.ndarray]] = None
    unannotated: Optional[List[Optional[np.ndarray]]] = None
    sentence_starts: Optional[List[Optional[np.ndarray]]] = None
    label_mask: Optional[List[Optional[np.ndarray]]] = None

    def starts(self) -> List[Optional[np.ndarray]]:
        """RETURNS (List[Optional[np.ndarray]]): per doc, where its sentences start as the
        model reads it (``sentence_starts``, else the doc's own boundaries)."""
        if self.sentence_starts is not None:
            return list(self.sentence_starts)
        return [sentence_starts(doc) for doc in self.docs]


@dataclass
class SpanOutput:
    """What a model returns.

    spans (List[np.ndarray]): per doc, [S, 3] int rows (start, end, label id), sorted.
    scores (List[np.ndarray]): per doc, [S] float confidences in [0, 1].
    scored (Any): training: the heads' scores and their gold (``models.wrapping.Scored``);
        None at prediction and for a pass with nothing to learn.
    """

    spans: List[np.ndarray] = field(default_factory=list)
    scores: List[np.ndarray] = field(default_factory=list)
    scored: Any = None


@dataclass(frozen=True)
class ModelContract:
    """What ``nested_mrc_ner`` needs from its model, beyond thinc's ``Model`` API.

    set_labels (Callable[[Model, List[str]], None]): fix the label set before
        initialization (the MRC model also resolves and checks each label's question).
    get_loss (Callable[[Model, Any], Tuple[float, Any]]): the loss of a training pass's
        ``SpanOutput.scored`` and its gradient with respect to those scores.
    decode_settings (Dict[str, Sequence[str]]): the model's config settings that ``tune``
        searches on dev: ``"gates"`` decide which spans are scored at all (searched on a
        grid, a prediction pass each), ``"score_cuts"`` drop spans below a final score (set
        to the tuned ``threshold`` of the component, which cuts the same scores).
    after_load (Optional[Callable[[Model], None]]): derive, after the weights and learned
        attrs are loaded, what depends on both them and the settings (the passes, the span
        limit); None: nothing to derive.
    set_longest_entity (Optional[Callable[[Model, int], None]]): give the model the longest
        training entity (in tokens), called before ``set_labels`` at initialization, for a
        model that limits span lengths by it; None: the model does not use it.
    relabel (Optional[Callable[[Model, List[str], Dict[str, str]], None]]): give a trained
        model a new label set, keeping its weights, with the questions given for some
        labels (a label is a question: the MRC family's heads are shared by every label, so
        a label enters by its question and is predicted before any training on it); None:
        the model has parts per label and must be trained with its labels.
    ask (Optional[Callable[[Model, str, str], None]]): give a label its question before
        initialization (a model that reads a label as a question: the MRC family); None:
        the model asks no questions.
    """

    set_labels: Callable[[Model, List[str]], None]
    get_loss: Callable[[Model, Any], Tuple[float, Any]]
    decode_settings: Dict[str, Sequence[str]] = field(
        default_factory=lambda: {"gates": (), "score_cuts": ()}
    )
    after_load: Optional[Callable[[Model], None]] = None
    set_longest_entity: Optional[Callable[[Model, int], None]] = None
    relabel: Optional[Callable[[Model, List[str], Dict[str, str]], None]] = None
    ask: Optional[Callable[[Model, str, str], None]] = None


def contract_of(model: Model) -> ModelContract:
    """The contract a pipe's model declares.

    model (Model): the pipe's model.
    RETURNS (ModelContract): its contract.
    RAISES (ValueError): NME015 when the model declares none (an architecture of another
        package that does not follow the contract).
    """
    contract = model.attrs.get(CONTRACT)
    if not isinstance(contract, ModelContract):
        raise ValueError(Errors.NME015.format(name=model.name))
    return contract
