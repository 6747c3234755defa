"""A receive that waits on the thread owning the step's sockets waits in its pump
(StepRendezvous.pump: ``owner``, ``wait(timeout_s)``, ``wake()``); tensors other threads
put, and aborts, wake it."""
from __future__ import annotations

import threading

import pytest

from dtf.framework import errors
from dtf.runtime import rendezvous as rv


class _Pump:
    def __init__(self, deliver=None):
        self.owner = threading.get_ident()
        self.waits = 0
        self.wakes = 0
        self._woken = threading.Event()
        self._deliver = deliver  # what its sockets would bring, put by the owner thread

    def wait(self, timeout_s):
        self.waits += 1
        if self._deliver is not None:
            deliver, self._deliver = self._deliver, None
            deliver()
        self._woken.wait(timeout_s)
        self._woken.clear()

    def wake(self):
        self.wakes += 1
        self._woken.set()


@pytest.fixture(autouse=True)
def long_idle_slice(monkeypatch):
    # A missed wake-up would cost a whole slice: make that a visible wait, not a blip.
    monkeypatch.setattr(rv, "IDLE_SLICE_S", 30.0)


def _put_soon(r, key, value):
    t = threading.Timer(0.05, r.put, (key, value))
    t.start()
    return t


def test_a_tensor_put_by_another_thread_wakes_the_pump():
    r = rv.StepRendezvous(1)
    r.pump = pump = _Pump()
    t = _put_soon(r, "k", 7)
    assert r.recv("k") == 7
    t.join()
    assert pump.waits >= 1 and pump.wakes == 1


def test_a_tensor_the_pump_delivers_during_its_wait_is_taken_when_it_returns():
    r = rv.StepRendezvous(1)
    r.pump = pump = _Pump(deliver=lambda: r.put("k", 3))
    assert r.recv("k") == 3
    assert pump.waits == 1


def test_an_abort_wakes_the_pump():
    r = rv.StepRendezvous(1)
    r.pump = pump = _Pump()
    t = threading.Timer(0.05, r.abort, (errors.CancelledError(None, None, "step cancelled"),))
    t.start()
    with pytest.raises(errors.CancelledError, match="step cancelled"):
        r.recv("k")
    t.join()
    assert pump.wakes == 1


def test_a_wait_on_another_thread_uses_the_condition_not_the_pump():
    r = rv.StepRendezvous(1)
    r.pump = pump = _Pump()
    got = []
    waiter = threading.Thread(target=lambda: got.append(r.recv("k")))
    waiter.start()
    _put_soon(r, "k", 5).join()
    waiter.join(10)
    assert got == [5] and pump.waits == 0 and pump.wakes == 0


@pytest.mark.parametrize("eventfd", [True, False])
def test_a_threads_wakeup_wakes_a_poll_never_blocks_its_waker_and_closes_unreferenced(
        monkeypatch, eventfd):
    """The pump's wake-up is the server loop's (dtf.wire.primitives.Wakeup), kept per
    thread by Peers and never closed by its owner."""
    import gc
    import select

    from dtf.wire import primitives

    if not eventfd:
        monkeypatch.delattr(primitives.os, "eventfd", raising=False)  # the pipe it falls back on
    wakeup = primitives.Wakeup()
    fd = wakeup.fileno()
    assert select.select([fd], [], [], 0)[0] == []
    for _ in range(100_000):  # far more than a pipe holds: a signalled one is already awake
        wakeup.wake()
    assert select.select([fd], [], [], 0)[0] == [fd]
    wakeup.clear()
    assert select.select([fd], [], [], 0)[0] == []
    closer = wakeup._closer
    del wakeup
    gc.collect()
    assert not closer.alive  # its descriptors closed once nothing refers to it
