"""Model configs for the tests, written with the flat settings of the v1 architectures (each
test names the few it sets) and given to the pipe in blocks, as the ``.v2`` architectures
take them: every setting a test leaves out has its v1 default, so a test builds the model it
always built."""

import inspect
from typing import Any, Dict

from spacy.util import registry

from spacy_nested_mrc.models.upgrade import (
    ARCHITECTURE_KEY,
    FLAT_TO_BLOCKS,
    build_in_blocks,
    to_blocks,
)

MRC_V1 = "spacy-nested-mrc.MRCQuery.v1"
MULTI_NER_V1 = "spacy-nested-mrc.MultiNER.v1"


def in_blocks(settings: Dict[str, Any]) -> Dict[str, Any]:
    """``settings`` (a flat model config, its ``@architectures`` a v1 one) with the v1
    defaults of the settings it leaves out, as the config in blocks of the ``.v2``
    architecture. A config already in blocks is returned as it is."""
    name = settings.get(ARCHITECTURE_KEY)
    if name not in FLAT_TO_BLOCKS:
        return dict(settings)
    defaults = {
        key: param.default
        for key, param in inspect.signature(registry.architectures.get(name)).parameters.items()
        if param.default is not inspect.Parameter.empty
    }
    return to_blocks({**defaults, **settings})


# the four settings where a flat MRCQuery.v1 config took the pipe's default model's values,
# at the defaults its builder had when called directly (the per-label MRC of the paper)
DIRECT_MRC_V1 = {"query_style": "natural", "packed": False, "per_label_loss": 0.0,
                 "max_rows": 64}


def build_model(architecture: str, **settings: Any) -> Any:
    """The model of a v1 ``architecture`` with ``settings`` (flat; v1 defaults for the rest,
    for MRCQuery.v1 those of its builder called directly), built through its blocks
    (``build_in_blocks``: without confection's type checks, so the builders' own checks,
    and their error codes, meet every value)."""
    direct = DIRECT_MRC_V1 if architecture == MRC_V1 else {}
    return build_in_blocks(in_blocks({ARCHITECTURE_KEY: architecture, **direct, **settings}))


def block_name(architecture: str, setting: str) -> str:
    """The name in its block of a flat ``setting`` of the v1 ``architecture``."""
    return FLAT_TO_BLOCKS[architecture][1][setting][1]


def default_model(**settings: Any) -> Dict[str, Any]:
    """The factory's default model (the packed MRC with index questions: MRCQuery.v1 at the
    defaults a flat config got in the pipe) with ``settings`` (flat names), in blocks."""
    return in_blocks({ARCHITECTURE_KEY: MRC_V1, **settings})
