"""Every shipped config passes spaCy's own checks: ``spacy debug config`` (as shipped, with
``paths.train`` and ``paths.dev`` unset) and ``spacy debug data`` (the CPU configs, on the
shipped sample), each run through spaCy's CLI in a fresh process as a user runs it."""

import subprocess
import sys
from pathlib import Path

import pytest

# trains pipelines or starts processes: deselected by -m "not slow"
pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]
SHIPPED = sorted((ROOT / "configs").glob("*.cfg"))
# the benchmark's spaCy baselines name the encoder by hub name (bench/ resolves it)
CONFIGS = SHIPPED + sorted((ROOT / "bench" / "configs").glob("*.cfg"))
SAMPLE = ROOT / "spacy_nested_mrc" / "sample"


def spacy_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spacy", *args], capture_output=True,
                          text=True, cwd=ROOT)


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_spacy_debug_config_passes(config):
    result = spacy_cli("debug", "config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Config is valid" in result.stdout


@pytest.mark.parametrize("config", [p for p in SHIPPED if p.stem.endswith("_cpu")],
                         ids=[p.stem for p in SHIPPED if p.stem.endswith("_cpu")])
def test_spacy_debug_data_reads_the_sample(config):
    """On the embedded default encoder: a config on another one (all-mpnet-base-v2) takes it
    from a folder that a CI machine does not have."""
    result = spacy_cli("debug", "data", str(config), "--paths.train",
                       str(SAMPLE / "train.jsonl"), "--paths.dev", str(SAMPLE / "dev.jsonl"),
                       "--paths.encoder", "all-MiniLM-L6-v2")
    # its one error on the sample is "Low number of examples", by design of the sample
    assert "Config validation error" not in result.stdout, result.stdout
    assert "63 training docs" in result.stdout and "16 evaluation docs" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr
