"""Torch in forked worker processes (``nlp.pipe(texts, n_process=N)``).

spaCy's ``n_process`` forks workers from a parent that has usually run the pipeline already.
torch's intra-op thread pool (OpenMP) does not survive a fork: a worker that runs a
multi-threaded operation waits for threads that do not exist, and ``nlp.pipe`` hangs with
every process idle. Each forked child therefore runs torch on one thread, which is also what
several worker processes on one machine want (they share the cores). The parent keeps its
own setting.
"""

import os

import torch


def _one_thread_after_fork() -> None:
    torch.set_num_threads(1)


def register_fork_handler() -> None:
    """Make every process forked from this one run torch on one thread (idempotent)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_one_thread_after_fork)
        _registered = True


_registered = False
