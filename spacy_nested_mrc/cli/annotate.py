"""``annotate``: run a pipeline over a corpus, streaming and resumable, locally or on Ray."""
import signal
import sys
from pathlib import Path
from typing import Optional

import typer

from ..annotate.outputs import OUTPUT_FORMATS, committed_documents
from ..annotate.settings import ENGINES, AnnotateSettings
from ..errors import Errors
from ..inputs import ENCODING_ERRORS, FORMATS, LONG_DOCS, SUFFIXES
from ..runtime.processes import WorkerDied, stop_signal_of
from ._util import PRECISION_HELP, QUANTIZE_HELP, RUNTIME_HELP, Arg, Opt, app, show_progress

DEFAULTS = AnnotateSettings()


@app.command("annotate")
def annotate_cli(
    pipeline: str = Arg(..., help="a trained pipeline (folder or package name)"),
    input_path: str = Arg(
        ..., help="plain text (one document a line), JSON Lines or a .spacy DocBin: a file, "
        f"a folder (its files ending in {', '.join(SUFFIXES)}, each read once), or - for stdin"
    ),
    output: Path = Arg(..., help="output folder: shards and manifest.json (resumed if there)"),
    input_format: str = Opt("auto", "--input-format", help=f"one of {', '.join(FORMATS)}"),
    id_field: str = Opt("id", "--id-field", help="JSON Lines field of the document id"),
    text_field: str = Opt("text", "--text-field", help="JSON Lines field of the text"),
    output_format: str = Opt(
        DEFAULTS.output_format, "--output-format",
        help=f"shards as {' or '.join(OUTPUT_FORMATS)}"
    ),
    spans_key: Optional[str] = Opt(
        None, "--spans-key", help="doc.spans key to write (default: the pipe's own)"
    ),
    write_ents: bool = Opt(False, "--write-ents", help="also write doc.ents of each document"),
    no_text: bool = Opt(False, "--no-text", help="leave the text out of the records"),
    batch_size: int = Opt(DEFAULTS.batch_size, "--batch-size", help="documents per batch"),
    n_process: int = Opt(DEFAULTS.n_process, "--n-process", help="processes (local engine)"),
    sort_buffer: int = Opt(
        DEFAULTS.sort_buffer, "--sort-buffer",
        help="documents read ahead and batched by length, written in input order (local "
        "engine; 0: input order)"),
    shard_size: int = Opt(
        DEFAULTS.shard_size, "--shard-size", help="documents per committed shard"),
    encoding_errors: str = Opt(
        DEFAULTS.encoding_errors, "--encoding-errors",
        help=f"a line that is not UTF-8 ({' or '.join(ENCODING_ERRORS)}): its bad bytes "
        "replaced by U+FFFD, or the line skipped; either way warned and listed"),
    long_docs: str = Opt(
        DEFAULTS.long_docs, "--long-docs",
        help=f"a document over --max-length characters ({' or '.join(LONG_DOCS)}): annotated "
        "in pieces cut where the text breaks, or skipped; either way warned and listed"),
    max_length: Optional[int] = Opt(
        DEFAULTS.max_length, "--max-length",
        help="the most characters annotated in one piece (default: the pipeline's "
        "nlp.max_length, 1,000,000 unless it sets another)"),
    gpu_id: int = Opt(-1, "--gpu-id", help="GPU to run on (-1: CPU)"),
    quantize: Optional[str] = Opt(None, "--quantize", help=QUANTIZE_HELP),
    runtime: Optional[str] = Opt(None, "--runtime", help=RUNTIME_HELP),
    precision: Optional[str] = Opt(None, "--precision", help=PRECISION_HELP),
    onednn_cache: int = Opt(
        DEFAULTS.onednn_cache, "--onednn-cache",
        help="the most bf16 primitives oneDNN keeps built per process (-1: its default, "
        "1,024); fewer hold less memory over a long job"),
    release_every: int = Opt(
        DEFAULTS.release_every, "--release-every",
        help="give free heap memory back every that many documents per process (0: never)",
    ),
    engine: str = Opt("local", "--engine", help=f"one of {', '.join(ENGINES)}"),
    address: Optional[str] = Opt(
        None, "--address", help="Ray cluster to join (default: start a local instance)"
    ),
    concurrency: int = Opt(1, "--concurrency", help="Ray actors, each with the pipeline"),
    num_cpus_per_worker: float = Opt(1.0, "--num-cpus-per-worker", help="CPUs per Ray actor"),
    num_gpus_per_worker: float = Opt(0.0, "--num-gpus-per-worker", help="GPUs per Ray actor"),
    window: int = Opt(10000, "--window", help="documents per Ray dataset"),
    overwrite: bool = Opt(
        False, "--overwrite", help="start again in a folder holding another job's output"
    ),
    no_progress: bool = Opt(False, "--no-progress", help="no progress bar"),
) -> int:
    """Annotate a corpus: every document's nested spans (character and token offsets,
    label, score) in JSON Lines or DocBin shards, committed atomically with a manifest.
    Killed and run again with the same arguments, it continues where it stopped; the output
    then holds every input document exactly once. Odd input (malformed lines, bytes that
    are not UTF-8, documents over --max-length, ids that are not strings, duplicate ids) is
    warned with a code and listed in the summary and the manifest; one job at a time holds
    the output folder (annotate.lock)."""
    from spacy import require_gpu

    from ..annotate import AnnotateSettings, InputSpec, annotate_corpus

    if gpu_id >= 0 and engine == "local":
        require_gpu(gpu_id)
    settings = AnnotateSettings(
        spans_key=spans_key, output_format=output_format, write_ents=write_ents,
        with_text=not no_text, batch_size=batch_size, n_process=n_process,
        sort_buffer=sort_buffer,
        shard_size=shard_size, quantize=quantize, runtime=runtime, precision=precision,
        onednn_cache=None if onednn_cache < 0 else onednn_cache, release_every=release_every,
        encoding_errors=encoding_errors, long_docs=long_docs, max_length=max_length,
    )
    options = {
        "address": address, "concurrency": concurrency,
        "num_cpus_per_worker": num_cpus_per_worker,
        "num_gpus_per_worker": num_gpus_per_worker, "window": window,
    }
    try:
        summary = annotate_corpus(
            pipeline, InputSpec(input_path, input_format, id_field, text_field), output,
            settings, engine=engine, engine_options=options, overwrite=overwrite,
            progress=show_progress(not no_progress),
        )
    except WorkerDied as err:  # a worker killed (out of memory) or crashed
        print(Errors.NME192.format(worker=err, output=output,
                                   documents=committed_documents(output)), file=sys.stderr)
        raise typer.Exit(1) from None
    except KeyboardInterrupt as err:  # SIGINT, or SIGTERM/SIGHUP (``Stopped``)
        signum = stop_signal_of(err)
        print(Errors.NME139.format(signal=signal.Signals(signum).name, output=output,
                                   documents=committed_documents(output)), file=sys.stderr)
        raise typer.Exit(128 + signum) from None
    print(summary.text())
    print(f"Saved to {output}")
    return 0
