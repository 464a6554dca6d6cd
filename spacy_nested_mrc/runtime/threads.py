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
from typing import Callable, Dict

from thinc.api import Model

_LOCKS: Dict[int, threading.RLock] = {}
_GUARD = threading.Lock()


def model_lock(model: Model) -> threading.RLock:
    """RETURNS (threading.RLock): the lock of ``model`` (by its id: thinc models take no weak
    references and a lock does not pickle, so it lives here, not in the model's attrs)."""
    with _GUARD:
        lock = _LOCKS.get(model.id)
        if lock is None:
            lock = _LOCKS[model.id] = threading.RLock()
        return lock


def locked_forward(model: Model, X, is_train: bool, *, inner: Callable):
    """``inner`` (a model's own forward) run under the model's lock (``model_lock``); a
    partial of this module function keeps the model picklable."""
    with model_lock(model):
        return inner(model, X, is_train)
