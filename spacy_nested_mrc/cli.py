"""Command-line interface: ``python -m spacy_nested_mrc <command> ...``.

Each subcommand is a pair of functions: one that adds its arguments to an
``argparse`` subparser, and one that runs it from the parsed arguments and
returns an exit code. To add a command, write both and register them in
``COMMANDS`` (or call :func:`register_command`).
"""
from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import Errors


@dataclass(frozen=True)
class Command:
    """A subcommand of the CLI.

    help (str): One-line description shown in ``--help``.
    add_arguments (Callable[[argparse.ArgumentParser], None]): Adds the
        command's arguments to its subparser.
    run (Callable[[argparse.Namespace], int]): Runs the command, returns the
        exit code.
    """

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def register_command(
    name: str,
    help: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
) -> None:
    """Register a subcommand (replacing one of the same name).

    name (str): The subcommand's name on the command line.
    help (str): One-line description shown in ``--help``.
    add_arguments (Callable[[argparse.ArgumentParser], None]): Adds arguments.
    run (Callable[[argparse.Namespace], int]): Runs it, returns the exit code.
    """
    COMMANDS[name] = Command(help=help, add_arguments=add_arguments, run=run)


# convert ---------------------------------------------------------------------


def add_convert_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``convert``.

    parser (argparse.ArgumentParser): The subparser.
    """
    parser.add_argument("input", help="GENIA-style JSONL file (one sentence per line)")
    parser.add_argument("output", help=".spacy file to write (or an existing folder)")
    parser.add_argument("--lang", default="en", help="language of the vocab (default: en)")
    parser.add_argument(
        "--spans-key", default="nested", help="doc.spans key for the entities (default: nested)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop at the first invalid entity"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="do not show a progress bar"
    )


def run_convert(args: argparse.Namespace) -> int:
    """Convert a JSONL file to a DocBin and print the report's summary.

    args (argparse.Namespace): The parsed arguments of ``convert``.
    RETURNS (int): The exit code, 0 on success.
    """
    from .data import convert

    report = convert(
        args.input,
        args.output,
        lang=args.lang,
        spans_key=args.spans_key,
        strict=args.strict,
        show_progress=not args.no_progress,
    )
    print(report.summary())
    print(f"Saved to {report.output_path}")
    return 0


register_command(
    "convert",
    "convert GENIA-style JSONL to a spaCy DocBin (.spacy)",
    add_convert_arguments,
    run_convert,
)


# convert-genia ---------------------------------------------------------------


def add_convert_genia_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``convert-genia``.

    parser (argparse.ArgumentParser): The subparser.
    """
    from .corpora.genia_xml import DEV_EVERY, DEV_POOL, N_TRAIN_DEV

    parser.add_argument(
        "input",
        help="GENIA term corpus 3.02 XML: GENIAcorpus3.02.xml, the same gzipped (.gz), or the "
        "official GENIAcorpus3.02.tgz",
    )
    parser.add_argument(
        "output", help="folder to write train.jsonl, dev.jsonl and test.jsonl to (created)"
    )
    parser.add_argument(
        "--n-train-dev",
        type=int,
        default=N_TRAIN_DEV,
        help=f"sentences of train+dev, the ones after are test (default: {N_TRAIN_DEV})",
    )
    parser.add_argument(
        "--dev-pool",
        type=int,
        default=DEV_POOL,
        help=f"dev is taken from this many first sentences (default: {DEV_POOL})",
    )
    parser.add_argument(
        "--dev-every",
        type=int,
        default=DEV_EVERY,
        help=f"dev is every this-many-th sentence of the pool, from the first (default: "
        f"{DEV_EVERY})",
    )


def run_convert_genia(args: argparse.Namespace) -> int:
    """Convert the GENIA XML to the standard train/dev/test JSONL split and print the report.

    args (argparse.Namespace): The parsed arguments of ``convert-genia``.
    RETURNS (int): The exit code, 0 on success.
    """
    from .corpora.genia_xml import convert_genia_xml

    report = convert_genia_xml(
        args.input,
        args.output,
        n_train_dev=args.n_train_dev,
        dev_pool=args.dev_pool,
        dev_every=args.dev_every,
    )
    print(report.summary())
    return 0


register_command(
    "convert-genia",
    "convert the GENIA term corpus 3.02 XML to train/dev/test GENIA-style JSONL",
    add_convert_genia_arguments,
    run_convert_genia,
)


# demo / predict ---------------------------------------------------------------

DEMO_TEXT = (
    "Activation of the IL-2 gene in human T cells requires binding of NF-kappa B "
    "to the IL-2 promoter, while Jurkat cells express c-fos mRNA ."
)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``demo``."""
    parser.add_argument("--output", default="training/demo", help="where to save the pipeline")
    parser.add_argument("--epochs", type=int, default=8, help="passes over the sample")
    parser.add_argument("--batch-size", type=int, default=8, help="sentences per update")
    parser.add_argument("--learn-rate", type=float, default=1e-4, help="Adam learning rate")
    parser.add_argument("--text", default=DEMO_TEXT, help="text to run the trained pipe on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--encoder", default=None,
        help="Hugging Face encoder (hub name or local folder); default: the config's embedded one",
    )


def run_demo(args: argparse.Namespace) -> int:
    """Train ``nested_mrc_ner`` (default config: MRC queries on the embedded
    all-MiniLM-L6-v2) on the sample shipped with the package, save it, score it on the
    sample's dev part and print the nested entities it finds in a text."""
    import spacy
    from spacy.training import Example
    from spacy.util import fix_random_seed, minibatch

    from .data import SAMPLE_DIR, create_jsonl_reader

    fix_random_seed(args.seed)
    nlp = spacy.blank("en")
    model = {} if args.encoder is None else {"model": {"encoder": args.encoder}}
    nlp.add_pipe("nested_mrc_ner", config=model)
    train = list(create_jsonl_reader(SAMPLE_DIR / "train.jsonl")(nlp))
    dev = list(create_jsonl_reader(SAMPLE_DIR / "dev.jsonl")(nlp))
    optimizer = nlp.initialize(lambda: train)
    optimizer.learn_rate = args.learn_rate
    rng = random.Random(args.seed)
    for epoch in range(args.epochs):
        rng.shuffle(train)
        losses: dict = {}
        for batch in minibatch(train, args.batch_size):
            nlp.update(batch, sgd=optimizer, losses=losses)
        print(f"epoch {epoch + 1}/{args.epochs}  loss {losses['nested_mrc_ner']:.3f}", flush=True)
    scores = nlp.evaluate([Example(eg.predicted, eg.reference) for eg in dev])
    print(f"sample dev: P {scores['spans_nested_p']:.3f}  R {scores['spans_nested_r']:.3f}  "
          f"F {scores['spans_nested_f']:.3f}")
    Path(args.output).mkdir(parents=True, exist_ok=True)
    nlp.to_disk(args.output)
    print(f"Saved to {args.output}")
    print_entities(nlp(args.text))
    return 0


def load_pipeline(name: str, **kwargs):
    """``spacy.load`` with a coded one-line error (NME042) for a pipeline that is not there.
    RETURNS (Language): the pipeline."""
    import spacy

    try:
        return spacy.load(name, **kwargs)
    except OSError as err:
        raise FileNotFoundError(Errors.NME042.format(name=name, error=err)) from err


def print_entities(doc, spans_key: str = "nested") -> None:
    """Print the spans of ``doc.spans[spans_key]`` with their scores, nested ones indented."""
    group = doc.spans[spans_key] if spans_key in doc.spans else doc.spans.setdefault(spans_key, [])
    scores = group.attrs.get("scores", [None] * len(group))
    print(doc.text)
    order = sorted(range(len(group)), key=lambda i: (group[i].start, -group[i].end))
    for i in order:
        span = group[i]
        depth = sum(
            1 for other in group
            if other.start <= span.start and span.end <= other.end
            and (other.start, other.end) != (span.start, span.end)
        )
        print(f"{'  ' * depth}{span.text!r:40} {span.label_:10} {float(scores[i]):.3f}")


def add_predict_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``predict``."""
    parser.add_argument("pipeline", help="a trained pipeline (folder or package name)")
    parser.add_argument("text", nargs="+", help="texts to analyse")


def run_predict(args: argparse.Namespace) -> int:
    """Load a pipeline and print the nested entities of each text."""

    from .tuning import find_component

    nlp = load_pipeline(args.pipeline)
    key = nlp.get_pipe(find_component(nlp)).key
    for doc in nlp.pipe(args.text):
        print_entities(doc, key)
    return 0


register_command(
    "demo",
    "train on the shipped sample with the default config and print the entities of a text",
    add_demo_arguments,
    run_demo,
)
register_command("predict", "print the nested entities a pipeline finds", add_predict_arguments,
                 run_predict)


# evaluate ----------------------------------------------------------------------


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``evaluate``."""
    parser.add_argument("pipeline", help="a trained pipeline (folder or package name)")
    parser.add_argument("data", help="gold data: GENIA-style .jsonl or a .spacy DocBin")
    parser.add_argument("--output", default=None, help="folder for report.json/.md and plots")
    parser.add_argument("--spans-key", default="nested")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--examples", type=int, default=20, help="error examples to keep")
    parser.add_argument("--gold-preproc", action="store_true",
                        help="predict on the file's tokens, not on nlp(text)'s (as spacy "
                        "evaluate --gold-preproc)")


def predict_gold(pipeline: str, data: str, spans_key: str, batch_size: int, limit: int = 0,
                 gold_preproc: bool = False):
    """Load a pipeline and run it on gold data (.jsonl or .spacy) as ``spacy evaluate`` does
    (``data.predict_examples``). RETURNS (List[Example]): predicted docs paired with gold."""
    from .data import predict_examples

    return predict_examples(load_pipeline(pipeline), data, spans_key, limit=limit,
                            gold_preproc=gold_preproc, batch_size=batch_size)


def run_evaluate(args: argparse.Namespace) -> int:
    """Score a pipeline on gold data; print Markdown, and write JSON, Markdown and plots."""
    from .evaluate import evaluate_examples, to_markdown, write_report

    examples = predict_gold(args.pipeline, args.data, args.spans_key, args.batch_size,
                            gold_preproc=args.gold_preproc)
    report = evaluate_examples(examples, args.spans_key, args.examples)
    print(to_markdown(report, args.spans_key))
    if args.output:
        for path in write_report(report, Path(args.output), args.spans_key):
            print(f"Saved {path}")
    return 0


register_command(
    "evaluate",
    "score a pipeline: P/R/F, per type, nested vs not, by length, errors by kind",
    add_evaluate_arguments,
    run_evaluate,
)


# tune --------------------------------------------------------------------------


def add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``tune``."""
    from .tuning import DEFAULT_GATE_GRID, DEFAULT_SCORE_GRID

    parser.add_argument("pipeline", help="a trained pipeline folder")
    parser.add_argument("data", help="dev data: GENIA-style .jsonl or a .spacy DocBin")
    parser.add_argument("--output", default=None,
                        help="where to save the tuned pipeline (default: over PIPELINE)")
    parser.add_argument("--component", default=None,
                        help="the nested_mrc_ner pipe (default: the only one)")
    parser.add_argument("--gate-grid", type=float, nargs="+", default=list(DEFAULT_GATE_GRID),
                        help="values tried for each gate setting (start/end or filter "
                        f"threshold), one prediction pass each (default: {DEFAULT_GATE_GRID})")
    parser.add_argument("--score-grid", type=float, nargs="+",
                        default=list(DEFAULT_SCORE_GRID),
                        help="score thresholds tried (free; default: 0.10 to 0.95 by 0.05)")
    parser.add_argument("--gold-preproc", action="store_true",
                        help="predict on the file's tokens instead of the pipeline tokenizer's")
    parser.add_argument("--no-calibration", action="store_true",
                        help="keep the model's scores as they are (no Platt calibration)")
    parser.add_argument("--batch-size", type=int, default=64, help="docs per batch (default: 64)")
    parser.add_argument("--limit", type=int, default=0, help="first N dev docs (default: all)")
    parser.add_argument("--report", default=None, help="also write the search as JSON here")
    parser.add_argument("--dry-run", action="store_true", help="search and print, save nothing")


def run_tune(args: argparse.Namespace) -> int:
    """Search the prediction thresholds on dev, print the curve and save the tuned pipeline."""
    import json

    from .tuning import save_tuned, tune_pipeline

    result = tune_pipeline(
        args.pipeline, args.data, component=args.component, gate_grid=args.gate_grid,
        score_grid=args.score_grid, gold_preproc=args.gold_preproc,
        calibrate_scores=not args.no_calibration, batch_size=args.batch_size,
        limit=args.limit, progress=lambda text: print(text, file=sys.stderr, flush=True),
    )
    print(result.table())
    print()
    print(result.summary())
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(result.to_dict(), indent=2))
        print(f"Saved {args.report}")
    if not args.dry_run:
        output = args.output or args.pipeline
        save_tuned(args.pipeline, result, output)
        print(f"Saved the tuned pipeline to {output}")
    return 0


register_command(
    "tune",
    "search the prediction thresholds on dev and write them into the pipeline's config",
    add_tune_arguments,
    run_tune,
)


# visualize ---------------------------------------------------------------------


def add_visualize_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``visualize``."""
    parser.add_argument("pipeline", help="a trained pipeline (folder or package name)")
    parser.add_argument("data", help="gold data: GENIA-style .jsonl or a .spacy DocBin")
    parser.add_argument("output", help="HTML file to write")
    parser.add_argument("--limit", type=int, default=20, help="sentences to render")
    parser.add_argument("--spans-key", default="nested")


def run_visualize(args: argparse.Namespace) -> int:
    """Render gold and predicted spans side by side (displaCy span style) to HTML."""
    from .visualize import write_html

    examples = predict_gold(args.pipeline, args.data, args.spans_key, 64, args.limit)
    print(f"Saved {write_html(examples, args.output, args.spans_key, title=args.pipeline)}")
    return 0


register_command(
    "visualize",
    "render gold and predicted nested spans side by side to HTML (displaCy span style)",
    add_visualize_arguments,
    run_visualize,
)


# main ------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with one subparser per registered command.

    RETURNS (argparse.ArgumentParser): The parser.
    """
    parser = argparse.ArgumentParser(
        prog="python -m spacy_nested_mrc",
        description="Nested named entity recognition for spaCy.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(subparser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    argv (Optional[Sequence[str]]): The arguments, without the program name;
        defaults to ``sys.argv[1:]``.
    RETURNS (int): The exit code: 0 on success, 1 if the command failed with
        a data error (the message is printed to stderr), 2 for usage errors.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return COMMANDS[args.command].run(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
