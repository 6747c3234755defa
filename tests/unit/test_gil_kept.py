"""Small arrays and shared locks that keep the interpreter lock (dtf.kernels.cpu.elementwise
GIL_KEPT, dtf.kernels.cpu.data_flow acquire_holding_gil and QueueResource.stack): the
same values as numpy's own loops, and no hand-off of the interpreter lock inside them."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from dtf.framework import dtypes
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import elementwise
from dtf.kernels.cpu.data_flow import QueueResource, acquire_holding_gil
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(5)
SIZES = [elementwise.GIL_KEPT, elementwise.GIL_KEPT + 1, 784, 1000, elementwise.SMALL_MAX,
         elementwise.SMALL_MAX + 1]


@pytest.fixture(autouse=True)
def _quiet_float_errors():
    with np.errstate(all="ignore"):  # as the executor runs every step
        yield


def kernel(op, dtype, out_dtype=None, attrs=None):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs or {"T": dtype}),
                   [out_dtype or dtype])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow"])
def test_binary_ops_in_pieces_give_numpys_values(op, n):
    dt = dtypes.float32
    k = kernel(op, dt)
    x = (RNG.standard_normal(n) * 3).astype(np.float32)
    y = (RNG.standard_normal(n) * 3).astype(np.float32)
    x[:3] = [np.nan, np.inf, 0.0]
    s = np.asarray(np.float32(2.5))
    ref = REFERENCE[op]
    for a, b in [(x, y), (x, s), (s, y), (x.reshape(-1, 1)[:, 0], np.float32(-1.5)),
                 (x[::-1], y[::-1])]:  # a numpy scalar, reversed (non-contiguous) views
        same(k(None, a, b), ref({"T": dt}, a, b))
    # Broadcasting other than of a scalar takes numpy's own loop, with its values.
    row = RNG.standard_normal(n).astype(np.float32)
    same(k(None, np.stack([row, row]), row), ref({"T": dt}, np.stack([row, row]), row))


@pytest.mark.parametrize("n", SIZES)
def test_integer_ops_in_pieces_keep_their_dtype(n):
    x = RNG.integers(0, 256, n).astype(np.uint8)
    y = RNG.integers(0, 256, n).astype(np.uint8)
    same(kernel("Add", dtypes.uint8)(None, x, y), x + y)  # wraps around as numpy's
    same(kernel("Mul", dtypes.int32)(None, x.astype(np.int32), np.int32(-7)), x.astype(np.int32) * -7)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("src,dst", [(np.uint8, dtypes.float32), (np.float32, dtypes.int32),
                                     (np.float64, dtypes.bool), (np.float32, dtypes.float16),
                                     (np.int64, dtypes.uint8)])
def test_cast_in_pieces_gives_astypes_values(src, dst, n):
    x = (RNG.standard_normal(n) * 300).astype(src)
    if np.dtype(src).kind == "f":
        x[:3] = [np.nan, np.inf, -0.0]
    k = kernel("Cast", None, dst, {"DstT": dst, "SrcT": dtypes.as_dtype(src)})
    attrs = {"DstT": dst, "SrcT": dtypes.as_dtype(src)}
    for a in (x, x.reshape(-1, 1), x[::-1]):
        same(k(None, a), REFERENCE["Cast"](attrs, a))


def _progress_of_another_thread_during(fn, calls=5000):
    """How far a spinning thread counted while this one called ``fn`` ``calls`` times,
    with a switch interval long enough that only a release of the interpreter lock inside
    ``fn`` lets it run. A release does not always let it in (this thread may take the lock
    back first), so it takes many calls: numpy's own Cast and RealDiv on 784 elements, or
    np.array of 128 images, show progress in most runs."""
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


def test_small_cast_and_division_keep_the_interpreter_lock():
    image = RNG.integers(0, 256, (28, 28, 1)).astype(np.uint8)
    cast = kernel("Cast", None, dtypes.float32, {"DstT": dtypes.float32, "SrcT": dtypes.uint8})
    div = kernel("RealDiv", dtypes.float32)
    scale = np.asarray(np.float32(255.0))
    assert _progress_of_another_thread_during(lambda: div(None, cast(None, image), scale)) == 0


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
