"""``tune``: search the prediction thresholds of a pipeline on dev and save them in its
config."""
import json
import sys
from pathlib import Path
from typing import Optional

from ..evaluation.tuning import DEFAULT_GATE_GRID, DEFAULT_SCORE_GRID
from ._util import Arg, Opt, app, float_list


def _grid(values) -> str:
    return ",".join(f"{value:g}" for value in values)


@app.command("tune")
def tune_cli(
    pipeline: Path = Arg(..., help="a trained pipeline folder"),
    data: Path = Arg(..., help="dev data: GENIA-style .jsonl or a .spacy DocBin"),
    output: Optional[Path] = Opt(
        None, "--output", help="where to save the tuned pipeline (default: over PIPELINE)"
    ),
    component: Optional[str] = Opt(
        None, "--component", help="the nested_mrc_ner pipe (default: the only one)"
    ),
    gate_grid: str = Opt(
        _grid(DEFAULT_GATE_GRID),
        "--gate-grid",
        help="values tried for each gate setting (start/end or filter threshold), "
        "comma-separated; one prediction pass each",
    ),
    score_grid: str = Opt(
        _grid(DEFAULT_SCORE_GRID),
        "--score-grid",
        help="score thresholds tried, comma-separated (free: no extra pass)",
    ),
    gold_preproc: bool = Opt(
        False, "--gold-preproc", help="predict on the file's tokens, not the pipeline tokenizer's"
    ),
    no_calibration: bool = Opt(
        False, "--no-calibration", help="keep the model's scores as they are (no Platt fit)"
    ),
    per_label: bool = Opt(
        False, "--per-label",
        help="give each label its own score threshold (label_thresholds); the search says "
        "what that is worth on held-out halves of dev either way",
    ),
    batch_size: int = Opt(64, "--batch-size", help="docs per batch"),
    gpu_id: int = Opt(-1, "--gpu-id", help="GPU to run on (-1: CPU)"),
    limit: int = Opt(0, "--limit", help="first N dev docs (0: all)"),
    report: Optional[Path] = Opt(None, "--report", help="also write the search as JSON here"),
    dry_run: bool = Opt(False, "--dry-run", help="search and print, save nothing"),
) -> int:
    """Search the prediction thresholds on dev, print the P/R/F curve, calibrate the scores
    and write the chosen values into the saved pipeline's config."""
    from ..evaluation.tuning import save_tuned, tune_pipeline

    if gpu_id >= 0:
        from spacy import require_gpu

        require_gpu(gpu_id)
    result = tune_pipeline(
        pipeline, data, component=component, gate_grid=float_list(gate_grid),
        score_grid=float_list(score_grid), gold_preproc=gold_preproc,
        calibrate_scores=not no_calibration, per_label=per_label, batch_size=batch_size,
        limit=limit, progress=lambda text: print(text, file=sys.stderr, flush=True),
    )
    print(result.table())
    print()
    print(result.summary())
    if report:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result.to_dict(), indent=2))
        print(f"Saved {report}")
    if not dry_run:
        target = output or pipeline
        save_tuned(pipeline, result, target)
        print(f"Saved the tuned pipeline to {target}")
    return 0
