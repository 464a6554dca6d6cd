"""Giving freed heap memory back to the system while training and while annotating.

Training allocates and frees tensors of a different size every batch (the sequences' lengths
vary). glibc's allocator keeps the freed memory in its heaps for reuse, and with sizes that
rarely repeat the heaps fill with free holes that count in the process's resident size
(``malloc_trim(0)`` gives them back at once). The remedies, as in Dask's workers: call
``malloc_trim(0)`` now and then, and map large blocks on their own so that freeing them gives
them back. Both come as spaCy's ``[training.before_update]`` callback. A trim every step keeps
the peak flat in the size of the training set, at a cost in training time on CPU (each step
faults the returned pages in again); the shipped CPU configs trim every step. A low mmap
threshold costs more time, so it is opt-in (what each costs: docs/results.md, "Training memory
against the number of training sentences")::

    [training.before_update]
    @callbacks = "spacy-nested-mrc.release_memory.v1"
    every = 1
    mmap_threshold = 0

Inference has the same pattern (every batch has other lengths; docs/annotate.md measures a
stream of abstracts with and without it). The ``nested_mrc_release_memory`` pipe does that
inside ``nlp.pipe`` (in every worker process with ``n_process``); ``annotate`` adds it.

Each trim hands pages back that the next step faults in again: the kernel's share of a CPU
training run. A C allocator that keeps its pages between steps (tcmalloc, preloaded) removes
it at a lower peak; training through glibc's on a CPU warns NMW171 once, saying how."""

import ctypes
import ctypes.util
import os
import resource
import sys
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import get_torch_default_device

from ..errors import Warnings
from ..validation import check_positive

BeforeUpdate = Callable[[Language, Dict[str, Any]], None]
# the variables that size the caches of built bf16 kernels, each read once a process: oneDNN's
# primitive cache, and the cache of torch's mkldnn operators (ideep) in front of it
ONEDNN_CACHE_VARIABLE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
MKLDNN_CACHE_VARIABLE = "LRU_CACHE_CAPACITY"


@lru_cache(maxsize=1)
def _libc() -> Optional[ctypes.CDLL]:
    """glibc, with ``malloc_trim`` and ``mallopt`` typed; None on other C libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None
    return libc


M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h
# C allocators that keep freed pages between steps, preloaded in place of glibc's
PRELOADED_ALLOCATORS = ("tcmalloc", "jemalloc", "mimalloc")
PROCESS_MAPS = Path("/proc/self/maps")


def preloaded_allocator(maps: Path = PROCESS_MAPS) -> Optional[str]:
    """The C allocator preloaded in place of glibc's (``LD_PRELOAD``), read from the
    process's memory maps.

    maps (Path): the memory maps to read (the process's own by default).
    RETURNS (Optional[str]): "tcmalloc", "jemalloc" or "mimalloc"; None where none is mapped
        or the maps cannot be read.
    """
    try:
        mapped = maps.read_text(encoding="utf8", errors="replace")
    except OSError:
        return None
    return next((name for name in PRELOADED_ALLOCATORS if f"lib{name}" in mapped), None)


def advise_allocator(every: int) -> None:
    """Warn (NMW171) where training on a CPU gives memory back through glibc's allocator
    every ``every`` steps, with how to preload one that keeps its pages."""
    if (_libc() is not None and preloaded_allocator() is None
            and get_torch_default_device().type == "cpu"):
        warnings.warn(Warnings.NMW171.format(every=every))


def set_mmap_threshold(n_bytes: int) -> bool:
    """Serve every allocation of at least ``n_bytes`` by its own memory map, given back to
    the system when freed, and stop glibc from raising that threshold by itself (it follows
    the largest freed block up to its maximum, 2**25 bytes on 64-bit, after which tensors of
    that size live in the heap).

    n_bytes (int): the threshold in bytes.
    RETURNS (bool): whether it was set; False where the C library cannot.
    """
    libc = _libc()
    return bool(libc.mallopt(M_MMAP_THRESHOLD, n_bytes)) if libc is not None else False


def release_free_memory() -> bool:
    """Give the free memory of the C heap back to the system (glibc's ``malloc_trim(0)``).

    RETURNS (bool): whether memory was given back; False where the C library cannot.
    """
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def peak_rss_mb() -> float:
    """RETURNS (float): the process's peak resident size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@registry.callbacks("spacy-nested-mrc.release_memory.v1")
def create_release_memory(
    every: int = 50, mmap_threshold: int = 0, then: Optional[BeforeUpdate] = None
) -> BeforeUpdate:
    """A ``[training.before_update]`` callback that gives free heap memory back to the
    system every ``every`` steps, so that the resident size of training follows what it uses.

    every (int): steps between two releases (> 0); one costs a few milliseconds.
    mmap_threshold (int): if > 0, allocations of at least this many bytes get memory maps of
        their own, given back when freed (``set_mmap_threshold``, set when the callback is
        created); 0 leaves glibc's own threshold.
    then (Optional[Callable]): another ``before_update`` callback to call after it, as spaCy
        takes only one.
    RETURNS (Callable[[Language, Dict[str, Any]], None]): the callback.
    """
    check_positive("every", every)
    check_positive("mmap_threshold", mmap_threshold, allow_zero=True)
    if mmap_threshold:
        set_mmap_threshold(mmap_threshold)

    advised = False

    def before_update(nlp: Language, args: Dict[str, Any]) -> None:
        nonlocal advised
        if not advised:
            advised = True
            advise_allocator(every)
        if args["step"] % every == 0:
            release_free_memory()
        if then is not None:
            then(nlp, args)

    return before_update


@registry.callbacks("spacy-nested-mrc.release_memory_before_save.v1")
def create_release_before_save(
    then: Optional[Callable[[Language], Language]] = None
) -> Callable[[Language], Language]:
    """A ``[training.before_to_disk]`` callback that gives free heap memory back before
    ``spacy train`` saves the pipeline. A save follows a dev evaluation, whose freed memory
    is still in the heap, and serializing the weights takes a few copies of them: without
    it the two add up to the peak of the run.

    then (Optional[Callable]): another ``before_to_disk`` callback to call after it.
    RETURNS (Callable[[Language], Language]): the callback.
    """

    def before_to_disk(nlp: Language) -> Language:
        release_free_memory()
        return then(nlp) if then is not None else nlp

    return before_to_disk


class ReleaseMemory:
    """A pipe that gives free heap memory back to the system every ``every`` documents
    (``release_free_memory``), so that a long-running ``nlp.pipe`` keeps the resident size
    of what it uses. It changes no document. Put it last; with ``nlp.pipe(...,
    n_process=N)`` each worker counts its own documents.
    """

    def __init__(self, name: str, every: int) -> None:
        check_positive("every", every)
        self.name = name
        self.every = every
        self.seen = 0

    def __call__(self, doc: Doc) -> Doc:
        self.seen += 1
        if self.seen % self.every == 0:
            release_free_memory()
        return doc


@Language.factory(
    "nested_mrc_release_memory",
    default_config={"every": 256},
    requires=[],
    assigns=[],
)
def make_release_memory(nlp: Language, name: str, every: int) -> ReleaseMemory:
    """The ``nested_mrc_release_memory`` pipe (``ReleaseMemory``).

    every (int): documents between two releases (> 0); one costs a few milliseconds.
    RETURNS (ReleaseMemory): the pipe.
    """
    return ReleaseMemory(name, every)


def limit_onednn_cache(capacity: int) -> List[str]:
    """Bound the caches of built bf16 kernels to ``capacity`` entries each, for this process.

    On the CPU, torch runs bf16 matrix products through its mkldnn operators (ideep), which
    keep the oneDNN primitive they build for every input shape in an LRU cache of 1,024
    entries (``LRU_CACHE_CAPACITY``), in front of oneDNN's own primitive cache, also 1,024
    (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``); fp32 products go through another library and are
    not cached. Training batches of varying lengths fill both with primitives that are
    rarely used again, and their memory stays allocated: the resident size of a bf16
    training grows for hundreds of steps. Each variable is read once, when the first bf16
    product runs: call this before it (``limit_onednn_cache.v1`` does, in
    ``[initialize.before_init]``). A capacity the environment already gives is kept.

    capacity (int): the most primitives each cache keeps; 0 keeps none.
    RETURNS (List[str]): the variables set here (those the environment did not give).
    """
    check_positive("capacity", capacity, allow_zero=True)
    set_here = []
    for variable in (ONEDNN_CACHE_VARIABLE, MKLDNN_CACHE_VARIABLE):
        if variable not in os.environ:
            os.environ[variable] = str(int(capacity))
            set_here.append(variable)
    return set_here


@registry.callbacks("spacy-nested-mrc.limit_onednn_cache.v1")
def create_onednn_cache_limit(capacity: int = 16) -> Callable[[Language], Language]:
    """An ``[initialize.before_init]`` callback that bounds the caches of built bf16 kernels
    (``limit_onednn_cache``) before the pipeline runs its first bf16 product.

    capacity (int): the most primitives each cache keeps; 0 keeps none.
    """
    check_positive("capacity", capacity, allow_zero=True)

    def before_init(nlp: Language) -> Language:
        limit_onednn_cache(capacity)
        return nlp

    return before_init
