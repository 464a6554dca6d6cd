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


@pytest.fixture(scope="module")
def intermediate(tiny_bert, tmp_path_factory) -> str:
    """RETURNS (str): a trained pipeline for the configs that start from one."""
    from helpers.biomed import intermediate_pipeline

    return str(intermediate_pipeline(tiny_bert, tmp_path_factory.mktemp("intermediate")))


def sources(config: Path, intermediate: str, encoder: str) -> list:
    """RETURNS (list): the overrides of a config whose pipe starts from a trained pipeline
    (read by ``nlp.initialize``): that pipeline, and its encoder and match head's width."""
    if "from_biomed" not in config.stem:
        return []
    return ["--paths.intermediate", intermediate, "--paths.encoder", encoder,
            "--components.nested_mrc_ner.model.heads.match_hidden", "16"]


@pytest.mark.parametrize("config", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_spacy_debug_config_passes(config):
    """As shipped: a config whose pipe starts from a trained pipeline stands without it."""
    result = spacy_cli("debug", "config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Config is valid" in result.stdout


@pytest.mark.parametrize("config", [p for p in SHIPPED if p.stem.endswith("_cpu")],
                         ids=[p.stem for p in SHIPPED if p.stem.endswith("_cpu")])
def test_spacy_debug_data_reads_the_sample(config, intermediate, tiny_bert, tmp_path):
    """On the embedded default encoder: a config on another one (all-mpnet-base-v2) takes it
    from a folder that a CI machine does not have. The intermediate training's config reads
    the eleven biomedical corpora (here a stand-in, a draw of 30 and 10 sentences)."""
    if config.stem.startswith("mrc_biomed"):
        from helpers.biomed import biomed_folder

        data = ["--paths.biomed", str(biomed_folder(tmp_path)), "--corpora.train.size", "30",
                "--corpora.dev.size", "10"]
        counts = ("30 training docs", "10 evaluation docs")
    else:
        data = ["--paths.train", str(SAMPLE / "train.jsonl"), "--paths.dev",
                str(SAMPLE / "dev.jsonl"), *sources(config, intermediate, tiny_bert)]
        counts = ("63 training docs", "16 evaluation docs")
    encoder = [] if "from_biomed" in config.stem else ["--paths.encoder", "all-MiniLM-L6-v2"]
    result = spacy_cli("debug", "data", str(config), *data, *encoder)
    # its one error on the sample is "Low number of examples", by design of the sample
    assert "Config validation error" not in result.stdout, result.stdout
    assert counts[0] in result.stdout and counts[1] in result.stdout, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
