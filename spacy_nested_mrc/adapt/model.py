"""The masked language model of an adaptation: the encoder with its language-model head, the
head built where the checkpoint has none, and the loss computed at the masked positions only.
"""
import logging
import warnings
from pathlib import Path
from typing import Any, List, Tuple

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from ..errors import Errors, Warnings
from .masking import IGNORE

logger = logging.getLogger(__name__)


def load_masked_lm(folder: str) -> Tuple[torch.nn.Module, Any, List[str]]:
    """The encoder of ``folder`` as a masked language model, and its fast tokenizer.

    A checkpoint saved without a language-model head (sentence-transformers models have
    none) gets a new one: Hugging Face's head of the architecture, its decoder tied to the
    input embeddings, its transform and bias initialised afresh (warning NMW181).

    RETURNS (Tuple[Module, Any, List[str]]): the model, the tokenizer and the names of the
        head's weights that were initialised afresh (empty when the checkpoint had a head).
    RAISES (ValueError): NME175 when the encoder has no masked-language-model class.
    """
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its "newly initialized" notice: ours says it once
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(folder, output_loading_info=True)
    except ValueError as err:  # an architecture without a masked-LM class
        raise ValueError(Errors.NME175.format(encoder=folder, error=err)) from err
    finally:
        hf_logging.set_verbosity(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True)
    missing = [name for name in info["missing_keys"] if not name.startswith(base_prefix(model))]
    missing_encoder = [name for name in info["missing_keys"] if name not in missing]
    if missing_encoder:
        raise ValueError(Errors.NME176.format(encoder=folder, names=", ".join(missing_encoder[:5])))
    if missing:
        warnings.warn(Warnings.NMW181.format(encoder=folder, count=len(missing)))
    if model.get_output_embeddings() is not None:
        tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
        if missing and not tied:
            model.tie_weights()
    return model, tokenizer, missing


def base_prefix(model: torch.nn.Module) -> str:
    """The prefix of the encoder's weights in the masked-LM model ("bert.", "mpnet.")."""
    return f"{model.base_model_prefix}."


def lm_head(model: torch.nn.Module) -> torch.nn.Module:
    """The language-model head: the one child of the model besides its encoder."""
    heads = [child for child in model.children() if child is not model.base_model]
    if len(heads) != 1:
        raise ValueError(Errors.NME175.format(encoder=type(model).__name__,
                                              error="no single language-model head"))
    return heads[0]


def masked_lm_loss(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   labels: torch.Tensor) -> Tuple[torch.Tensor, int]:
    """The mean cross-entropy of the masked wordpieces, projecting onto the vocabulary at the
    masked positions only (the projection at every position dominates a small encoder's step).

    input_ids, attention_mask, labels: (B, L) int64; labels ``IGNORE`` where not predicted.
    RETURNS (Tuple[Tensor, int]): the loss (a float32 scalar) and the number M of predicted
        wordpieces.
    """
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]  # (B, L, H)
    chosen = labels != IGNORE  # (B, L)
    logits = lm_head(model)(hidden[chosen])  # (M, V)
    targets = labels[chosen]  # (M,)
    loss = torch.nn.functional.cross_entropy(logits.float(), targets)
    return loss, int(targets.numel())


def save_encoder(model: torch.nn.Module, tokenizer: Any, folder: Path) -> None:
    """Write the encoder without its head, and its tokenizer, as a Hugging Face folder that
    ``AutoModel``, ``paths.encoder`` and spacy-transformers load."""
    folder.mkdir(parents=True, exist_ok=True)
    model.base_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
