"""The Locate-and-Label model as a thinc ``Model[SpanBatch, SpanOutput]``.

Docs go once through the ``tok2vec`` sublayer (its own transformer, or a listener of a shared
``transformer`` component); every span whose width is one of ``window_sizes`` is a seed span.
The heads of ``torch_module.LocateLabelHeads`` filter the seeds, regress their boundaries and
classify the adjusted spans; ``decode.decode_proposals`` picks the entities with Soft-NMS.
One pass per doc: the number of labels changes only the classifier's output.
"""

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from spacy.tokens import Doc
from spacy.util import registry
from spacy.vocab import Vocab
from spacy_transformers.layers import TransformerListener
from spacy_transformers.pipeline_component import DOC_EXT_ATTR as TRF_DATA
from thinc.api import (
    ArgsKwargs,
    Model,
    get_torch_default_device,
    torch2xp,
    xp2torch,
)
from thinc.types import Floats2d

from ...encoder.hf import safe_loading, to_device
from ...errors import Errors, Warnings
from ...runtime.precision import autocast
from ...spans import best_match, enumerate_spans, ranks_in_groups, within_sentences
from ...types import CONTRACT, SETTINGS, ModelContract, SpanBatch, SpanOutput
from ...validation import check_positive
from ..wrapping import build_heads, heads_loss, needs_backprop, torch_module
from .blocks import LocateLabelBlocks, LocateLabelHeadsSettings, Seeds, SoftNMSDecoder
from .loss import LocateLabelLoss, is_positive, regression_targets, soft_example_weights
from .torch_module import LocateLabelHeads

# docs_per_pass when passes are not limited: the whole batch in one pass
NO_LIMIT = 2**31 - 1


# the prediction settings ``tune`` searches on dev (see ``spacy_nested_mrc.types``), by their
# path in the model's config: the filter decides which seed spans are proposed; Soft-NMS's
# delta cuts the final scores
DECODE_SETTINGS = {"gates": ["decoder.filter_threshold"], "score_cuts": ["decoder.nms_score"]}


@registry.architectures("spacy-nested-mrc.LocateAndLabel.v2")
def build_locate_label_model(
    tok2vec: Model[List[Doc], List[Floats2d]],
    seeds: Seeds,
    heads: LocateLabelHeadsSettings,
    loss: LocateLabelLoss,
    decoder: SoftNMSDecoder,
    max_docs_per_pass: int = 0,
) -> Model[SpanBatch, SpanOutput]:
    """Build the Locate-and-Label model (Shen et al., 2021).

    tok2vec (Model[List[Doc], List[Floats2d]]): token vectors, e.g.
        spacy-transformers.TransformerListener.v1 (a shared ``transformer`` component) or
        spacy-transformers.Tok2VecTransformer.v3 (an encoder of its own).
    seeds (Seeds): the seed spans and the training examples
        (``spacy-nested-mrc.SeedSpans.v1``).
    heads (LocateLabelHeadsSettings): filter, regressor and classifier
        (``spacy-nested-mrc.LocateLabelHeads.v1``).
    loss (LocateLabelLoss): their joint loss (``spacy-nested-mrc.LocateLabelLoss.v1``).
    decoder (SoftNMSDecoder): proposals to entities (``spacy-nested-mrc.SoftNMSDecoder.v1``).
    max_docs_per_pass (int): docs per training pass; 0 for the whole batch, which a tok2vec
        listening to a transformer component requires.
    RETURNS (Model[SpanBatch, SpanOutput]): the model.
    """
    check_positive("max_docs_per_pass", max_docs_per_pass, allow_zero=True)
    blocks = LocateLabelBlocks(seeds, heads, loss, decoder)  # NME023 for a foreign part
    if seeds.hard_negative_ratio > 0 and not heads.use_filter:
        raise ValueError(Errors.NME022.format(value=seeds.hard_negative_ratio))
    if max_docs_per_pass and any(isinstance(n, TransformerListener) for n in tok2vec.walk()):
        raise ValueError(Errors.NME020.format(value=max_docs_per_pass))
    for node in tok2vec.walk():  # spacy-transformers' own layers too: weights load safely
        safe_loading(node)
    heads_module = LocateLabelHeads(heads, seeds, decoder=decoder, loss=loss)
    heads_layer = build_heads(
        heads_module,
        _heads_inputs,
        precision=heads.precision,
        grad_scaler_config=heads.grad_scaler_config,
        lr_scale=heads.lr_scale,
    )
    return Model(
        "locate_label",
        forward,
        init=init,
        layers=[tok2vec, heads_layer],
        refs={"tok2vec": tok2vec, "heads": heads_layer},
        attrs={
            "labels": [],
            CONTRACT: ModelContract(
                set_labels=set_labels, get_loss=heads_loss, decode_settings=DECODE_SETTINGS
            ),
            "docs_per_pass": max_docs_per_pass or NO_LIMIT,
            SETTINGS: blocks,
            "sample_step": 0,
            "last_seed_counts": [],
            "last_proposal_counts": [],
        },
    )


def set_labels(model: Model, labels: Sequence[str]) -> None:
    """Fix the labels (class 0 of the classifier is "none", label k is class k + 1)."""
    model.attrs["labels"] = list(labels)
    _heads_module(model).set_classes(len(labels) + 1)


def init(model: Model, X: Optional[SpanBatch] = None, Y: Any = None) -> Model:
    """Initialize the tok2vec (loading its encoder) and size the heads to its width."""
    tok2vec = model.get_ref("tok2vec")
    tok2vec.initialize(X=X.docs if X is not None and X.docs else None)
    width = tok2vec.predict([Doc(Vocab(), words=["width"])])[0].shape[1]
    _heads_module(model).materialize(int(width), get_torch_default_device())
    return model


def forward(model: Model, batch: SpanBatch, is_train: bool):
    """Training: the heads' scores of the batch in one pass and their gold
    (``SpanOutput.scored``), the backprop taking the loss's gradient with respect to them
    (``heads_loss``); prediction: scored spans, with the number
    of seed spans and of proposals (seeds kept by the filter, at most ``max_proposals``) of
    each doc left in ``model.attrs["last_seed_counts"]`` and ``["last_proposal_counts"]``."""
    if not model.attrs["labels"] or not _heads_module(model).materialized:
        raise ValueError(Errors.NME001.format(name=model.name))
    if is_train:
        return _train(model, batch)
    return _predict(model, batch), lambda d_scores: None


@dataclass
class SeedSample:
    """The seed spans of a training batch, with their targets.

    doc, start, end (np.ndarray): [S] int64 the seed spans.
    overlap (np.ndarray): [S] IoU with the best-matching gold entity of the doc.
    positive (np.ndarray): [S] bool, overlap >= alpha_1.
    targets (np.ndarray): [S, 4] float32 offsets (left, right) to the matched entity, and its
        (start, end); zeros where there is none.
    weights (np.ndarray): [S] float32 soft-example weights of the filter.
    """

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    overlap: np.ndarray
    positive: np.ndarray
    targets: np.ndarray
    weights: np.ndarray


def sample_seeds(
    lengths: Sequence[int],
    gold: np.ndarray,
    seeds: Seeds,
    rng: np.random.Generator,
    filter_probs: Optional[np.ndarray] = None,
    allowed: Optional[np.ndarray] = None,
) -> SeedSample:
    """Enumerate the seed spans of a batch, match each to its gold entity of largest IoU, keep
    the positives and choose the negatives: per doc, the ``hard_negative_ratio`` quota of
    highest ``filter_probs``, then the ``negative_ratio`` quota at random from the rest.

    lengths (Sequence[int]): [D] tokens per doc.
    gold (np.ndarray): [G, 4] int (doc, start, end, label id).
    seeds (Seeds): window sizes, alpha_1, eta, negative ratios (``SeedSpans.v1``).
    rng (np.random.Generator): the sampler.
    filter_probs (Optional[np.ndarray]): [S] the filter's probability of every seed span,
        in ``enumerate_spans`` order; needed where ``hard_negative_ratio`` > 0.
    allowed (Optional[np.ndarray]): [S] bool in ``enumerate_spans`` order, the seeds that
        may be sampled (``within_sentences``: inside one sentence, no context-only token);
        None: all of them.
    RETURNS (SeedSample): the chosen seeds, by doc then start then width.
    """
    doc, start, end = enumerate_spans(lengths, seeds.window_sizes)
    if allowed is not None:
        doc, start, end = doc[allowed], start[allowed], end[allowed]
        if filter_probs is not None:
            filter_probs = filter_probs[allowed]
    index, overlap = best_match(start, end, gold[:, 1], gold[:, 2], doc, gold[:, 0])
    positive = is_positive(overlap, seeds.filter_iou)
    keep = positive.copy()
    n_pos = np.maximum(np.bincount(doc[positive], minlength=len(lengths)), 1)
    negatives = np.flatnonzero(~positive)
    if seeds.hard_negative_ratio > 0:
        assert filter_probs is not None and len(filter_probs) == len(doc)
        quota = np.ceil(seeds.hard_negative_ratio * n_pos).astype(np.int64)
        # the most probable negatives of each doc first
        rank = ranks_in_groups(doc[negatives], np.argsort(-filter_probs[negatives], kind="stable"))
        keep[negatives[rank < quota[doc[negatives]]]] = True
        negatives = negatives[~keep[negatives]]
    if seeds.negative_ratio > 0:
        quota = np.ceil(seeds.negative_ratio * n_pos).astype(np.int64)
        # a random rank per negative within its doc: the `quota` lowest are kept
        rank = ranks_in_groups(doc[negatives], rng.permutation(len(negatives)))
        keep[negatives[rank < quota[doc[negatives]]]] = True
    else:
        keep[:] = True
    matched = gold[np.maximum(index, 0)] if len(gold) else np.zeros((len(doc), 4), np.int64)
    targets = np.concatenate(
        [
            regression_targets(start, end, matched[:, 1], matched[:, 2]),
            matched[:, 1:3].astype(np.float32),
        ],
        axis=1,
    )
    targets[~positive] = 0.0
    if seeds.use_soft_examples:
        weights = soft_example_weights(overlap, seeds.filter_iou, seeds.soft_eta)
    else:
        weights = np.ones(len(doc), dtype=np.float32)
    return SeedSample(
        doc[keep],
        start[keep],
        end[keep],
        overlap[keep],
        positive[keep],
        targets[keep],
        weights[keep],
    )


def _train(model: Model, batch: SpanBatch):
    blocks: LocateLabelBlocks = model.attrs[SETTINGS]
    sampling = blocks.seeds
    docs = batch.docs
    gold = _stack_gold(batch.gold if batch.gold is not None else [])
    step = model.attrs["sample_step"]
    model.attrs["sample_step"] = step + 1
    rng = np.random.default_rng([sampling.seed, step])
    lengths = [len(doc) for doc in docs]
    if not sum(lengths):
        return SpanOutput(), lambda d_scores: None
    Xs, backprop_tok2vec = model.get_ref("tok2vec")(docs, True)
    doc, start, end = enumerate_spans(lengths, sampling.window_sizes)
    allowed = within_sentences(lengths, batch.starts(), doc, start, end, batch.unannotated)
    filter_probs = None
    if sampling.hard_negative_ratio > 0:
        tokens = [xp2torch(x) for x in Xs]
        with autocast(blocks.heads.precision):
            filter_probs = _heads_module(model).filter_probs(
                tokens, to_device(doc), to_device(start), to_device(end)
            )
    seeds = sample_seeds(lengths, gold, sampling, rng, filter_probs, allowed)
    if len(seeds.doc) == 0:  # no doc as long as the narrowest seed width
        return SpanOutput(), lambda d_scores: None
    masks = _padded_masks(batch, len(model.attrs["labels"]))
    weights = seeds.weights
    if masks is not None:
        # a seed matching no entity in text that annotates some labels only may be an
        # entity of another: the filter is not taught that it is none
        partial = ~masks[seeds.doc, seeds.start].all(axis=1)
        weights = np.where(seeds.positive | ~partial, weights, 0.0).astype(np.float32)
    tensors = {
        "seed_doc": to_device(seeds.doc),
        "seed_start": to_device(seeds.start),
        "seed_end": to_device(seeds.end),
        "lengths": to_device(np.asarray(lengths)),
        "filter_target": to_device(seeds.positive, torch.float32),
        "filter_weight": to_device(weights, torch.float32),
        "positive": to_device(seeds.positive, torch.bool),
        "offset_target": to_device(seeds.targets, torch.float32),
        "gold": gold,
        "label_mask": masks,
    }
    scored, backprop_heads = model.get_ref("heads")((Xs, tensors), True)

    def backprop(d_scores: Tuple[torch.Tensor, ...]) -> None:
        if needs_backprop(scored):
            backprop_tok2vec(backprop_heads(d_scores))

    return SpanOutput(scored=scored), backprop


def check_upstream_ran(tok2vec: Model, docs: List[Doc]) -> None:
    """Refuse to predict from a listener whose upstream component has not run on ``docs``:
    spacy-transformers' listener would give every token a zero vector and the pipe the same
    spans whatever the text (a pipe added with ``add_pipe(source=...)`` without its
    ``transformer``).

    tok2vec (Model): the token vector layer, a listener or a layer of its own.
    docs (List[Doc]): the docs about to be predicted.
    """
    for listener in tok2vec.walk():
        if not isinstance(listener, TransformerListener):
            continue
        if any(len(doc) and doc._.get(TRF_DATA) is None for doc in docs):
            upstream = listener.upstream_name
            raise ValueError(Errors.NME050.format(
                upstream="transformer" if upstream == "*" else upstream))


def _predict(model: Model, batch: SpanBatch) -> SpanOutput:
    blocks: LocateLabelBlocks = model.attrs[SETTINGS]
    docs, starts = batch.docs, batch.starts()
    check_upstream_ran(model.get_ref("tok2vec"), docs)
    n = len(docs)
    output = SpanOutput(
        spans=[np.zeros((0, 3), dtype=np.int64)] * n, scores=[np.zeros(0, np.float32)] * n
    )
    seed_counts, proposal_counts = [0] * n, [0] * n
    dropped = np.zeros(n, dtype=np.int64)  # proposals over the cap, per doc
    # docs of similar length share a pass, so little of each pass is padding
    by_length = sorted(range(n), key=lambda k: len(docs[k]))
    step = model.attrs["docs_per_pass"]
    for begin in range(0, n, step):
        chosen = by_length[begin : begin + step]
        lengths = [len(docs[k]) for k in chosen]
        seed_doc, seed_start, seed_end = enumerate_spans(lengths, blocks.seeds.window_sizes)
        inside = within_sentences(
            lengths, [starts[k] for k in chosen], seed_doc, seed_start, seed_end
        )
        seed_doc, seed_start, seed_end = seed_doc[inside], seed_start[inside], seed_end[inside]
        if len(seed_doc) == 0:
            continue
        Xs = model.get_ref("tok2vec").predict([docs[k] for k in chosen])
        tensors = {
            "seed_doc": to_device(seed_doc),
            "seed_start": to_device(seed_start),
            "seed_end": to_device(seed_end),
            "lengths": to_device(np.asarray(lengths)),
        }
        passed_doc, kept_doc, doc, start, end, label, score = model.get_ref("heads").predict(
            (Xs, tensors)
        )
        spans, scores = blocks.decoder.decode(doc, start, end, label, score, len(chosen))
        n_seeds = np.bincount(seed_doc, minlength=len(chosen))
        n_kept = np.bincount(kept_doc, minlength=len(chosen))
        dropped[chosen] = np.bincount(passed_doc, minlength=len(chosen)) - n_kept
        for i, k in enumerate(chosen):
            output.spans[k], output.scores[k] = spans[i], scores[i]
            seed_counts[k], proposal_counts[k] = int(n_seeds[i]), int(n_kept[i])
    model.attrs["last_seed_counts"] = seed_counts
    model.attrs["last_proposal_counts"] = proposal_counts
    if dropped.any():  # one warning per call, never a silent cut
        count = int(dropped.sum())
        warnings.warn(
            Warnings.NMW120.format(
                count=count,
                plural="" if count == 1 else "s",
                docs=int(np.count_nonzero(dropped)),
                cap=blocks.decoder.max_proposals,
            )
        )
    return output


def _padded_masks(batch: SpanBatch, n_labels: int) -> Optional[np.ndarray]:
    """RETURNS (Optional[np.ndarray]): [D, N, C] bool, the batch's label masks
    (``SpanBatch.label_mask``) padded to the longest doc (every label where a doc has none),
    or None when every doc is annotated for every label."""
    if batch.label_mask is None or all(mask is None for mask in batch.label_mask):
        return None
    longest = max(1, max(len(doc) for doc in batch.docs))
    table = np.ones((len(batch.docs), longest, n_labels), dtype=bool)
    for d, mask in enumerate(batch.label_mask):
        if mask is not None:
            table[d, : len(mask)] = mask
    return table


def _stack_gold(gold: List[np.ndarray]) -> np.ndarray:
    """Per-doc gold rows [G_d, 3] (start, end, label) -> [G, 4] (doc, start, end, label)."""
    rows = [
        np.concatenate([np.full((len(g), 1), d, dtype=np.int64), np.asarray(g, np.int64)], 1)
        for d, g in enumerate(gold)
        if len(g)
    ]
    return np.concatenate(rows) if rows else np.zeros((0, 4), dtype=np.int64)


def _heads_module(model: Model) -> LocateLabelHeads:
    return torch_module(model.get_ref("heads"))


def _heads_inputs(model: Model, X: Tuple[List[Floats2d], Dict[str, Any]], is_train: bool):
    Xs, tensors = X
    tokens = [xp2torch(x, requires_grad=is_train) for x in Xs]

    def get_dXs(d_inputs: ArgsKwargs) -> List[Floats2d]:
        grads = d_inputs.args[0]
        return [
            model.ops.alloc2f(*x.shape) if g is None else torch2xp(g) for x, g in zip(Xs, grads)
        ]

    return ArgsKwargs(args=(tokens,), kwargs=tensors), get_dXs
