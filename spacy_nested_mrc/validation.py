"""Checks of settings at construction, so a bad value fails with a message naming it."""

import math
from dataclasses import fields
from typing import Any, Dict, Iterable, Optional, Sequence

from .errors import Errors


def check_choice(setting: str, value: object, options: Iterable[object]) -> None:
    """Raise NME006 unless ``value`` is one of ``options``."""
    options = tuple(options)
    if value not in options:
        raise ValueError(Errors.NME006.format(what=setting, value=value, options=options))


def check_probability(setting: str, value: object, *, allow_one: bool = True) -> None:
    """Raise NME003 unless ``value`` is a number in [0, 1] (or [0, 1) without ``allow_one``)."""
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not number or not 0 <= value <= 1 or (value == 1 and not allow_one):
        interval = "[0, 1]" if allow_one else "[0, 1)"
        raise ValueError(
            Errors.NME003.format(
                setting=setting, value=value, expected=f"Expected a number in {interval}."
            )
        )


def check_positive(setting: str, value: object, *, allow_zero: bool = False) -> None:
    """Raise NME003 unless ``value`` is an integer > 0 (or >= 0 with ``allow_zero``)."""
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        expected = f"Expected an integer >= {low}."
        raise ValueError(Errors.NME003.format(setting=setting, value=value, expected=expected))


def check_bool(setting: str, value: object) -> None:
    """Raise NME003 unless ``value`` is True or False."""
    if not isinstance(value, bool):
        raise ValueError(
            Errors.NME003.format(setting=setting, value=value, expected="Expected true or false.")
        )


def check_string(setting: str, value: object) -> None:
    """Raise NME003 unless ``value`` is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(
            Errors.NME003.format(
                setting=setting, value=value, expected="Expected a non-empty string."
            )
        )


def check_non_negative(setting: str, value: object) -> None:
    """Raise NME003 unless ``value`` is a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(Errors.NME003.format(setting=setting, value=value,
                                              expected="Expected a number >= 0."))


def check_calibration(setting: str, value: Optional[Sequence[float]]) -> None:
    """Raise NME003 unless ``value`` is None or ``[a, b]``, two finite numbers with a > 0
    (a score map that keeps the order of the scores)."""
    if value is None:
        return
    numbers = (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(not isinstance(x, bool) and isinstance(x, (int, float)) for x in value)
    )
    if not numbers or not math.isfinite(value[1]) or not (0 < value[0] < math.inf):
        raise ValueError(Errors.NME003.format(
            setting=setting, value=value,
            expected="Expected null or [a, b]: two finite numbers, a > 0."))


def check_label_thresholds(setting: str, value: Optional[Dict[str, float]]) -> None:
    """Raise NME003 unless ``value`` is a table of label names to probabilities (or None,
    which is read as an empty one)."""
    if value is None:
        return
    valid = isinstance(value, dict) and all(
        isinstance(label, str) and label
        and not isinstance(cut, bool) and isinstance(cut, (int, float)) and 0 <= cut <= 1
        for label, cut in value.items()
    )
    if not valid:
        raise ValueError(Errors.NME003.format(
            setting=setting, value=value,
            expected="Expected a table of label names to numbers in [0, 1]."))


def check_parts(parts: Any, own: Dict[str, str]) -> None:
    """Raise NME023 unless every field of ``parts`` (a dataclass of a model's blocks, each
    field annotated with its part's class) holds an instance of that class: a config that
    names another function for a block gets its part checked when the model is built.

    own (Dict[str, str]): each block's own registered function, for the message.
    """
    for part in fields(parts):
        value = getattr(parts, part.name)
        if not isinstance(value, part.type):
            raise ValueError(Errors.NME023.format(
                block=part.name, got=f"{type(value).__name__} {value!r:.80}",
                expected=part.type.__name__, own=own.get(part.name, "?")))
