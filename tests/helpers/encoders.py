"""The tiny, randomly initialised BERT the tests run on, built here (no downloads)."""

import string
from pathlib import Path
from typing import List

import torch

TINY_WORDS = (
    "il-2 gene protein dna rna cell cells line type t human jurkat the of in and a expression "
    "binding site promoter activation receptor nf-kappa b mrna c-fos factor kinase"
).split()


def make_tiny_bert(
    path: Path,
    *,
    hidden: int = 32,
    layers: int = 2,
    max_positions: int = 128,
    seed: int = 0,
    dropout: float = 0.0,
) -> Path:
    """Write a randomly initialised 2-layer BERT with a small vocabulary to ``path``
    (``dropout``: its hidden and attention dropout)."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab: List[str] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab += list(chars) + ["##" + c for c in chars] + TINY_WORDS
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf8")
    tokenizer = BertTokenizerFast(
        vocab_file=str(vocab_file), do_lower_case=True, model_max_length=max_positions
    )
    tokenizer.save_pretrained(str(path))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=hidden * 2,
        max_position_embeddings=max_positions,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    BertModel(config).save_pretrained(str(path))
    return path
