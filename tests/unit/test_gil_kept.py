"""Queue batches and shared locks that keep the interpreter lock (dtf.kernels.cpu.data_flow:
QueueResource.stack, acquire_holding_gil): the same values as np.stack, and no hand-off
of the interpreter lock inside them."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.cpu.data_flow import QueueResource, acquire_holding_gil

RNG = np.random.default_rng(5)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _progress_of_another_thread_during(fn, calls=5000):
    """How far a spinning thread counted while this one called ``fn`` ``calls`` times,
    with a switch interval long enough that only a release of the interpreter lock inside
    ``fn`` lets it run. A release does not always let it in (this thread may take the lock
    back first), so it takes many calls: np.array of 128 images (each copy lets it go)
    shows progress in most runs."""
    count, stop = [0], [False]

    def spin():
        while not stop[0]:
            count[0] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.2)
    t = threading.Thread(target=spin, daemon=True)
    try:
        t.start()
        while count[0] == 0:
            time.sleep(0.001)  # the spinner has the lock once; this gets it back after 0.2 s
        before = count[0]
        for _ in range(calls):
            fn()
        return count[0] - before
    finally:
        stop[0] = True
        sys.setswitchinterval(old)
        t.join()


def test_a_batch_of_large_elements_is_built_holding_the_interpreter_lock():
    q = QueueResource({"component_types": [dtypes.float32], "shapes": [[28, 28, 1]]}, "q")
    images = [RNG.random((28, 28, 1)).astype(np.float32) for _ in range(128)]
    batch = q.stack(0, images)
    same(batch, np.stack(images))
    assert batch.flags.writeable and batch.flags.c_contiguous
    batch[0, 0, 0, 0] = -1.0  # a batch of its own, not a view of an element
    assert images[0][0, 0, 0] != -1.0
    assert _progress_of_another_thread_during(lambda: q.stack(0, images), calls=200) == 0


def test_a_batch_of_non_contiguous_elements_is_stacked_as_before():
    q = QueueResource({"component_types": [dtypes.float64], "shapes": [[30, 30]]}, "q")
    elements = [RNG.random((30, 60))[:, ::2] for _ in range(4)]
    same(q.stack(0, elements), np.stack(elements))


def test_acquire_holding_gil_takes_a_free_lock_and_waits_for_a_held_one():
    for lock in (threading.Lock(), threading.RLock(), threading.Condition()):
        acquire_holding_gil(lock)
        lock.release()
    lock, got = threading.Lock(), []
    lock.acquire()

    def take():
        acquire_holding_gil(lock)  # past its non-blocking tries: blocks until released
        got.append(time.monotonic())
        lock.release()

    t = threading.Thread(target=take)
    t.start()
    time.sleep(0.2)
    assert not got
    released = time.monotonic()
    lock.release()
    t.join(5)
    assert got and got[0] >= released
