"""Fetch the GENIA term corpus 3.02 release into the project: download it from its public URL
and check its SHA-256, or take it from a local folder (``--local-dir``) where it already is.

    python scripts/fetch_genia.py assets/genia_raw/GENIAcorpus3.02.source \\
        --url http://www.nactem.ac.uk/GENIA/current/GENIA-corpus/Term/GENIAcorpus3.02.tgz \\
        --sha256 85b2aede313308c33783ba508d054d0af0ff9c7e48490f0db5168a9f88d74d1c
    python scripts/fetch_genia.py assets/genia_raw/GENIAcorpus3.02.source \\
        --local-dir ../../shared/data/genia/raw

The output keeps the content as it came (the release .tgz, or a local XML, plain or gzipped);
``python -m spacy_nested_mrc convert-genia`` recognizes each by its content. The SHA-256 is
that of the official tarball, so it is checked on downloads only.
"""

import shutil
import urllib.request
from pathlib import Path

import typer
from copy_assets import file_digest  # scripts/, beside this one

# the names the release and its parts go by, in the order they are looked for
LOCAL_NAMES = [
    "GENIAcorpus3.02.tgz",
    "GENIAcorpus3.02.xml",
    "GENIAcorpus3.02.xml.gz",
    "GENIAcorpus3.02.train_dev.xml.gz",
]


def main(
    output: Path = typer.Argument(..., help="file to write the corpus to"),
    url: str = typer.Option("", help="where to download the release from"),
    sha256_digest: str = typer.Option("", "--sha256", help="the release's SHA-256"),
    local_dir: str = typer.Option(
        "", help="a folder that already holds the release or its XML (no download)"
    ),
) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    if local_dir:
        folder = Path(local_dir)
        found = [folder / name for name in LOCAL_NAMES if (folder / name).exists()]
        if not found:
            raise SystemExit(f"None of {LOCAL_NAMES} is in {local_dir}.")
        shutil.copyfile(found[0], output)
        typer.echo(f"Copied {found[0]} to {output}")
        return
    if not url:
        raise SystemExit("Give --url (and --sha256) to download, or --local-dir.")
    partial = output.with_name(output.name + ".partial")
    with urllib.request.urlopen(url) as response, partial.open("wb") as file_:
        shutil.copyfileobj(response, file_)
    digest = file_digest(partial, "sha256")
    if sha256_digest and digest != sha256_digest:
        partial.unlink()
        raise SystemExit(f"{url}: SHA-256 {digest}, expected {sha256_digest}; not kept.")
    partial.replace(output)
    typer.echo(f"Downloaded {url} to {output} (SHA-256 {digest})")


if __name__ == "__main__":
    typer.run(main)
