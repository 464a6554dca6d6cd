"""Shared fixtures: a tiny, randomly initialised BERT built here (no downloads), and the
check of a model's gradient against autograd's."""

import pytest
import torch

from spacy_nested_mrc.types import contract_of

# the helpers' asserts explain their failures as the tests' own do
pytest.register_assert_rewrite("helpers")

from helpers.encoders import make_tiny_bert  # noqa: E402


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
    loss, d_scores = contract_of(model).get_loss(model, output.scored)
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
