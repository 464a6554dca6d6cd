"""Adapting an encoder to a domain's text: continued masked-language-model pretraining with
whole-word masking, as BioBERT continued BERT's on PubMed (``python -m spacy_nested_mrc
adapt``). The output folder is a Hugging Face encoder that ``paths.encoder`` takes."""
from .loop import AdaptResult, StepInfo, adapt_encoder
from .settings import AdaptSettings, load_settings

__all__ = ["AdaptResult", "AdaptSettings", "StepInfo", "adapt_encoder", "load_settings"]
