"""``average``: trained pipelines averaged parameter by parameter into one (a model soup:
runs from the same start on other seeds or schedules)."""
from pathlib import Path
from typing import List, Optional

from ._util import COMMAND, Arg, Opt, app, float_list


@app.command("average")
def average_cli(
    pipelines: List[Path] = Arg(..., help="two or more trained pipeline folders of the same "
                                "pipes and labels, trained from the same start"),
    output: Path = Opt(..., "--output", help="where to save the averaged pipeline"),
    weights: Optional[str] = Opt(
        None, "--weights", help="each pipeline's weight in the mean, comma-separated, in the "
        "pipelines' order (default: equal)"
    ),
) -> int:
    """Average the pipelines' trained parameters into the first's pipeline and save it. Its
    thresholds are the first pipeline's: tune it on dev before use."""
    from ..training.averaging import average_pipelines

    nlp = average_pipelines(pipelines, float_list(weights) if weights else None)
    nlp.to_disk(output)
    print(f"Saved {output}: the parameters of {len(pipelines)} pipelines averaged. Its "
          f"thresholds are {pipelines[0]}'s; tune it on dev: {COMMAND} tune {output} DEV")
    return 0
