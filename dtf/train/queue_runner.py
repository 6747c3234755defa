"""``tf.train.QueueRunner``: threads that keep running a queue's enqueue ops, closing the
queue when the input runs out and cancelling it when the coordinator stops or the
session closes (no thread outlives its session)."""
from __future__ import annotations

import logging
import threading

from dtf.framework import errors
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

log = logging.getLogger("dtf")
_JOIN_ON_CLOSE_S = 10.0


class QueueRunner:
    """Holds a queue's enqueue ops (one thread each) and its close and cancel ops."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner(queue_runner_def=...) is not supported by dtf")
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session: dict = {}
        self._exceptions_raised: list = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._closed_types)
    exceptions_raised = property(lambda self: list(self._exceptions_raised))
    name = property(lambda self: self._queue.name)

    def _run(self, sess, enqueue_op, coord, stopping):
        decremented = False
        try:
            # As TF's runner: a prepared call of the enqueue op, without the per-call fetch
            # and plan lookups of sess.run (a thread runs it once per record).
            # The thread only runs steps, which ignore floating-point errors: set that once
            # instead of entering numpy's error-state context on every step.
            from dtf.runtime.executor import ignore_float_errors_on_this_thread

            ignore_float_errors_on_this_thread()
            make_callable = getattr(sess, "make_callable", None)
            enqueue = make_callable(enqueue_op) if make_callable is not None \
                else lambda: sess.run(enqueue_op)
            while not stopping.is_set() and not (coord is not None and coord.should_stop()):
                try:
                    enqueue()
                except self._closed_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - TF ignores them too
                                log.debug("QueueRunner: ignored error from close_op: %s", e)
                    return
        except Exception as e:  # noqa: BLE001 - reported to the coordinator or kept
            if stopping.is_set() or (coord is not None and coord.should_stop()):
                return  # cancelled on purpose: the queue was closed under us
            if coord is not None:
                coord.request_stop(e)
            else:
                log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _cancel_on_stop(self, sess, coord, stopping):
        while not stopping.is_set():
            if coord.wait_for_stop(0.1):
                self._cancel(sess, stopping)
                return

    def _cancel(self, sess, stopping):
        stopping.set()
        try:
            sess.run(self._cancel_op)
        except Exception as e:  # noqa: BLE001 - the session may be going away
            log.debug("QueueRunner: ignored error from cancel_op: %s", e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """One thread per enqueue op (plus one that cancels the queue on a coordinator
        stop); they also end when ``sess`` closes."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already running for this session (TF's rule)
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        stopping = threading.Event()
        threads = [threading.Thread(target=self._run, args=(sess, op, coord, stopping),
                                    name=f"QueueRunner:{self.name}", daemon=daemon)
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._cancel_on_stop, args=(sess, coord, stopping),
                                            name=f"QueueRunnerCancel:{self.name}", daemon=True))
        _on_session_close(sess, lambda: self._stop_for_close(sess, stopping, threads))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def _stop_for_close(self, sess, stopping, threads):
        self._cancel(sess, stopping)
        for t in threads:
            if t.is_alive() and t is not threading.current_thread():
                t.join(_JOIN_ON_CLOSE_S)


def _on_session_close(sess, fn):
    target = getattr(sess, "_sess", None) or sess  # a MonitoredSession's raw session
    while hasattr(target, "_sess") and not hasattr(target, "_before_close"):
        target = target._sess
    callbacks = getattr(target, "_before_close", None)
    if callbacks is None:
        try:
            callbacks = target._before_close = []
        except AttributeError:
            return
    callbacks.append(fn)


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Adds ``qr`` to the graph's queue runners (started by ``start_queue_runners``)."""
    _ops.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS):
    """Starts the threads of every queue runner in ``collection``; returns them."""
    from dtf.client.session import get_default_session

    sess = sess or get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. Use "
                         "`with sess.as_default()` or pass an explicit session to "
                         "tf.start_queue_runners(sess=sess)")
    graph = getattr(sess, "graph", None) or _ops.get_default_graph()
    threads = []
    for qr in graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
