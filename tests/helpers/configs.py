"""Model configs for the tests, written in blocks as a user writes a ``.v2`` config: each
test names the settings it sets, block by block (``mrc_blocks(encoder=tiny, questions={"style":
"natural"}, decoder={"start_threshold": 0.0})``), and every block or setting it leaves out
has the default of its block's registered function. ``build`` builds such a config
without confection's type checks, so that the builders' own checks meet every value."""

from typing import Any, Dict, Mapping

from spacy_nested_mrc.models.locate_label.blocks import BLOCK_FUNCTIONS as LOCATE_LABEL_BLOCKS
from spacy_nested_mrc.models.mrc.blocks import BLOCK_FUNCTIONS as QUERY_BLOCKS
from spacy_nested_mrc.models.upgrade import build_in_blocks

MRC = "spacy-nested-mrc.MRCQuery.v2"
MULTI_NER = "spacy-nested-mrc.MultiNER.v2"
LOCATE_LABEL = "spacy-nested-mrc.LocateAndLabel.v2"
# the registered function of each block of each architecture
BLOCKS = {MRC: QUERY_BLOCKS, MULTI_NER: QUERY_BLOCKS, LOCATE_LABEL: LOCATE_LABEL_BLOCKS}

# the per-label MRC of Li et al. (one sequence per label, natural questions, no per-label
# loss, 64 rows a pass), in fp32 (the blocks' "auto" is bf16 on a CPU that has it)
PER_LABEL_MRC = {"encoder": {"max_rows_per_pass": 64, "precision": "fp32"},
                 "questions": {"style": "natural", "packed": False}, "per_label_loss": 0.0}


def blocks_config(architecture: str, *bases: Mapping[str, Any], **parts: Any) -> Dict[str, Any]:
    """The config in blocks of ``architecture``: each of its blocks with its registered
    function (``@misc``) and the settings that ``bases`` and then ``parts`` give it (a block's
    settings as a dict; ``@misc`` names another function), any other key a setting of the
    architecture itself (``per_label_loss``, ``tok2vec``). The MRC family's ``encoder`` may
    be given as just its name."""
    config: Dict[str, Any] = {"@architectures": architecture}
    for block, function in BLOCKS[architecture].items():
        config[block] = {"@misc": function}
    for settings in (*bases, parts):
        for key, value in settings.items():
            if key == "encoder" and isinstance(value, str):
                value = {"name": value}
            if key in BLOCKS[architecture]:
                config[key] = {**config[key], **value}
            else:
                config[key] = value
    return config


def mrc_blocks(*bases: Mapping[str, Any], **parts: Any) -> Dict[str, Any]:
    """An ``MRCQuery.v2`` config (``blocks_config``): by default the factory's default model,
    the packed MRC with index questions."""
    return blocks_config(MRC, *bases, **parts)


def multi_ner_blocks(*bases: Mapping[str, Any], **parts: Any) -> Dict[str, Any]:
    """A ``MultiNER.v2`` config (``blocks_config``)."""
    return blocks_config(MULTI_NER, *bases, **parts)


def locate_label_blocks(*bases: Mapping[str, Any], **parts: Any) -> Dict[str, Any]:
    """A ``LocateAndLabel.v2`` config (``blocks_config``)."""
    return blocks_config(LOCATE_LABEL, *bases, **parts)


# the model of a config in blocks, built without confection's type checks, so the builders'
# own checks, and their error codes, meet every value
build = build_in_blocks

