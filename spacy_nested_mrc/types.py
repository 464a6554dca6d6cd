"""The small interface between the component and its models.

A model of ``nested_mrc_ner`` is a thinc ``Model[SpanBatch, SpanOutput]`` with these attrs:

- ``"set_labels"`` (Callable[[Model, List[str]], None]): fix the label set before
  initialization (the MRC model also resolves and checks each label's question here);
- ``"labels"`` (List[str]): the labels, in the order of the label ids used below;
- ``"docs_per_pass"`` (int): how many docs one forward/backward pass may take in training,
  so that memory stays flat in the number of labels (the component splits its batches);
  0 for the whole batch in one pass;
- ``"decode_settings"`` (Dict[str, List[str]]): the model's config settings that ``tune``
  searches on dev: ``"gates"`` decide which spans are scored at all (searched on a grid, a
  prediction pass each), ``"score_cuts"`` drop spans below a final score (set to the tuned
  ``threshold`` of the component, which cuts the same scores).

- ``"get_loss"`` (Callable[[Model, Any], Tuple[float, Any]]): the loss of a training
  pass's ``SpanOutput.scored`` and its gradient with respect to those scores.

Prediction: ``model.predict(SpanBatch(docs))`` gives scored spans. Training:
``model.begin_update(SpanBatch(docs, gold))`` gives the pass's scores with their gold
(``SpanOutput.scored``); the component's ``get_loss`` turns them into the loss and its
gradient ``d_scores``, and ``backprop(d_scores)`` adds the gradients of the parameters, as in
spaCy's trainable pipes.
"""

from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np
from spacy.tokens import Doc


@dataclass
class SpanBatch:
    """Docs, and in training their gold spans.

    docs (List[Doc]): the docs.
    gold (Optional[List[np.ndarray]]): per doc, [S, 3] int rows (start, end, label id) in
        the doc's own tokens; None at prediction.
    unannotated (Optional[List[Optional[np.ndarray]]]): training: per doc, [N] bool, the
        tokens of text given as context only (no annotation: neither learned nor scored),
        or None where the whole doc is annotated.
    """

    docs: List[Doc]
    gold: Optional[List[np.ndarray]] = None
    unannotated: Optional[List[Optional[np.ndarray]]] = None


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
