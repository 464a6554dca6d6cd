"""A model's lock for threads sharing it (``runtime.threads``): kept by the model itself, so it
goes when the model goes; never saved; a copied or pickled model has a lock of its own."""

import gc
import pickle
import threading
import weakref

from thinc.api import Linear

from spacy_nested_mrc.runtime import threads
from spacy_nested_mrc.runtime.threads import LOCK, ModelLock, model_lock


def test_the_lock_is_the_models_own_and_reentrant():
    model = Linear(2, 2)
    lock = model_lock(model)
    assert model_lock(model) is lock and model.attrs[LOCK] is lock
    with lock, lock:  # re-entrant: a locked forward may call another
        pass


def test_the_lock_is_not_saved_and_copies_get_their_own():
    model = Linear(2, 2).initialize()
    lock = model_lock(model)
    loaded = Linear(2, 2).from_bytes(model.to_bytes())
    assert LOCK not in loaded.attrs
    for other in (model.copy(), pickle.loads(pickle.dumps(model))):
        assert isinstance(other.attrs[LOCK], ModelLock) and other.attrs[LOCK] is not lock


def test_no_lock_outlives_its_model():
    locks = [weakref.ref(model_lock(Linear(2, 2))) for _ in range(50)]
    gc.collect()
    assert all(ref() is None for ref in locks)
    assert not any(isinstance(v, dict) and v for k, v in vars(threads).items()
                   if k.isupper() or k.startswith("_LOCK"))


def test_threads_take_the_lock_in_turn():
    model = Linear(2, 2)
    inside, most = [0], [0]

    def work():
        for _ in range(200):
            with model_lock(model):
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                inside[0] -= 1

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert most[0] == 1
