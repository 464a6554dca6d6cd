"""Tests for giving freed heap memory back while training (spacy_nested_mrc.runtime.memory)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import spacy
from spacy.util import registry

from spacy_nested_mrc.runtime import memory
from spacy_nested_mrc.runtime.memory import _libc, create_release_memory, preloaded_allocator

needs_glibc = pytest.mark.skipif(_libc() is None, reason="needs glibc's malloc_trim")

FRAGMENTED_HEAP = textwrap.dedent(
    """
    import json, sys
    from spacy_nested_mrc.runtime.memory import release_free_memory, set_mmap_threshold

    if len(sys.argv) > 1:
        set_mmap_threshold(int(sys.argv[1]))

    def rss_mb():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024

    blocks = [bytearray(50_000) for _ in range(8_000)]  # below glibc's mmap threshold
    kept = blocks[::50]  # the heap stays fragmented: a live block every 2.5 MB
    del blocks
    before = rss_mb()
    released = release_free_memory()
    print(json.dumps({"before": before, "after": rss_mb(), "released": released}))
    """
)


@pytest.mark.slow
@needs_glibc
def test_release_gives_fragmented_heap_memory_back():
    """In a fresh process (the test process's heap is not touched): 400 MB allocated, all
    but every 50th block freed; the holes stay resident until the release."""
    out = subprocess.run(
        [sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result["released"] is True
    assert result["after"] < result["before"] - 250


@pytest.mark.slow
@needs_glibc
def test_mmap_threshold_gives_large_blocks_back_when_freed():
    """The same heap with blocks of 50 KB mapped on their own: freed, they are gone."""

    def resident_before_release(*args: str) -> float:
        out = subprocess.run(
            [sys.executable, "-c", FRAGMENTED_HEAP, *args], capture_output=True, text=True,
            check=True,
        )
        return json.loads(out.stdout)["before"]

    assert resident_before_release("40000") < resident_before_release() - 250


def test_callback_releases_every_n_steps_and_chains(monkeypatch):
    calls, chained = [], []
    monkeypatch.setattr(
        "spacy_nested_mrc.runtime.memory.release_free_memory", lambda: calls.append(1) or True
    )
    callback = create_release_memory(every=3, then=lambda nlp, args: chained.append(args["step"]))
    for step in range(7):
        callback(None, {"step": step, "epoch": 0})
    assert len(calls) == 3  # steps 0, 3, 6
    assert chained == list(range(7))


def test_training_through_glibc_is_told_once_how_to_keep_its_pages(monkeypatch):
    """NMW171 on the first step of a CPU training through glibc's allocator, and once; none
    where another allocator is preloaded."""
    monkeypatch.setattr(memory, "release_free_memory", lambda: True)
    monkeypatch.setattr(memory, "_libc", lambda: object())  # glibc, whatever runs the test
    monkeypatch.setattr(memory, "preloaded_allocator", lambda: None)
    callback = create_release_memory(every=4)
    with pytest.warns(UserWarning, match=r"NMW171.*every 4 step.*LD_PRELOAD"):
        callback(None, {"step": 0, "epoch": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        callback(None, {"step": 1, "epoch": 0})
        monkeypatch.setattr(memory, "preloaded_allocator", lambda: "tcmalloc")
        create_release_memory(every=4)(None, {"step": 0, "epoch": 0})


def test_a_preloaded_allocator_is_read_from_the_memory_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    assert preloaded_allocator(maps) is None
    with maps.open("a") as f:
        f.write("7f02-7f03 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4\n")
    assert preloaded_allocator(maps) == "tcmalloc"
    assert preloaded_allocator(tmp_path / "missing") is None


def test_callback_is_registered_and_checks_every():
    factory = registry.callbacks.get("spacy-nested-mrc.release_memory.v1")
    assert factory is create_release_memory
    with pytest.raises(ValueError, match="NME003"):
        factory(every=0)
    with pytest.raises(ValueError, match="NME003"):
        factory(mmap_threshold=-1)


def test_release_pipe_releases_every_n_documents_and_changes_nothing(monkeypatch):
    import spacy

    calls = []
    monkeypatch.setattr(
        "spacy_nested_mrc.runtime.memory.release_free_memory", lambda: calls.append(1) or True
    )
    nlp = spacy.blank("en")
    nlp.add_pipe("nested_mrc_release_memory", config={"every": 3})
    texts = [f"text number {i}" for i in range(10)]
    docs = list(nlp.pipe(texts, batch_size=4))
    assert [doc.text for doc in docs] == texts
    assert len(calls) == 3  # after documents 3, 6 and 9
    nlp("one more")  # the 11th: no release; the 12th: one
    nlp("and another")
    assert len(calls) == 4
    with pytest.raises(ValueError, match="NME003"):
        nlp.add_pipe("nested_mrc_release_memory", name="other", config={"every": 0})


@pytest.mark.slow
def test_release_pipe_found_by_spacy_without_importing_the_package():
    """A user's config names the factory; spaCy finds it through the entry point."""
    code = (
        "import spacy, sys; nlp = spacy.blank('en'); nlp.add_pipe('nested_mrc_release_memory');"
        " nlp('a text'); print(nlp.pipe_names, 'spacy_nested_mrc.runtime.memory' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['nested_mrc_release_memory'] True"


def test_onednn_cache_limit_is_set_once_and_keeps_the_users_value(monkeypatch):
    """The callback sets the capacity oneDNN reads at its first primitive, unless the
    environment already gives one (the user's choice wins)."""
    from spacy.util import registry

    from spacy_nested_mrc.runtime.memory import (
        MKLDNN_CACHE_VARIABLE,
        ONEDNN_CACHE_VARIABLE,
        limit_onednn_cache,
    )

    monkeypatch.delenv(ONEDNN_CACHE_VARIABLE, raising=False)
    monkeypatch.delenv(MKLDNN_CACHE_VARIABLE, raising=False)
    callback = registry.resolve({"cb": {
        "@callbacks": "spacy-nested-mrc.limit_onednn_cache.v1", "capacity": 16}})["cb"]
    nlp = spacy.blank("en")
    assert callback(nlp) is nlp
    assert os.environ[ONEDNN_CACHE_VARIABLE] == os.environ[MKLDNN_CACHE_VARIABLE] == "16"
    monkeypatch.setenv(ONEDNN_CACHE_VARIABLE, "512")
    monkeypatch.delenv(MKLDNN_CACHE_VARIABLE)
    assert limit_onednn_cache(16) == [MKLDNN_CACHE_VARIABLE]
    assert os.environ[ONEDNN_CACHE_VARIABLE] == "512"
    with pytest.raises(ValueError, match="NME003"):
        limit_onednn_cache(-1)


@pytest.mark.parametrize("name", ["mrc_cpu", "mrc_packed_cpu", "multi_ner_cpu",
                                  "locate_label_cpu"])
def test_cpu_configs_bound_the_onednn_cache_before_init(name):
    from helpers.locate_label import CONFIGS
    from spacy.util import load_config

    config = load_config(CONFIGS / f"{name}.cfg", interpolate=False)
    before_init = config["initialize"]["before_init"]
    assert before_init["@callbacks"] == "spacy-nested-mrc.limit_onednn_cache.v1"
    assert before_init["capacity"] > 0
