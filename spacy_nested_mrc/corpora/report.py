"""What every converter reports (JSON Lines, GENIA XML, BRAT): the file read, the items
skipped by reason, and the helpers their summaries and warnings quote examples with."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# How many skipped items a warning or summary quotes as examples.
N_QUOTED_EXAMPLES = 5


@dataclass
class CorpusReport:
    """The part of a converter's report that every format shares.

    path (Optional[str]): The file or folder read, if known.
    skipped (Dict[str, int]): Items (entities, annotations, ``cons``) not taken, by reason;
        each format names its reasons.
    """

    path: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def n_skipped(self) -> int:
        """RETURNS (int): The number of items skipped, for all reasons."""
        return sum(self.skipped.values())

    @property
    def where(self) -> str:
        """RETURNS (str): `` from PATH`` for a summary's first line, or "" without a path."""
        return f" from {self.path}" if self.path else ""

    def count_skip(self, reason: str) -> None:
        """Count one item skipped for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self) -> str:
        """RETURNS (str): A short human-readable summary (each format writes its own)."""
        raise NotImplementedError


def plural(count: int) -> str:
    """RETURNS (str): "s" unless ``count`` is 1."""
    return "" if count == 1 else "s"


def quote(value: Any) -> str:
    """RETURNS (str): ``value`` as JSON (as it was in the file), or its repr."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def quoted_examples(items: list[str], total: int | None = None) -> str:
    """The first ``N_QUOTED_EXAMPLES`` of ``items`` joined by "; ", and how many more there
    are of ``total`` (default: ``len(items)``; pass it to quote only the first few).

    RETURNS (str): e.g. "a; b; c; d; e; and 3 more"."""
    text = "; ".join(items[:N_QUOTED_EXAMPLES])
    more = (len(items) if total is None else total) - N_QUOTED_EXAMPLES
    return text + (f"; and {more} more" if more > 0 else "")
