"""Command-line interface: ``python -m spacy_nested_mrc <command> ...``.

Each subcommand is a pair of functions: one that adds its arguments to an
``argparse`` subparser, and one that runs it from the parsed arguments and
returns an exit code. To add a command, write both and register them in
``COMMANDS`` (or call :func:`register_command`).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass


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
