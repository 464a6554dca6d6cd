"""One long text through the worst case for decoding: Locate-and-Label with a filter that
passes every seed span, the MRC family with heads that pass every pair. Each runs in a fresh
process (tests/runtime/long_text_probe.py), which reports how far its peak resident size grew over a
short text's: the bound is what a dense pairwise step would exceed many times over (one
such matrix over 61,492 proposals asked for 28 GiB)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

# trains pipelines or starts processes: deselected by -m "not slow"
pytestmark = pytest.mark.slow

PROBE = Path(__file__).parent / "long_text_probe.py"
# peak growth allowed, MB, by tokens: the encoder's output and the seed spans are linear in
# the text (401 MB for Locate-and-Label at 100,000 tokens on the tiny BERT:
# bench/results/long_documents_cpu_minilm/long_text_probe_tiny.log)
BOUND_MB = {20_000: 400, 100_000: 1_500}


def probe(encoder: str, kind: str, n_tokens: int, *options: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROBE), encoder, kind, str(n_tokens), *options],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n_tokens", sorted(BOUND_MB))
@pytest.mark.parametrize("kind", ["locate_label", "mrc"])
def test_long_text_in_the_worst_case_has_bounded_memory(tiny_bert, kind, n_tokens):
    result = probe(tiny_bert, kind, n_tokens)
    assert result["tokens"] == n_tokens
    assert result["spans"] > n_tokens // 10
    assert result["peak_growth_mb"] < BOUND_MB[n_tokens], result
    if kind == "locate_label":
        # a million seed spans pass the filter: the proposal cap bites, and says so
        assert result["warnings"] == ["NMW120"]
    else:
        assert result["warnings"] == []


@pytest.mark.parametrize("kind", ["locate_label", "mrc"])
def test_100000_characters_without_punctuation_have_bounded_memory(tiny_bert, kind):
    """A text without sentence punctuation (a table dump) is one sentence to the splitter:
    it is still read in overlapping windows, within the long-text bound."""
    result = probe(tiny_bert, kind, 18_500, "no-punct")
    assert result["characters"] >= 100_000
    assert result["spans"] > result["tokens"] // 10
    assert result["peak_growth_mb"] < BOUND_MB[20_000], result
