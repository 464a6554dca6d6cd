"""What the commands share: the typer app, argument helpers, printing
spans, and ``main`` (exit codes for scripts and tests)."""
from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, List, Optional, Sequence

import click
import typer

from ..files import WriteError
from ..types import DEFAULT_SPANS_KEY

if TYPE_CHECKING:
    from spacy.tokens import Doc

COMMAND = "python -m spacy_nested_mrc"
HELP = """Nested named entity recognition for spaCy: convert data, train a demo, predict,
evaluate, tune the decoding and annotate large corpora with a nested_mrc_ner pipeline. Run a
command with --help for its options."""

app = typer.Typer(
    name=COMMAND, help=HELP, no_args_is_help=True, add_completion=False,
    rich_markup_mode="markdown",
)

# as spaCy's CLI: short names for the parameter declarations of the commands
Arg = typer.Argument
Opt = typer.Option
PRECISION_HELP = (
    "fp32, bf16 (CPUs with bf16 arithmetic, GPUs), fp16 (GPUs) or auto (bf16 where the "
    "device has it, else fp32): the arithmetic of the encoders and heads (default: as the "
    "pipeline's config says)"
)
QUANTIZE_HELP = "int8: the encoders' linear layers in int8 (CPU inference)"
RUNTIME_HELP = (
    "torch, or onnxruntime: the encoders exported to ONNX and run by ONNX Runtime "
    "(CPU inference; with --quantize int8 quantized by ONNX Runtime)"
)


def show_progress(requested: bool = True) -> bool:
    """Whether to draw a progress bar: when asked for and stderr is a terminal (in a log,
    every redraw would be a line of its own, as spaCy's own commands avoid)."""
    return requested and sys.stderr.isatty()


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as the commands print it: its category and coded message, without the
    source file and line that Python's default adds."""
    return f"{category.__name__}: {message}\n"


def float_list(text: str) -> List[float]:
    """Parse a comma-separated list of numbers, as spaCy's CLI takes lists ("0.3,0.4").
    RETURNS (List[float]): the numbers; raises typer.BadParameter for a bad one."""
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise typer.BadParameter(f"expected numbers separated by commas, got {text!r}") from err


def print_entities(doc: "Doc", spans_key: str = DEFAULT_SPANS_KEY) -> None:
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI.

    argv (Optional[Sequence[str]]): the arguments, without the program name; defaults to
        ``sys.argv[1:]``.
    RETURNS (int): the exit code: 0 on success, 1 if the command failed with a data error
        (its coded message is printed to stderr), 2 for usage errors.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    warnings.formatwarning = _format_warning  # a command's process: its output, as spaCy's
    try:
        code = app(args=args, prog_name=COMMAND, standalone_mode=False)
    except click.exceptions.UsageError as err:
        err.show()
        return 2
    except click.exceptions.Abort:
        print("Aborted.", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, FileExistsError, WriteError) as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    # --help and a bare command list exit through click with their own code
    return code if isinstance(code, int) else 0
