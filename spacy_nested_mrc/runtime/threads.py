"""One call at a time into a model shared by threads.

A pipeline used by several threads at once (a web server's pool) shares state that is not
safe to share: a Hugging Face fast tokenizer's padding and truncation settings (changed in
place by each call that asks for others; a call meeting another's change fails with
"Already borrowed"), and a torch module's training flag (thinc's ``predict`` switches it
to evaluation and back, so another thread's prediction can run with dropout). Each model
that holds such state (a pipe's model, the shared ``transformer``'s) runs its calls under
its own lock: threads get the output of sequential calls, and since torch already spreads
one call over the cores, little throughput is lost. Processes (``n_process``, ``annotate``)
are the way to more throughput."""

import threading
from typing import Any, Callable

from thinc.api import Model

# where a model keeps its lock
LOCK = "thread_lock"
_GUARD = threading.Lock()


class ModelLock:
    """A re-entrant lock kept in a model's attrs: thinc skips it when it serializes the
    attrs (msgpack cannot write it), and a pickled or copied model gets a lock of its own, so
    the lock lives and dies with its model."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> bool:
        return self._lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._lock.__exit__(*exc)

    def __reduce__(self):
        return (ModelLock, ())

    def __deepcopy__(self, memo: dict) -> "ModelLock":
        return ModelLock()


def model_lock(model: Model) -> ModelLock:
    """RETURNS (ModelLock): the lock of ``model``, made at its first use."""
    lock = model.attrs.get(LOCK)
    if lock is None:
        with _GUARD:
            lock = model.attrs.get(LOCK)
            if lock is None:
                lock = model.attrs[LOCK] = ModelLock()
    return lock


def locked_forward(model: Model, X, is_train: bool, *, inner: Callable):
    """``inner`` (a model's own forward) run under the model's lock (``model_lock``); a
    partial of this module function keeps the model picklable."""
    with model_lock(model):
        return inner(model, X, is_train)
