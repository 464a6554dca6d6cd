"""The settings of an adaptation: the ``[adapt]`` block of its config, checked."""
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any, Dict, Optional

from ..errors import Errors
from ..files import read_config
from ..runtime.precision import PRECISIONS
from ..validation import (
    check_choice,
    check_non_negative,
    check_positive,
    check_probability,
    check_string,
)

INPUT_FORMATS = ("auto", "txt", "jsonl")


@dataclass(frozen=True)
class AdaptSettings:
    """Continued masked-language-model pretraining of an encoder (the ``[adapt]`` block).

    encoder (str): the Hugging Face encoder to adapt: a local folder or an embedded name.
    text (str): the text to adapt on: a .txt or .jsonl file (gzipped or not) or a folder of
        them, one document or sentence a line, read as ``annotate`` reads its input.
    held_out (Optional[str]): text to measure the masked-token loss on, read the same way;
        None: the first ``held_out_sequences`` sequences of ``text`` are set apart.
    input_format (str): "auto" (by suffix), "txt" or "jsonl".
    text_field (str): the JSON Lines field of the text.
    seed (int): seeds the masks, the dropout and the head's initial weights.
    max_length (int): wordpieces a sequence, special tokens included; consecutive lines are
        packed into sequences of whole words up to it.
    batch_size (int): sequences a step.
    max_steps (int): optimizer steps; the text is read again from its start when it ends.
    shuffle_buffer (int): sequences shuffled at a time as the text streams by (1: in the
        text's order); memory grows with it (about 1 KB a sequence of 128).
    mask_probability (float): the share of wordpieces chosen for prediction, by whole words.
    mask_token_share (float): of the chosen words, the share replaced by the mask token.
    random_token_share (float): the share replaced by random wordpieces (the rest is kept).
    learn_rate (float): the peak learning rate (AdamW), reached after ``warmup_steps`` and
        decayed linearly to 0 at ``max_steps``.
    warmup_steps (int): steps of linear warm-up.
    weight_decay (float): AdamW's decoupled weight decay (not on biases and layer norms).
    grad_clip (float): the largest gradient norm (0: no clipping).
    precision (str): "fp32", "bf16", "fp16" (GPU) or "auto", as the pipelines' ``precision``.
    checkpoint_every (int): steps between two checkpoints (resume starts from the last).
    eval_every (int): steps between two measurements of the held-out loss.
    held_out_sequences (int): the most held-out sequences measured.
    tokenize_lines (int): lines tokenized in one call of the fast tokenizer.
    max_line_chars (int): a longer line is read in pieces of at most this many characters.
    release_memory_every (int): steps between two returns of the C heap's free memory to the
        system (``runtime.memory``: each step frees tensors of other sizes, and without it
        the resident size grows by tens of MB a step); 0: never.
    onednn_cache (Optional[int]): on a CPU, the most bf16 matrix-product primitives oneDNN
        keeps (``runtime.memory.limit_onednn_cache``: each step's masked positions give
        the output projection a new shape); None: oneDNN's default (1,024). A capacity the
        environment gives (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``) is kept.
    """

    encoder: str
    text: str
    held_out: Optional[str] = None
    input_format: str = "auto"
    text_field: str = "text"
    seed: int = 0
    max_length: int = 128
    batch_size: int = 32
    max_steps: int = 2000
    shuffle_buffer: int = 10000
    mask_probability: float = 0.15
    mask_token_share: float = 0.8
    random_token_share: float = 0.1
    learn_rate: float = 5e-5
    warmup_steps: int = 200
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    precision: str = "bf16"
    checkpoint_every: int = 200
    eval_every: int = 200
    held_out_sequences: int = 256
    tokenize_lines: int = 256
    max_line_chars: int = 100_000
    release_memory_every: int = 1
    onednn_cache: Optional[int] = 16

    def __post_init__(self) -> None:
        check_string("encoder", self.encoder)
        check_string("text", self.text)
        if self.held_out is not None:
            check_string("held_out", self.held_out)
        check_choice("input_format", self.input_format, INPUT_FORMATS)
        check_choice("precision", self.precision, PRECISIONS)
        for name in ("max_length", "batch_size", "max_steps", "checkpoint_every", "eval_every",
                     "held_out_sequences", "tokenize_lines", "max_line_chars",
                     "shuffle_buffer"):
            check_positive(name, getattr(self, name))
        for name in ("warmup_steps", "seed", "release_memory_every"):
            check_positive(name, getattr(self, name), allow_zero=True)
        if self.onednn_cache is not None:
            check_positive("onednn_cache", self.onednn_cache, allow_zero=True)
        for name in ("weight_decay", "grad_clip", "learn_rate"):
            check_non_negative(name, getattr(self, name))
        check_probability("mask_probability", self.mask_probability, allow_one=False)
        for name in ("mask_token_share", "random_token_share"):
            check_probability(name, getattr(self, name))
        if self.mask_token_share + self.random_token_share > 1:
            raise ValueError(Errors.NME170.format(
                mask=self.mask_token_share, random=self.random_token_share))
        if self.max_length < 8:
            raise ValueError(Errors.NME171.format(max_length=self.max_length))

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "AdaptSettings":
        """The settings of an interpolated config's ``[adapt]`` block.

        RAISES (ValueError): NME172 for a missing block or an unknown or missing setting.
        """
        block = config.get("adapt")
        known = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING}
        if not isinstance(block, dict):
            raise ValueError(Errors.NME172.format(problem="it has no [adapt] block"))
        unknown = sorted(set(block) - known)
        missing = sorted(name for name in required if block.get(name) is None)
        if unknown or missing:
            problem = "; ".join(part for part in (
                f"unknown setting(s) {', '.join(unknown)}" if unknown else "",
                f"{', '.join(missing)} not set" if missing else "") if part)
            raise ValueError(Errors.NME172.format(problem=problem))
        return cls(**block)

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint must share with the settings that resume it (everything but
        how often to checkpoint, measure and give memory back, and the size of oneDNN's
        cache)."""
        values = asdict(self)
        for name in ("checkpoint_every", "eval_every", "release_memory_every", "onednn_cache"):
            values.pop(name)
        return values


def load_settings(path: Path, overrides: Dict[str, Any]) -> AdaptSettings:
    """The settings of a config file with spaCy-style overrides (``--adapt.max_steps 100``,
    ``--paths.text corpus.txt.gz``)."""
    config = read_config(path, overrides=overrides, interpolate=True)
    return AdaptSettings.from_config(config)
