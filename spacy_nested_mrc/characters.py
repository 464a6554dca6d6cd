"""Text that no UTF-8 file can hold: lone surrogates.

A JSON string may escape one half of a UTF-16 surrogate pair on its own (``"\\ud83e"``, a
truncated emoji as JavaScript writes it); Python reads it as a code point in U+D800-U+DFFF,
which cannot be encoded, so spaCy's string store, a DocBin or a UTF-8 output file fails on
it. Every input path replaces each such code point with U+FFFD, one code point for one, so
that the offsets of every other character stay what the input said, and says how many it
replaced with a coded warning.
"""
import re
from typing import Any, Tuple

REPLACEMENT = "\ufffd"
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# in a JSON line: an escape that may decode to a surrogate (the cheap test before a record's
# strings are searched)
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def repair_text(text: str) -> Tuple[str, int]:
    """RETURNS (Tuple[str, int]): ``text`` with every surrogate code point replaced by
    U+FFFD (the same length), and how many were replaced."""
    if text.isascii():
        return text, 0
    return LONE_SURROGATE.subn(REPLACEMENT, text)


def repair_value(value: Any) -> Tuple[Any, int]:
    """``repair_text`` over every string of a parsed JSON value (dict keys included).

    RETURNS (Tuple[Any, int]): the value (new containers where a string changed) and how
        many code points were replaced.
    """
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, list):
        parts = [repair_value(v) for v in value]
        return [v for v, _ in parts], sum(n for _, n in parts)
    if isinstance(value, dict):
        total, repaired = 0, {}
        for key, item in value.items():
            new_key, n_key = repair_text(key) if isinstance(key, str) else (key, 0)
            new_item, n_item = repair_value(item)
            repaired[new_key] = new_item
            total += n_key + n_item
        return repaired, total
    return value, 0


def may_hold_surrogates(json_line: str) -> bool:
    """RETURNS (bool): whether a JSON line (read from UTF-8, so holding no surrogate
    itself) escapes a code point that may be one."""
    return SURROGATE_ESCAPE.search(json_line) is not None
