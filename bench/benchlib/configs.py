"""The configs the studies train (``CONFIGS``), and config values set on a study's command
line: one ``SECTION.KEY=VALUE``, a pipeline's ``--set NAME:KEY=JSON`` overrides, and the key
of a trained pipeline's encoder budget."""
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {
    "mrc": ROOT / "configs" / "mrc_cpu.cfg",
    "mrc_packed": ROOT / "configs" / "mrc_packed_cpu.cfg",
    "multi_ner": ROOT / "configs" / "multi_ner_cpu.cfg",
    "locate_label": ROOT / "configs" / "locate_label_cpu.cfg",
    "spancat": ROOT / "bench" / "configs" / "spancat_cpu.cfg",
    "span_finder": ROOT / "bench" / "configs" / "span_finder_cpu.cfg",
}

# where Locate-and-Label's encoder takes its budget: a shared transformer component's (as
# pipelines trained before the CPU config held its own encoder have it), else the pipe's own
# transformer's; the MRC family's is its model's ``encoder.max_pass_tokens``
TRANSFORMER_BUDGET_KEY = "components.transformer.model.max_pass_tokens"
OWN_TRANSFORMER_BUDGET_KEY = "components.nested_mrc_ner.model.tok2vec.transformer.max_pass_tokens"


def config_setting(assignment: str) -> Dict[str, Any]:
    """``SECTION.KEY=VALUE`` -> ``{SECTION.KEY: VALUE}``, the value as JSON where it parses,
    else a string."""
    key, equals, value = assignment.partition("=")
    if not key or not equals:
        raise SystemExit(f"{assignment!r}: expected SECTION.KEY=VALUE")
    try:
        return {key: json.loads(value)}
    except json.JSONDecodeError:
        return {key: value}


def load_overrides(settings: List[str], name: str) -> Dict[str, Any]:
    """The ``--set NAME:KEY=JSON`` overrides of one pipeline."""
    overrides = {}
    for setting in settings:
        target, _, assignment = setting.partition(":")
        if target == name:
            key, _, value = assignment.partition("=")
            overrides[key] = json.loads(value)
    return overrides


def budget_key(path: str) -> Optional[str]:
    """The config key of a pipeline's encoder budget; None for a pipeline without our pipe
    (spaCy's spancat), which runs as it is."""
    import spacy

    config = spacy.util.load_config(Path(path) / "config.cfg", interpolate=False)
    if "nested_mrc_ner" not in config["components"]:
        return None
    model = config["components"]["nested_mrc_ner"]["model"]
    if "LocateAndLabel" in model["@architectures"]:
        own = "transformer" in model["tok2vec"]
        return OWN_TRANSFORMER_BUDGET_KEY if own else TRANSFORMER_BUDGET_KEY
    from spacy_nested_mrc.models.upgrade import config_path

    return f"components.nested_mrc_ner.model.{config_path(model, 'encoder.max_pass_tokens')}"


def model_paths(config: Any, settings: Dict[str, Any],
                component: str = "nested_mrc_ner") -> Dict[str, Any]:
    """Dotted overrides of a pipe's model settings, each given by its path in a config in
    blocks (``"decoder.start_threshold"``), where ``config`` (a pipeline's or a config
    file's) has them: in blocks, or flat as pipelines saved before the blocks have them."""
    from spacy_nested_mrc.models.upgrade import config_path

    model = config["components"][component]["model"]
    return {f"components.{component}.model.{config_path(model, key)}": value
            for key, value in settings.items()}
