"""Every shell command in the README and in docs/ names what exists: our commands and their
options, the configs and the config keys that ``spacy train`` overrides, the workflow steps
of ``spacy project run``. (The README's Python usage runs in test_readme.py; the commands
themselves run in the tests of each command.)"""

import re
import shlex
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
import srsly
import typer
from spacy.util import load_config

from spacy_nested_mrc.cli import app

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shell_commands(page: Path) -> Iterator[Tuple[str, List[str]]]:
    """The commands of a page's ```bash blocks, continuation lines joined, comments and
    ``cd`` dropped, split at ``&&``, each as (page name, its words)."""
    text = page.read_text(encoding="utf8")
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words:
                    yield page.name, words


def all_commands(program: List[str]) -> List[Tuple[str, List[str]]]:
    found = []
    for page in PAGES:
        for name, words in shell_commands(page):
            if words[: len(program)] == program:
                found.append((name, words[len(program):]))
    return found


def click_commands() -> dict:
    group = typer.main.get_command(app)
    return group.commands


def option_names(command) -> set:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


OURS = all_commands(["python", "-m", "spacy_nested_mrc"])
TRAIN = all_commands(["python", "-m", "spacy", "train"])
PROJECT = all_commands(["python", "-m", "spacy", "project", "run"])


def test_the_pages_have_commands():
    assert len(OURS) >= 10 and len(TRAIN) >= 3 and len(PROJECT) >= 3


@pytest.mark.parametrize("page,args", OURS)
def test_our_commands_and_options_exist(page, args):
    commands = click_commands()
    assert args and args[0] in commands, f"{page}: no command {args[:1]}"
    command = commands[args[0]]
    known = option_names(command)
    takes_overrides = command.context_settings.get("allow_extra_args", False)
    for word in args[1:]:
        if word.startswith("--") and takes_overrides and "." in word:
            # a config override (as spaCy's commands take): the config must have the key
            config = load_config(ROOT / args[1], interpolate=False)
            key = word[2:].split("=")[0]
            assert config_has(config, key), f"{page}: {args[1]} has no {key}"
        elif word.startswith("--"):
            assert word.split("=")[0] in known, f"{page}: {args[0]} has no option {word}"


def config_has(config: dict, dotted: str) -> bool:
    node = config
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


@pytest.mark.parametrize("page,args", TRAIN)
def test_train_configs_and_overrides_exist(page, args):
    path = args[0]
    config_path = ROOT / path if not path.startswith("/") else Path(path)
    assert config_path.exists(), f"{page}: no config {path}"
    config = load_config(config_path, interpolate=False)
    for word in args[1:]:
        if word.startswith("--") and "." in word:
            key = word[2:].split("=")[0]
            section, *_ = key.split(".")
            if section in ("paths", "components", "training", "corpora", "nlp", "system"):
                parent = key.rsplit(".", 1)[0]
                # a setting of an existing block (spaCy fills registered defaults)
                assert config_has(config, key) or config_has(config, parent), (
                    f"{page}: {path} has no {key}"
                )


@pytest.mark.parametrize("page,args", PROJECT)
def test_project_steps_exist(page, args):
    project = srsly.read_yaml(ROOT / "project" / "project.yml")
    steps = {c["name"] for c in project["commands"]} | set(project.get("workflows", {}))
    assert args[0] in steps, f"{page}: project.yml has no {args[0]}"
