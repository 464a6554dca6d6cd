"""Check GENIA-style JSONL splits in a local folder and copy them into the project.

    python scripts/copy_assets.py ../../shared/data/genia assets/genia

Every line of every split is read with the package's own parser, so a file in another format
(or a truncated one) stops here, with its file and line, rather than in training. A file whose
copy is already identical is left alone; a LICENSE/README next to the splits is copied along.
"""

import hashlib
import shutil
from pathlib import Path
from typing import List

import typer

from spacy_nested_mrc.corpora.jsonl import iter_records

SPLITS = ["train.jsonl", "dev.jsonl"]
COMPANIONS = ["LICENSE.txt", "LICENSE", "README.md"]


def file_digest(path: Path, algorithm: str = "md5") -> str:
    """RETURNS (str): the hex digest of a file (MD5: the checksum weasel's assets use)."""
    digest = hashlib.new(algorithm)
    with path.open("rb") as file_:
        for block in iter(lambda: file_.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_split(path: Path) -> str:
    """Parse every record of a split. RETURNS (str): a one-line summary of its contents."""
    n_docs = n_entities = 0
    labels = set()
    for _, record in iter_records(path):
        n_docs += 1
        entities = record.get("entities") or []
        n_entities += len(entities)
        labels.update(e.get("type") for e in entities if isinstance(e, dict))
    if n_docs == 0:
        raise ValueError(f"{path} holds no sentence records.")
    names = ", ".join(sorted(str(label) for label in labels))
    return f"{n_docs} sentences, {n_entities} entities ({names})"


def copy_if_changed(source: Path, dest: Path) -> str:
    """Copy ``source`` to ``dest`` unless an identical file is there. RETURNS (str): what
    was done."""
    if dest.exists() and dest.stat().st_size == source.stat().st_size:
        if file_digest(dest) == file_digest(source):
            return "up to date"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return "copied"


def main(
    source_dir: Path = typer.Argument(..., help="folder with train.jsonl and dev.jsonl"),
    output_dir: Path = typer.Argument(..., help="where to put the checked copies"),
    splits: List[str] = typer.Option(SPLITS, "--split", help="file names to check and copy"),
):
    """Check the JSONL splits in SOURCE_DIR and copy them to OUTPUT_DIR."""
    missing = [name for name in splits if not (source_dir / name).is_file()]
    if missing:
        typer.echo(
            f"Missing in {source_dir}: {', '.join(missing)}. Point the project at the folder "
            "with the GENIA-style JSONL splits: --vars.genia_dir PATH",
            err=True,
        )
        raise typer.Exit(1)
    for name in splits:
        source = source_dir / name
        try:
            summary = check_split(source)
        except ValueError as err:
            typer.echo(f"Error: {err}", err=True)
            raise typer.Exit(1) from err
        done = copy_if_changed(source, output_dir / name)
        typer.echo(f"{name}: {summary}; {done} -> {output_dir / name} (md5 {file_digest(source)})")
    for name in COMPANIONS:
        if (source_dir / name).is_file():
            copy_if_changed(source_dir / name, output_dir / name)
            typer.echo(f"{name}: copied along (the data's licence and description)")


if __name__ == "__main__":
    typer.run(main)
