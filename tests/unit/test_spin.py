"""The short busy wait before a poll blocks (dtf.wire.spin)."""
from __future__ import annotations

import select
import socket

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


@pytest.fixture
def uncontended(monkeypatch):
    monkeypatch.setattr(spin, "_contended", lambda: False)
    monkeypatch.setattr(spin, "SPIN_S", 0.0001)


def test_a_message_already_there_is_answered_by_the_spin(pair, uncontended):
    a, b = pair
    b.send(b"x")
    assert spin.spin(_poller(a)) == [(a.fileno(), select.POLLIN)]


def test_a_spin_that_finds_nothing_ends_and_answers_nothing(pair, uncontended):
    a, _ = pair
    calls = []
    poll = _poller(a)
    assert not spin.spin(lambda: calls.append(1) or poll())
    assert len(calls) >= 1


def test_no_spin_when_turned_off_or_kept_from_a_cpu(pair, monkeypatch):
    a, b = pair
    b.send(b"x")
    called = []
    monkeypatch.setattr(spin, "SPIN_S", 0.0)
    assert spin.spin(lambda: called.append(1)) is None
    monkeypatch.setattr(spin, "SPIN_S", 0.0001)
    monkeypatch.setattr(spin, "_contended", lambda: True)
    assert spin.spin(lambda: called.append(1)) is None
    assert called == []


def _write_schedstat(path, queued_ns):
    path.write_text(f"123456 {queued_ns} 7\n")


def test_a_thread_counts_as_contended_while_its_run_queue_time_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(spin, "LOOK_EVERY", 1)
    stat = tmp_path / "schedstat"
    _write_schedstat(stat, 0)
    state = spin._ThreadContention(str(stat))
    assert state.check() is False  # the first look only notes where it starts
    _write_schedstat(stat, 10**9)  # a second spent waiting for a CPU since
    assert state.check() is True
    assert state.check() is False  # no more waiting since the last look


def test_no_schedstat_means_no_spin(tmp_path):
    state = spin._ThreadContention(str(tmp_path / "missing"))
    assert state.check() is True


def test_this_threads_own_schedstat_is_readable_here():
    state = spin._ThreadContention()
    if state.fd is None:
        pytest.skip("no /proc/thread-self/schedstat on this kernel")
    for _ in range(spin.LOOK_EVERY * 2):
        state.check()
    assert state.last is not None
