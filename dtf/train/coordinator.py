"""tf.train.Coordinator: a stop flag shared by the threads (and hooks) of a training loop."""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from dtf.framework import errors

__all__ = ["Coordinator", "LooperThread"]


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


class LooperThread(threading.Thread):
    """A daemon thread that calls ``run_loop`` (or ``target``) repeatedly, every
    ``timer_interval_secs`` if given, until its coordinator is told to stop.

    The first call happens at once; an exception in the loop requests a stop on the
    coordinator (and is re-raised by its ``join``)."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts and returns a LooperThread calling ``target``."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                # Boundaries on a fixed grid, so a slow call does not push the next ones.
                next_time = time.time()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.time())):
                    next_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once before the loop."""

    def stop_loop(self):
        """Called once after the loop ends without an exception."""

    def run_loop(self):
        """One iteration; by default calls ``target(*args, **kwargs)``."""
        if self._target:
            self._target(*self._args, **self._kwargs)
