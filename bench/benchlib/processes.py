"""A study's variant in a fresh process: the caches of built bf16 kernels are sized once a
process (``spacy_nested_mrc.runtime.memory.limit_onednn_cache``), so each variant of a
cache study runs in its own, started without the variables that size them."""
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

from spacy_nested_mrc.runtime.memory import MKLDNN_CACHE_VARIABLE, ONEDNN_CACHE_VARIABLE

# the flag a study's script takes to run one variant and print its report
CHILD = "--child"


def run_fresh(script: str, arguments: List[str], threads: int) -> Dict[str, Any]:
    """Run ``script --child ARGUMENTS`` in a fresh process with ``threads`` threads and
    neither cache variable in its environment (their defaults, unless the variant sets
    them). RETURNS (Dict[str, Any]): the report, the JSON of its last output line."""
    env = {k: v for k, v in os.environ.items()
           if k not in (ONEDNN_CACHE_VARIABLE, MKLDNN_CACHE_VARIABLE)}
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, script, CHILD, *arguments], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
