"""spaCy's spancat rows with their threshold tuned on dev, as ``tune`` tunes ours: each
pipeline predicts GENIA dev once through ``spacy evaluate``'s protocol, and every threshold of
the grid is scored by both span scorers (``benchlib.scoring.score_by_threshold``). The
learning-curve table scores spancat as trained (threshold 0.5) and our rows tuned; this puts
spancat on the same footing.

    python bench/curves/spancat_threshold.py --dev bench/work_curve/dev.spacy \\
        --pipelines spancat_10=bench/work_curve/spancat_10/model-best \\
        --out bench/results/curves_cpu_minilm/spancat_threshold_10
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # bench/: benchlib

from benchlib.machine import machine  # noqa: E402
from benchlib.scoring import score_by_threshold  # noqa: E402

GRID = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", required=True, help="dev as a .spacy file")
    parser.add_argument("--pipelines", nargs="+", required=True, help="NAME=PATH")
    parser.add_argument("--pipe", default="spancat")
    parser.add_argument("--spans-key", default="nested")
    parser.add_argument("--thresholds", type=float, nargs="+", default=GRID)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", required=True, help="OUT.json and OUT.md")
    args = parser.parse_args()
    results = {}
    lines = [
        f"# spancat's threshold tuned on dev: `{' '.join(sys.argv)}`", "",
        f"Machine: {json.dumps(machine())}", "",
        "F1 by our scorer (spaCy's beside) at each threshold; **bold** the best by ours.", "",
        "| pipeline | " + " | ".join(f"{t:g}" for t in sorted(args.thresholds)) + " |",
        "|---|" + "---|" * len(args.thresholds),
    ]
    for item in args.pipelines:
        name, path = item.split("=", 1)
        rows = score_by_threshold(path, args.dev, args.spans_key, args.batch_size, args.pipe,
                                  args.thresholds)
        best = max(rows, key=lambda row: row["ours"]["f"])
        results[name] = {"path": path, "by_threshold": rows, "best": best}
        cells = [(f"**{r['ours']['f']:.1f}**" if r is best else f"{r['ours']['f']:.1f}")
                 + f" ({r['spacy']['f']:.1f})" for r in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, result in results.items():
        best = result["best"]
        lines.append("")
        lines.append(f"- {name}: best threshold {best['threshold']:g}, P {best['ours']['p']:.1f}, "
                     f"R {best['ours']['r']:.1f}, F1 {best['ours']['f']:.1f} (spaCy's scorer "
                     f"{best['spacy']['f']:.1f})")
    Path(f"{args.out}.json").write_text(json.dumps(results, indent=1) + "\n")
    Path(f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
