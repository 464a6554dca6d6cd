"""Thinc glue shared by the models' PyTorchWrapper heads."""
from typing import Any, Tuple

import torch
from thinc.api import ArgsKwargs, Model


def convert_heads_outputs(model: Model, inputs_outputs: Tuple[Any, Any], is_train: bool):
    """Outputs of a heads module that returns its loss in training and tensors otherwise.

    Training: the loss [] becomes a float, and the backprop takes a weight (the share of the
    batch this pass had) as the loss's gradient. Prediction: the tensors become numpy arrays.
    """
    _, output = inputs_outputs
    if is_train:
        loss = output

        def get_d_loss(weight: float) -> ArgsKwargs:
            grad = torch.full_like(loss, float(weight))
            return ArgsKwargs(args=(loss,), kwargs={"grad_tensors": (grad,)})

        return float(loss.detach()), get_d_loss
    return tuple(t.detach().cpu().numpy() for t in output), None
