"""The short busy wait before a poll blocks (dtf.wire.spin)."""
from __future__ import annotations

import select
import socket
import threading
import time

import pytest

from dtf.wire import spin


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _poller(sock):
    p = select.poll()
    p.register(sock.fileno(), select.POLLIN)
    return lambda: p.poll(0)


class _Always:
    """A thread judgement that always spins."""

    def should_spin(self):
        return True

    def spun(self, hit, starved):
        self.hit = hit


@pytest.fixture
def spinning(monkeypatch):
    state = _Always()
    monkeypatch.setattr(spin, "_state", lambda: state)
    monkeypatch.setattr(spin, "SPIN_S", 0.0001)
    monkeypatch.setattr(spin, "_steps", 0)
    monkeypatch.setattr(spin, "_step_threads", {})
    return state


def test_a_message_already_there_is_answered_by_the_spin(pair, spinning):
    a, b = pair
    b.send(b"x")
    assert spin.spin(_poller(a)) == [(a.fileno(), select.POLLIN)]
    assert spinning.hit is True


def test_a_spin_that_finds_nothing_ends_and_answers_nothing(pair, spinning):
    a, _ = pair
    calls = []
    poll = _poller(a)
    assert not spin.spin(lambda: calls.append(1) or poll())
    assert len(calls) >= 1
    assert spinning.hit is False


def test_no_spin_when_turned_off(spinning, monkeypatch):
    monkeypatch.setattr(spin, "SPIN_S", 0.0)
    assert spin.spin(lambda: pytest.fail("polled")) is None


def test_the_io_loop_does_not_spin_while_a_step_runs_in_its_process(spinning, monkeypatch, pair):
    a, b = pair
    b.send(b"x")
    monkeypatch.setattr(spin, "_steps", 1)
    assert spin.spin(lambda: pytest.fail("polled"), in_loop=True) is None
    assert spin.spin(_poller(a))  # the step's own thread may
    monkeypatch.setattr(spin, "_steps", 2)
    assert spin.spin(lambda: pytest.fail("polled")) is None


def test_a_step_thread_does_not_spin_while_another_thread_runs_steps(spinning):
    other = threading.Thread(target=lambda: (spin.step_started(), spin.step_ended()))
    other.start()
    other.join()
    spin.step_started()
    try:
        assert spin.spin(lambda: pytest.fail("polled")) is None
    finally:
        spin.step_ended()


def test_a_spin_yields_its_cpu_between_polls(pair, spinning, monkeypatch):
    a, b = pair
    polls, yields = [], []
    poll = _poller(a)

    def poll_now():
        polls.append(1)
        if len(polls) == 3:
            b.send(b"x")
        return poll()

    monkeypatch.setattr(spin, "SPIN_S", 5.0)
    monkeypatch.setattr(spin, "_yield_cpu", lambda: yields.append(len(polls)))
    assert spin.spin(poll_now)
    assert yields == [1, 2]  # after each poll that found nothing, none after the hit


def test_no_spin_where_a_thread_cannot_yield(spinning, monkeypatch):
    monkeypatch.setattr(spin, "_yield_cpu", None)
    assert spin.spin(lambda: pytest.fail("polled")) is None


@pytest.mark.parametrize("window", [
    [(False, False)] * 7,  # every spin missed
    [(True, i == 0) for i in range(7)],  # one starved in seven: more than one in ten
], ids=["missing", "starved"])
def test_a_thread_whose_spins_are_wasted_spins_only_on_probes(monkeypatch, window):
    monkeypatch.setattr(spin, "LOOK_EVERY", 8)
    monkeypatch.setattr(spin, "PROBE_EVERY", 4)
    state = spin._ThreadSpin()
    for hit, starved in window:
        assert state.should_spin()
        state.spun(hit, starved)
    answers = [state.should_spin() for _ in range(8)]  # the look at wait 8 judged the window
    assert answers == [True, False, False, False, True, False, False, False]  # probes
    state.spun(True, False)
    state.spun(True, False)
    assert all(state.should_spin() for _ in range(8))  # the probes caught their messages in time


def test_a_spin_that_lost_its_cpu_for_long_counts_as_starved(pair, spinning, monkeypatch):
    a, b = pair
    poll = _poller(a)
    seen = []
    spinning.spun = lambda hit, starved: seen.append((hit, starved))
    monkeypatch.setattr(spin, "SPIN_S", 5.0)
    # The yield returns only after others held the CPU for twice STARVED_S; the
    # message came meanwhile.
    monkeypatch.setattr(spin, "_yield_cpu", lambda: (time.sleep(2 * spin.STARVED_S), b.send(b"x")))
    assert spin.spin(poll)
    assert seen == [(True, True)]
    seen.clear()
    monkeypatch.setattr(spin, "_yield_cpu", lambda: b.send(b"x"))
    a.recv(1)
    assert spin.spin(poll)
    assert seen == [(True, False)]
