"""Worker processes: torch in forked workers (``nlp.pipe(texts, n_process=N)``), and a job's
workers ending with the job however it ends (``job_processes``).

spaCy's ``n_process`` forks workers from a parent that has usually run the pipeline already.
torch's intra-op thread pool (OpenMP) does not survive a fork: a worker that runs a
multi-threaded operation waits for threads that do not exist, and ``nlp.pipe`` hangs with
every process idle. Each forked child therefore runs torch on one thread, which is also what
several worker processes on one machine want (they share the cores). The parent keeps its
own setting.

A job stopped by a signal must not leave its workers behind: spaCy's workers block on a pipe
to a parent that is gone (and spaCy's own clean-up, in the parent, waits for them). Inside
``job_processes`` SIGINT and the signals a supervisor sends (SIGTERM, SIGHUP) terminate the
job's workers, then raise ``Stopped`` (a KeyboardInterrupt) in the main thread; every process
forked meanwhile is killed by the kernel when its parent dies, SIGKILL included (Linux's
parent-death signal), and leaves SIGINT (which a terminal sends to them all) to its parent.

A job that ends any way but done (a signal, an error in a worker, a worker killed) also lets
its process exit without flushing the queues its workers read: a ``multiprocessing.Queue``'s
feeder thread writes what was put into a pipe, and with the reader gone it blocks for good
once the pipe is full; at interpreter exit ``multiprocessing`` joins that thread and the
process, its work rolled back and its lock released, never ends (#55). What those queues
still held was for workers that are gone.
"""

import ctypes
import ctypes.util
import multiprocessing
import multiprocessing.queues
import multiprocessing.util
import os
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Set

import torch

# Ctrl-C, and the signals a supervisor, ``timeout`` or a closed terminal sends
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# how long terminated workers get to exit before they are killed
TERMINATE_WAIT = 5.0
# how often a job's workers are checked for one that died (killed, or crashed)
WATCH_INTERVAL = 0.5
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Stopped(KeyboardInterrupt):
    """A job stopped by a signal (``job_processes``); ``signum``: which. A KeyboardInterrupt,
    so that whatever rolls back or releases on SIGINT does so on it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class WorkerDied(ChildProcessError):
    """A worker process of a job ended with an error code or a signal while the job ran
    (killed by the system for memory, or crashed): the job stops, as on a signal.

    pid (int): the worker's process id; exitcode (int): its exit code (-N: signal N).
    """

    def __init__(self, pid: int, exitcode: int) -> None:
        how = (f"killed by {signal.Signals(-exitcode).name}" if exitcode < 0
               else f"exit code {exitcode}")
        super().__init__(f"worker process {pid} ended ({how})")
        self.pid, self.exitcode, self.how = pid, exitcode, how


def stop_signal_of(err: BaseException) -> int:
    """RETURNS (int): the signal that raised ``err`` (``Stopped``), else SIGINT's."""
    return int(getattr(err, "signum", signal.SIGINT))


def _one_thread_after_fork() -> None:
    torch.set_num_threads(1)
    if _job_depth:
        _follow_the_parent()


def register_fork_handler() -> None:
    """Make every process forked from this one run torch on one thread (idempotent)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_note_parent, after_in_child=_one_thread_after_fork)
        _registered = True


_registered = False
_job_depth = 0  # job_processes blocks open in this process
_parent = 0  # the pid that forked this process (noted before each fork)


def _note_parent() -> None:
    global _parent
    _parent = os.getpid()


def _follow_the_parent() -> None:
    """In a worker forked inside ``job_processes``: die when the parent dies (SIGKILL from
    the kernel), leave SIGINT and SIGTERM to the parent (which stops its workers itself)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN if signum == signal.SIGINT else signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != _parent:  # the parent died before the line above
        os._exit(1)


def _terminate(pids: Set[int]) -> None:
    """Terminate the live ``multiprocessing`` children not in ``pids``; kill those that do not
    exit within ``TERMINATE_WAIT`` seconds."""
    workers = [p for p in multiprocessing.active_children() if p.pid not in pids]
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(TERMINATE_WAIT)
        if worker.is_alive():
            worker.kill()
            worker.join()


def _queue_joins() -> Set[Any]:
    """RETURNS (Set[Any]): the keys of the exit-time joins of ``multiprocessing.Queue``
    feeder threads now registered (a queue registers one when it first sends)."""
    registry = getattr(multiprocessing.util, "_finalizer_registry", {})
    join = multiprocessing.queues.Queue._finalize_join
    return {key for key, finalizer in list(registry.items())
            if getattr(finalizer, "_callback", None) is join}


def _abandon_queues(before: Set[Any]) -> None:
    """Cancel the exit-time joins of the queue feeder threads registered since ``before``
    (what ``Queue.cancel_join_thread`` does, for queues that spaCy created and dropped):
    their workers are gone, so what the feeders still write has no reader."""
    registry = getattr(multiprocessing.util, "_finalizer_registry", {})
    for key in _queue_joins() - before:
        finalizer = registry.get(key)
        if finalizer is not None:
            finalizer.cancel()


@contextmanager
def job_processes() -> Iterator[None]:
    """A block whose worker processes (``multiprocessing`` children started in it) end with
    it: terminated when it ends by an exception or a signal of ``STOP_SIGNALS`` (which
    raises ``Stopped`` in the main thread); killed by the kernel if this process dies any
    other way (SIGKILL). Signal handlers are set only in the main thread and restored at
    the end; spaCy's warning that its workers did not complete (W127) is not shown for a
    stopped job. A block ended by an exception leaves the queues it created unflushed
    (``_abandon_queues``), so that the process can exit."""
    global _job_depth
    before = {p.pid for p in multiprocessing.active_children()}
    joins_before = _queue_joins()
    in_main = threading.current_thread() is threading.main_thread()
    previous: dict = {}
    ending = threading.Event()  # set once the block ends, however it ends
    died: list = []  # the worker the watch found dead

    def stop(signum: int, frame: Any) -> None:
        ending.set()
        warnings.filterwarnings("ignore", message=r"\[W127\]")  # until the block ends
        _terminate(before)
        if died:
            raise WorkerDied(*died[0])
        raise Stopped(signum)

    watch = threading.Thread(target=_watch_workers, args=(before, ending, died),
                             name="job-workers-watch", daemon=True)
    with warnings.catch_warnings():
        _job_depth += 1
        try:
            if in_main:
                previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
                watch.start()
            yield
        except BaseException:
            ending.set()
            _terminate(before)
            _abandon_queues(joins_before)
            raise
        finally:
            ending.set()
            if watch.is_alive():
                watch.join()
            _job_depth -= 1
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _watch_workers(before: Set[int], ending: threading.Event, died: list) -> None:
    """Until ``ending`` is set: every ``WATCH_INTERVAL`` seconds, look at the workers
    started since ``before``; the first that ended with an error code or a signal is put in
    ``died`` and the main thread is interrupted (a real SIGINT to it, so that a blocking
    read returns; the job's handler raises ``WorkerDied``). spaCy's ``nlp.pipe`` would
    otherwise wait for good on the dead worker's pipe, whose write end its other workers
    inherited."""
    seen: dict = {}
    while not ending.wait(WATCH_INTERVAL):
        for worker in multiprocessing.active_children():
            if worker.pid not in before:
                seen[worker.pid] = worker
        for pid, worker in list(seen.items()):
            code = worker.exitcode
            if code is None:
                continue
            del seen[pid]
            if code != 0 and not ending.is_set():
                died.append((pid, code))
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                return
