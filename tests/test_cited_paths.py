"""Every repository path that the README, docs/ and bench/README.md cite exists: a file, a
folder, or (for a study's ``--out`` prefix) the files it wrote, ``PREFIX.md`` or
``PREFIX.json``. Brace lists (``a_{x,y}.md``) and globs are expanded; the scratch folders
that study commands create (``bench/work*``) and placeholders in capitals are not cited
files."""

import re
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = r"(?:bench|docs|configs|spacy_nested_mrc|project|tests|\.ci)"
# a path: a top-level folder of the repository, then path characters (no leading word,
# slash or dot: "../shared/..." and "bench/configs/..." are not cut in the middle)
CITED = re.compile(rf"(?<![\w./-]){TOP}/[\w./{{}},*-]*[\w*}}]")
SCRATCH = re.compile(r"^bench/work")


def expand(path: str) -> List[str]:
    """``path`` with its first brace list expanded, recursively."""
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        return [path]
    return [found for choice in match.group(1).split(",")
            for found in expand(path[: match.start()] + choice + path[match.end():])]


def exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    target = ROOT / path
    return target.exists() or any(target.parent.glob(target.name + ".*"))


def cited(doc: Path) -> List[tuple]:
    found = []
    for number, line in enumerate(doc.read_text(encoding="utf8").splitlines(), 1):
        for match in CITED.finditer(line):
            path = match.group(0)
            if "..." in path or SCRATCH.match(path) or re.search(r"/[A-Z_]+(\.\w+)?$", path):
                continue
            found += [(number, p) for p in expand(path)]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_cited_path_exists(doc):
    citations = cited(doc)
    missing = [f"{doc.relative_to(ROOT)}:{line}: {path}" for line, path in citations
               if not exists(path)]
    assert not missing, "\n".join(missing)


def test_the_check_sees_citations():
    """Not vacuous: the README cites the configs and the docs it links."""
    paths = {path for _, path in cited(ROOT / "README.md")}
    assert "configs/mrc_packed_cpu.cfg" in paths and "docs/training.md" in paths
    assert not exists("configs/no_such_config.cfg")
