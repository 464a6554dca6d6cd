"""Run ``spacy train`` with the project's overrides, leaving out those whose value is empty, so
that an empty project variable means "the config's own value".

    python scripts/train.py ../configs/mrc_packed_cpu.cfg --output training --gpu-id -1 \
        --paths.train corpus/train.spacy --training.max_epochs "" --training.eval_frequency 500

spaCy's own override parser has no "unset": ``--training.max_epochs ""`` would not parse. The
project's ``max_epochs`` and ``warmup_steps`` differ between the shipped configs (each ships the
schedule it was measured with), so the project passes them through here and leaves them empty
by default. Everything else goes to ``python -m spacy train`` unchanged, in a child process, so
that the run is the one a user would start by hand (its command is printed first).
"""

import shlex
import subprocess
import sys
from typing import List


def drop_empty_overrides(args: List[str]) -> List[str]:
    """args (List[str]): ``spacy train``'s arguments after the config path.
    RETURNS (List[str]): the same without every ``--section.key VALUE`` pair whose VALUE is
    empty (a dotted option: spaCy's config overrides). Other options are kept as they are."""
    kept: List[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        is_override = arg.startswith("--") and "." in arg and "=" not in arg
        if is_override and i + 1 < len(args) and args[i + 1].strip() == "":
            i += 2
            continue
        kept.append(arg)
        i += 1
    return kept


def main(argv: List[str]) -> int:
    command = [sys.executable, "-m", "spacy", "train", *drop_empty_overrides(argv)]
    print("$", shlex.join(command[1:]), flush=True)
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
