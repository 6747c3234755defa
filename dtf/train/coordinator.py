"""tf.train.Coordinator: a stop flag shared by the threads (and hooks) of a training loop."""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from dtf.framework import errors

__all__ = ["Coordinator"]


class Coordinator:
    """Lets threads request a stop, see it, and re-raise the exception that caused it."""

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._registered_threads = set()

    def request_stop(self, ex=None):
        """Requests a stop; ``ex`` (an exception or exc_info) is re-raised by ``join``."""
        with self._lock:
            if ex is not None and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    ex = ex[1]
                if not isinstance(ex, self._clean_stop_exception_types):
                    self._exc_info_to_raise = ex
            self._stop_event.set()

    def clear_stop(self):
        with self._lock:
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A context that requests a stop (and records the error) when its body raises."""
        try:
            yield
        except Exception:  # noqa: BLE001 - recorded and re-raised by join()
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the threads to end after a stop, then re-raises a recorded exception."""
        threads = set(threads or ()) | self._registered_threads
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stragglers = [t.name for t in threads if t.is_alive()]
        self.raise_requested_exception()
        if stragglers and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(stragglers)}")

    def raise_requested_exception(self):
        with self._lock:
            ex, self._exc_info_to_raise = self._exc_info_to_raise, None
        if ex is not None:
            raise ex

    @property
    def joined(self):
        return not any(t.is_alive() for t in self._registered_threads)
