"""``adapt``: continue the masked-language-model pretraining of an encoder on a domain's text,
configured as ``spacy pretrain`` is (a config file and dotted overrides)."""
import sys
from pathlib import Path

import typer

from ._util import Arg, Opt, app, show_progress


@app.command(
    "adapt", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def adapt_cli(
    ctx: typer.Context,
    config_path: Path = Arg(..., help="the adaptation config (e.g. configs/adapt/adapt_cpu.cfg)",
                            exists=True, dir_okay=False),
    output: Path = Arg(..., help="output folder: the adapted encoder goes to OUTPUT/encoder"),
    resume: bool = Opt(False, "--resume", help="go on from OUTPUT's last checkpoint"),
    gpu_id: int = Opt(-1, "--gpu-id", help="GPU to run on (-1: CPU)"),
) -> int:
    """Adapt an encoder to a domain: continued masked-language-model pretraining with
    whole-word masking on raw text (.txt or .jsonl files or folders, gzip included). Settings
    come from the config's [adapt] block; override any as spaCy's commands do, e.g.
    --paths.text corpus.txt.gz --adapt.max_steps 5000. The output's encoder folder is what
    paths.encoder takes."""
    from spacy.cli._util import parse_config_overrides

    from ..adapt import StepInfo, adapt_encoder, load_settings

    settings = load_settings(config_path, parse_config_overrides(ctx.args))
    device = f"cuda:{gpu_id}" if gpu_id >= 0 else "cpu"
    if gpu_id >= 0:
        from spacy import require_gpu

        require_gpu(gpu_id)
    progress = show_progress()
    print(f"Adapting {settings.encoder} on {settings.text} for {settings.max_steps} steps "
          f"of {settings.batch_size} x {settings.max_length} wordpieces ({settings.precision}, "
          f"{device}); checkpoints in {output}", file=sys.stderr)

    def on_step(info: StepInfo) -> None:
        if info.held_out is not None:
            if progress:
                print(file=sys.stderr)
            loss = "-" if info.loss is None else f"{info.loss:.4f}"
            print(f"step {info.step:>7}  epoch {info.epoch}  words {info.words:>11,}  "
                  f"loss {loss:>7}  held-out loss {info.held_out:7.4f}  "
                  f"{info.seconds:8.0f} s", flush=True)
        elif progress:
            print(f"\rstep {info.step:>7}/{settings.max_steps}  loss {info.loss:7.4f}  "
                  f"{info.seconds:6.0f} s", end="", file=sys.stderr, flush=True)

    result = adapt_encoder(settings, output, resume=resume, device=device, on_step=on_step)
    per_million = result.seconds_per_million_words
    print(f"Saved the adapted encoder to {output / 'encoder'} ({result.steps} steps, "
          f"{result.words:,} words, {result.seconds / 60:.1f} min"
          + (f", {per_million / 60:.1f} min per million words" if per_million else "")
          + f", peak RSS {result.peak_rss_mb:,.0f} MiB)")
    return 0
