"""Shared fixtures: a tiny, randomly initialised BERT built here (no downloads)."""

import string
from pathlib import Path
from typing import List

import pytest
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


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    """RETURNS (str): the folder of a tiny random BERT."""
    return str(make_tiny_bert(tmp_path_factory.mktemp("tiny_bert")))


def backprop_matches_autograd(model, output, backprop) -> float:
    """Take a training pass's loss with the model's ``get_loss``, backprop its ``d_scores``,
    and check that the heads' parameters get the gradient autograd gives through the heads
    and their loss in one piece. RETURNS (float): the loss."""
    heads = model.get_ref("heads").attrs["torch_module"]
    params = [p for p in heads.parameters() if p.requires_grad]
    expected = torch.autograd.grad(
        heads.loss_of(output.scored), params, retain_graph=True, allow_unused=True
    )
    loss, d_scores = model.attrs["get_loss"](model, output.scored)
    assert [d.shape for d in d_scores] == [s.shape for s in output.scored.scores]
    backprop(d_scores)
    compared = [(p.grad, e) for p, e in zip(params, expected) if e is not None]
    assert compared and any(float(e.abs().sum()) > 0 for _, e in compared)
    for grad, reference in compared:
        assert torch.allclose(grad, reference, atol=1e-6)
    return loss


@pytest.fixture
def check_backprop():
    """``backprop_matches_autograd``, for tests of each architecture."""
    return backprop_matches_autograd
