"""Write the meta.json that ``spacy package --meta-path`` puts into the packaged pipeline.

    python scripts/make_meta.py training/model-best metrics/report.json metrics/meta.json \
        --name nested_mrc_genia --version 0.1.0 --spacy-scores metrics/spacy_scores.json

It starts from the pipeline's own meta.json and adds: the scores of ``python -m
spacy_nested_mrc evaluate`` (report.json) as ``performance``, with the speed measured by
``spacy evaluate``; the encoder that the weights were fine-tuned from, with its licence, under
``encoder`` and in ``sources`` next to the training data. The licence is read from the
encoder's model card (the ``license:`` line of README.md's front matter) unless given.
"""

import json
import re
from pathlib import Path
from typing import Any, Dict, Optional

import srsly
import typer
from thinc.api import Config

# Hugging Face model-card licence ids -> SPDX identifiers, for the ones seen most often.
SPDX = {
    "apache-2.0": "Apache-2.0",
    "mit": "MIT",
    "bsd-3-clause": "BSD-3-Clause",
    "cc-by-4.0": "CC-BY-4.0",
    "cc-by-sa-4.0": "CC-BY-SA-4.0",
    "cc-by-nc-4.0": "CC-BY-NC-4.0",
    "openrail": "OpenRAIL",
}
UNKNOWN = "unknown"


def find_encoder(config: Config) -> Optional[str]:
    """RETURNS (Optional[str]): the encoder a pipeline was built on: the ``encoder`` block's
    ``name`` of a component's model (nested_mrc_ner; the ``encoder`` itself in a config of
    the flat v1 architectures), else the ``name`` of a transformer component."""
    components = config.get("components", {})
    for component in components.values():
        model = component.get("model", {})
        encoder = model.get("encoder") if isinstance(model, dict) else None
        if isinstance(encoder, dict) and isinstance(encoder.get("name"), str):
            return encoder["name"]
        if isinstance(encoder, str):
            return encoder
    for component in components.values():
        model = component.get("model", {})
        if component.get("factory") == "transformer" and isinstance(model.get("name"), str):
            return model["name"]
    return None


def encoder_folder(name: str) -> Optional[Path]:
    """RETURNS (Optional[Path]): the local folder of an encoder (a path, or a model that a
    package embeds), or None for a hub name."""
    from spacy_nested_mrc.encoder.hf import resolve_encoder

    folder = Path(resolve_encoder(name))
    return folder if folder.is_dir() else None


def read_card_license(folder: Path) -> Optional[str]:
    """RETURNS (Optional[str]): the ``license:`` of a model card's YAML front matter."""
    card = folder / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf8")
    match = re.match(r"---\s*\n(.*?)\n---", text, flags=re.S)
    if not match:
        return None
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "license" and value.strip():
            value = value.strip().strip("'\"")
            return SPDX.get(value.lower(), value)
    return None


def describe_encoder(name: str, license: str) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): name, licence, model type and where the encoder came from."""
    folder = encoder_folder(name)
    if license == "auto":
        license = (read_card_license(folder) if folder else None) or UNKNOWN
    info = {"name": name, "license": license}
    if folder is not None and (folder / "config.json").is_file():
        info["model_type"] = str(srsly.read_json(folder / "config.json").get("model_type", ""))
    if folder is None or not Path(name).expanduser().is_dir():
        info["url"] = f"https://huggingface.co/{name}"
    return info


def main(
    pipeline: Path = typer.Argument(..., help="trained pipeline folder (training/model-best)"),
    report: Path = typer.Argument(..., help="report.json of python -m spacy_nested_mrc evaluate"),
    output: Path = typer.Argument(..., help="meta.json to write"),
    name: Optional[str] = typer.Option(None, help="package name (without the lang_ prefix)"),
    version: Optional[str] = typer.Option(None, help="package version"),
    license: str = typer.Option("", help="licence of the packaged pipeline"),
    description: Optional[str] = typer.Option(None, help="one-line description"),
    encoder: Optional[str] = typer.Option(None, help="encoder name, if not in the config"),
    encoder_license: str = typer.Option("auto", help="encoder licence; auto: model card"),
    spacy_scores: Optional[Path] = typer.Option(None, help="JSON of python -m spacy evaluate"),
    data_name: str = typer.Option("GENIA term corpus 3.02, nested-NER split"),
    data_license: str = typer.Option("CC BY 3.0"),
    data_url: str = typer.Option("http://www.geniaproject.org/"),
):
    """Write OUTPUT: PIPELINE's meta with the evaluation scores and the encoder's licence."""
    meta: Dict[str, Any] = srsly.read_json(pipeline / "meta.json")
    config = Config().from_disk(pipeline / "config.cfg")
    encoder = encoder or find_encoder(config)
    if encoder is None:
        typer.echo("Error: no encoder in the pipeline's config; pass --encoder", err=True)
        raise typer.Exit(1)
    encoder_info = describe_encoder(encoder, encoder_license)
    if encoder_info["license"] == UNKNOWN:
        typer.echo(
            f"Warning: no licence found for the encoder '{encoder}' (no model card with a "
            "'license:' line); pass --encoder-license (--vars.encoder_license in the project)",
            err=True,
        )
    evaluation = srsly.read_json(report)
    performance: Dict[str, Any] = dict(evaluation["scores"])
    if spacy_scores is not None and spacy_scores.is_file():
        speed = srsly.read_json(spacy_scores).get("speed")
        if speed is not None:
            performance["speed"] = speed
    if name:
        meta["name"] = name
    if version:
        meta["version"] = version
    if license:
        meta["license"] = license
    meta["description"] = description or (
        f"Nested named entities in doc.spans with nested_mrc_ner (spacy-nested-mrc), "
        f"fine-tuned from {encoder_info['name']} on {data_name}."
    )
    meta["performance"] = performance
    meta["encoder"] = encoder_info
    source = {key: encoder_info[key] for key in ("name", "license", "url") if key in encoder_info}
    meta["sources"] = [
        source,
        {"name": data_name, "license": data_license, "url": data_url},
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf8")
    typer.echo(
        f"Saved {output}: encoder {encoder_info['name']} ({encoder_info['license']}), "
        f"{len(performance)} scores"
    )


if __name__ == "__main__":
    typer.run(main)
