"""``convert`` (GENIA-style JSONL to DocBin), ``convert-genia`` (the GENIA XML release to
the standard JSONL split), ``convert-brat`` (BRAT standoff to DocBin or JSONL) and
``upgrade-config`` (a config of the flat architectures to one in blocks)."""
from pathlib import Path

from ..corpora.genia_xml import DEV_EVERY, DEV_POOL, N_TRAIN_DEV
from ._util import Arg, Opt, app, show_progress


@app.command("convert")
def convert_cli(
    input_path: Path = Arg(..., help="GENIA-style JSONL file (one sentence a line)"),
    output_path: Path = Arg(..., help=".spacy file to write (or an existing folder)"),
    lang: str = Opt("en", "--lang", help="language of the vocab"),
    spans_key: str = Opt("nested", "--spans-key", help="doc.spans key for the entities"),
    strict: bool = Opt(False, "--strict", help="stop at the first invalid entity"),
    no_progress: bool = Opt(False, "--no-progress", help="do not show a progress bar"),
    sentences: bool = Opt(
        False, "--sentences", help="one doc per line (sentence), not per document"
    ),
    group_by: str = Opt(
        "doc", "--group-by", help="the field whose consecutive equal values make one document"
    ),
) -> int:
    """Convert GENIA-style JSONL to a spaCy DocBin (.spacy) of documents (or sentences),
    reporting every entity that cannot be kept."""
    from ..corpora.jsonl import convert

    report = convert(
        input_path,
        output_path,
        lang=lang,
        spans_key=spans_key,
        strict=strict,
        show_progress=show_progress(not no_progress),
        group_by=None if sentences else group_by,
    )
    print(report.summary())
    print(f"Saved to {report.output_path}")
    return 0


@app.command("convert-genia")
def convert_genia_cli(
    input_path: Path = Arg(
        ...,
        help="GENIA term corpus 3.02 XML: GENIAcorpus3.02.xml, the same gzipped (.gz), or "
        "the official GENIAcorpus3.02.tgz",
    ),
    output_dir: Path = Arg(..., help="folder to write train.jsonl, dev.jsonl, test.jsonl to"),
    n_train_dev: int = Opt(
        N_TRAIN_DEV, "--n-train-dev", help="sentences of train+dev; the ones after are test"
    ),
    dev_pool: int = Opt(DEV_POOL, "--dev-pool", help="dev is taken from this many first sentences"),
    dev_every: int = Opt(
        DEV_EVERY, "--dev-every", help="dev is every this-many-th sentence of the pool"
    ),
    documents: bool = Opt(
        False, "--documents", help="also write dev.documents.jsonl and test.documents.jsonl: "
        "each sentence inside its whole abstract, the abstract's other sentences as context "
        "only (read them with the reader's group_by = \"doc\")",
    ),
    spaces: bool = Opt(
        False, "--spaces", help="give each record \"spaces\", the XML text's own spacing, so "
        "its docs hold the text as written (Ras/protein) rather than the tokens joined by "
        "spaces (Ras /protein)",
    ),
) -> int:
    """Convert the GENIA term corpus 3.02 XML to the standard train/dev/test split of the
    nested-NER literature, as GENIA-style JSONL."""
    from ..corpora.genia_xml import convert_genia_xml

    report = convert_genia_xml(
        input_path, output_dir, n_train_dev=n_train_dev, dev_pool=dev_pool, dev_every=dev_every,
        documents=documents, spaces=spaces,
    )
    print(report.summary())
    return 0


@app.command("convert-brat")
def convert_brat_cli(
    input_path: Path = Arg(
        ..., help="folder of BRAT documents (name.txt + name.ann), or one .ann or .txt file"
    ),
    output_path: Path = Arg(
        ..., help="file to write: a DocBin if it ends in .spacy, else GENIA-style JSONL"
    ),
    lang: str = Opt("en", "--lang", help="language of the blank pipeline whose tokenizer is used"),
    spans_key: str = Opt(
        "nested", "--spans-key", help="doc.spans key for the entities (of a .spacy output)"
    ),
    sentences: bool = Opt(
        False, "--sentences", help="one record per sentence (rule-based sentencizer), not per "
        "document",
    ),
    strict: bool = Opt(
        False, "--strict", help="stop at the first annotation or document that cannot be kept"
    ),
) -> int:
    """Convert BRAT standoff annotation (text-bound annotations) to a spaCy DocBin or
    GENIA-style JSONL, reporting every annotation that cannot be kept with its code."""
    from ..corpora.brat import convert_brat

    report = convert_brat(
        input_path,
        output_path,
        lang=lang,
        spans_key=spans_key,
        sentences=sentences,
        strict=strict,
    )
    print(report.summary())
    return 0


@app.command("upgrade-config")
def upgrade_config_cli(
    input_path: Path = Arg(..., help="a config whose model is a flat (v1) architecture"),
    output_path: Path = Arg(..., help="the config file to write, its model in blocks"),
) -> int:
    """Rewrite a config of the flat architectures (MRCQuery.v1, MultiNER.v1,
    LocateAndLabel.v1) for their successors in blocks, every setting it gave in the block it
    belongs to; the comments before its first section are kept."""
    from ..errors import Errors
    from ..files import read_config
    from ..models.upgrade import upgrade_config

    text = input_path.read_text(encoding="utf8")
    config = read_config(input_path, interpolate=False)
    components = config.get("components")
    if not isinstance(components, dict) or not any(
            isinstance(c, dict) and isinstance(c.get("model"), dict) for c in components.values()):
        raise ValueError(Errors.NME018.format(path=input_path))
    header = []
    for line in text.splitlines():
        if line.startswith("["):
            break
        header.append(line)
    config = upgrade_config(config)
    output_path.write_text("\n".join(header).rstrip() + "\n" + config.to_str() + "\n",
                           encoding="utf8")
    print(f"Saved to {output_path}")
    return 0
