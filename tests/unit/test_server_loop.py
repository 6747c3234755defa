"""The server's I/O loop (transport.ServerLoop) in one process: stopping it never hangs."""
from __future__ import annotations

import threading
import time

from dtf.train.server import free_port
from dtf.wire import transport


class _LoopLeavesAfterConnect:
    """The loop's ZeroMQ context, except that stop()'s wake socket, once connected, waits
    for the loop to leave (it sees ``_stopping`` when its poll times out) and close its
    end: the ordering a stop() can meet when the loop wakes on its own meanwhile (seen
    once as a task that never exited on SIGTERM)."""

    def __init__(self, loop):
        self._loop, self._ctx = loop, loop._ctx

    def socket(self, kind):
        sock = self._ctx.socket(kind)
        connect = sock.connect

        def connect_then_lose_the_race(endpoint):
            connect(endpoint)
            self._loop._thread.join(5)
            time.sleep(0.2)  # ZeroMQ drops the closed end's pipe asynchronously

        sock.connect = connect_then_lose_the_race
        return sock


def test_stop_returns_when_the_loop_leaves_between_connect_and_send():
    loop = transport.ServerLoop(f"127.0.0.1:{free_port()}", {}, {}, "/job:t/task:0")
    loop.start()
    loop._ctx = _LoopLeavesAfterConnect(loop)
    stopper = threading.Thread(target=loop.stop, daemon=True)
    stopper.start()
    stopper.join(15)
    assert not loop._thread.is_alive()
    assert not stopper.is_alive(), "stop() waited for a loop that had already left"
