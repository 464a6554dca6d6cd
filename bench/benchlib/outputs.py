"""A study's output: its Markdown printed and, given ``--out OUT``, OUT.json and OUT.md."""
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from benchlib.machine import machine


def write_outputs(out: Optional[str], report: Dict[str, Any], text: str) -> None:
    """Print the Markdown and, given ``out``, write OUT.json and OUT.md."""
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{out}.json").write_text(json.dumps(report, indent=2))
        Path(f"{out}.md").write_text(text + "\n")


def write_table(out: Optional[str], rows: List[Dict[str, Any]], lines: List[str]) -> None:
    """Write a script's rows (OUT.json) and its Markdown ``lines`` (OUT.md), followed by the
    command line that made them and the machine."""
    command = f"python bench/{Path(sys.argv[0]).name} {' '.join(sys.argv[1:])}"
    lines = [*lines, "", f"Command: `{command}`", f"Machine: {machine()}"]
    write_outputs(out, {"rows": rows, "command": command, "machine": machine()},
                  "\n".join(lines))
