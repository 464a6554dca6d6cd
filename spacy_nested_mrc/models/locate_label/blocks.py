"""The blocks of ``LocateAndLabel.v2``'s config: each a registered function (``@misc``) that
checks its settings and returns the part they make: the seed sampler's settings (``Seeds``),
the heads' (``LocateLabelHeadsSettings``), the loss (``loss.LocateLabelLoss``) and the decoder
(``SoftNMSDecoder``, whose ``decode`` picks the entities). The model keeps the parts
themselves (``LocateLabelBlocks``, its ``attrs["settings"]``), so a config naming another
registered function for a block changes the model. A setting's default is the one in its
block's signature, and nowhere else. The defaults follow the paper's GENIA setting.

    [components.nested_mrc_ner.model.tok2vec]   token vectors (a spacy-transformers layer)
    [components.nested_mrc_ner.model.seeds]     the seed spans and the training examples
    [components.nested_mrc_ner.model.heads]     filter, boundary regressor, classifier
    [components.nested_mrc_ner.model.loss]      their training loss
    [components.nested_mrc_ner.model.decoder]   from proposals to entities (Soft-NMS)
"""

from dataclasses import dataclass
from typing import Any, Dict, Sequence, Tuple

from spacy.util import registry

from ...errors import Errors
from ...runtime.precision import (
    DEFAULT_GRAD_SCALER_CONFIG,
    DEFAULT_PRECISION,
    check_precision,
)
from ...validation import (
    check_bool,
    check_non_negative,
    check_parts,
    check_positive,
    check_probability,
)
from .decode import SoftNMSDecoder
from .loss import LocateLabelLoss

# seed span widths of the paper's GENIA setting; for ACE04/ACE05 it used
# [1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 15]
DEFAULT_WINDOW_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
# each block of LocateAndLabel.v2 and the registered function that makes its part
BLOCK_FUNCTIONS: Dict[str, str] = {
    "seeds": "spacy-nested-mrc.SeedSpans.v1",
    "heads": "spacy-nested-mrc.LocateLabelHeads.v1",
    "loss": "spacy-nested-mrc.LocateLabelLoss.v1",
    "decoder": "spacy-nested-mrc.SoftNMSDecoder.v1",
}


@dataclass(frozen=True)
class Seeds:
    """The settings of ``spacy-nested-mrc.SeedSpans.v1``."""

    window_sizes: Tuple[int, ...]
    filter_iou: float
    classifier_iou: float
    negative_ratio: float
    hard_negative_ratio: float
    soft_eta: float
    use_soft_examples: bool
    classifier_gold: bool
    seed: int


@registry.misc("spacy-nested-mrc.SeedSpans.v1")
def configure_seed_spans(
    window_sizes: Sequence[int] = DEFAULT_WINDOW_SIZES,
    filter_iou: float = 0.7,
    classifier_iou: float = 1.0,
    negative_ratio: float = 5.0,
    hard_negative_ratio: float = 0.0,
    soft_eta: float = 1.0,
    use_soft_examples: bool = True,
    classifier_gold: bool = False,
    seed: int = 0,
) -> Seeds:
    """The seed spans, and the examples training draws from them.

    window_sizes (List[int]): widths of the seed spans; entities longer than the widest are
        still reached by regression. GENIA: 1-10; the paper used [1-7, 9, 11, 13, 15] on ACE.
    filter_iou (float): alpha_1, the IoU with a gold entity from which a seed span is positive
        for the filter and the regressor.
    classifier_iou (float): alpha_2, the IoU from which an adjusted span takes the entity's
        label in the classifier's training (1.0: only exact matches).
    negative_ratio (float): negative seed spans sampled per positive one in training (at
        least this many per doc); 0 keeps every negative.
    hard_negative_ratio (float): negative seed spans per positive one (at least this many per
        doc) chosen in training as the filter's current highest-scoring negatives, before the
        random ones (not in the paper). Randomly sampled negatives are mostly easy, while in
        prediction the filter passes, and the classifier labels, the spans that look like
        entities: this trains filter and classifier on those (hard-example mining); the
        filter scores every seed span of the batch once more, without gradient. 0: random
        negatives only, as in the paper. Needs the filter.
    soft_eta (float): eta, the focusing parameter of the soft-example weights (eq. 11).
    use_soft_examples (bool): weigh each example by its IoU (the paper's soft examples);
        false: every example weighs 1 (an ablation).
    classifier_gold (bool): train the classifier on the gold entities too, not only on the
        adjusted seed spans (not in the paper; helps while the regressor is still poor).
    seed (int): the seed of the negative sampling.
    RETURNS (Seeds): the settings.
    """
    sizes = list(window_sizes) if isinstance(window_sizes, (list, tuple)) else None
    if (
        not sizes
        or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in sizes)
        or len(set(sizes)) != len(sizes)
    ):
        raise ValueError(Errors.NME021.format(value=window_sizes))
    for name, value in (("filter_iou", filter_iou), ("classifier_iou", classifier_iou)):
        check_probability(name, value)
    for name, value in (("negative_ratio", negative_ratio),
                        ("hard_negative_ratio", hard_negative_ratio), ("soft_eta", soft_eta)):
        check_non_negative(name, value)
    check_bool("use_soft_examples", use_soft_examples)
    check_bool("classifier_gold", classifier_gold)
    check_positive("seed", seed, allow_zero=True)
    return Seeds(tuple(sorted(sizes)), filter_iou, classifier_iou, negative_ratio,
                 hard_negative_ratio, soft_eta, use_soft_examples, classifier_gold, seed)


@dataclass(frozen=True)
class LocateLabelHeadsSettings:
    """The settings of ``spacy-nested-mrc.LocateLabelHeads.v1``."""

    hidden_width: int
    dropout: float
    use_filter: bool
    use_regressor: bool
    max_span_tokens: int
    lr_scale: float
    precision: str
    grad_scaler_config: Dict[str, Any]


@registry.misc("spacy-nested-mrc.LocateLabelHeads.v1")
def configure_locate_label_heads(
    hidden_width: int = 768,
    dropout: float = 0.5,
    use_filter: bool = True,
    use_regressor: bool = True,
    max_span_tokens: int = 65536,
    lr_scale: float = 1.0,
    precision: str = DEFAULT_PRECISION,
    grad_scaler_config: Dict[str, Any] = DEFAULT_GRAD_SCALER_CONFIG,
) -> LocateLabelHeadsSettings:
    """The filter, the boundary regressor and the classifier
    (``torch_module.LocateLabelHeads``).

    hidden_width (int): hidden width of the three MLPs (the paper: the encoder's width).
    dropout (float): dropout in the heads.
    use_filter, use_regressor (bool): ablation switches. Without the filter every seed span
        is a proposal; without the regressor proposals keep their seed boundaries.
    max_span_tokens (int): token vectors gathered at once to max-pool spans (memory only).
    lr_scale (float): the heads learn at this multiple of the training learn rate.
    precision (str): the arithmetic of the heads, in training and prediction: "fp32",
        "bf16", "fp16" or "auto" (``runtime.precision``); the token vectors' is their layer's (the
        ``transformer`` component's ``precision``). Losses, Soft-NMS and scores are float32.
    grad_scaler_config (dict): settings of the gradient scaler of fp16.
    RETURNS (LocateLabelHeadsSettings): the settings.
    """
    check_positive("hidden_width", hidden_width)
    check_probability("dropout", dropout)
    check_bool("use_filter", use_filter)
    check_bool("use_regressor", use_regressor)
    check_positive("max_span_tokens", max_span_tokens)
    check_non_negative("lr_scale", lr_scale)
    check_precision(precision)
    return LocateLabelHeadsSettings(hidden_width, dropout, use_filter, use_regressor,
                                    max_span_tokens, lr_scale, precision,
                                    dict(grad_scaler_config))


@registry.misc("spacy-nested-mrc.LocateLabelLoss.v1")
def configure_locate_label_loss(
    focal_gamma: float = 2.0,
    weight_filter: float = 1.0,
    weight_regression: float = 1.0,
    weight_classifier: float = 1.0,
) -> LocateLabelLoss:
    """The joint loss of the three heads (eq. 17).

    focal_gamma (float): gamma of the filter's focal loss.
    weight_filter, weight_regression, weight_classifier (float): lambda_1-3 (eq. 17).
    RETURNS (LocateLabelLoss): the loss.
    """
    for name, value in (("focal_gamma", focal_gamma), ("weight_filter", weight_filter),
                        ("weight_regression", weight_regression),
                        ("weight_classifier", weight_classifier)):
        check_non_negative(name, value)
    return LocateLabelLoss(focal_gamma, weight_filter, weight_regression, weight_classifier)


@registry.misc("spacy-nested-mrc.SoftNMSDecoder.v1")
def configure_soft_nms_decoder(
    filter_threshold: float = 0.5,
    max_proposals: int = 50000,
    use_soft_nms: bool = True,
    nms_decay: float = 0.9,
    nms_iou: float = 0.6,
    nms_score: float = 0.45,
) -> SoftNMSDecoder:
    """From the seed spans to entities in prediction: the filter's proposals, regressed and
    classified, then Soft-NMS (``decode.decode_proposals``).

    filter_threshold (float): the least filter probability of a proposal in prediction.
    max_proposals (int): the most proposals (seed spans past the filter) of one doc in
        prediction: where more pass, those of highest filter probability are kept and a
        warning (NMW120) says how many were dropped; 0 for no cap. It bounds a doc's
        regression, classification and Soft-NMS where a weak filter (an early model, a text
        of repeated names, a table) lets nearly every seed through. With the default seed
        widths 1-10, a sentence of n tokens has under 10 n seed spans, so the cap binds only
        on very long docs or a filter that passes nearly everything. Without the filter
        (``use_filter = false``) nothing is capped.
    use_soft_nms (bool): without Soft-NMS (an ablation) nothing is suppressed (only
        duplicates collapse and ``nms_score`` applies).
    nms_decay (float): u, Soft-NMS's decay factor.
    nms_iou (float): k, the IoU from which Soft-NMS decays a proposal.
    nms_score (float): delta, the least score of a decoded entity.
    RETURNS (SoftNMSDecoder): the decoder.
    """
    for name, value in (("filter_threshold", filter_threshold), ("nms_decay", nms_decay),
                        ("nms_iou", nms_iou), ("nms_score", nms_score)):
        check_probability(name, value)
    check_positive("max_proposals", max_proposals, allow_zero=True)
    check_bool("use_soft_nms", use_soft_nms)
    return SoftNMSDecoder(filter_threshold, max_proposals, use_soft_nms, nms_decay, nms_iou,
                          nms_score)


@dataclass(frozen=True)
class LocateLabelBlocks:
    """The blocks of ``LocateAndLabel.v2``, as its model keeps them (``attrs["settings"]``,
    never serialized: a loaded pipeline follows its config, see ``spacy_nested_mrc.types``)."""

    seeds: Seeds
    heads: LocateLabelHeadsSettings
    loss: LocateLabelLoss
    decoder: SoftNMSDecoder

    def __post_init__(self) -> None:
        check_parts(self, BLOCK_FUNCTIONS)  # NME023 for a block that gave something else
