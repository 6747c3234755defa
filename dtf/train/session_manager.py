"""tf.train.SessionManager: sessions whose model is ready (initialized or restored).

The chief prepares the model (restores the newest checkpoint or runs the init op); the
other workers wait, bounded by ``max_wait_secs``, until it is ready, logging which
variables are still uninitialized.
"""
from __future__ import annotations

import logging
import time

import numpy as np

from dtf.client.session import Session
from dtf.framework import errors
from dtf.framework import ops as _ops

__all__ = ["SessionManager"]

log = logging.getLogger("dtf")

# dtf polls readiness at least this often: a ready check is one cheap step.
_MAX_POLL_SECS = 1.0


def _ready(op, sess, what):
    """(True, None) when ``op`` reports nothing uninitialized, else (False, why)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            log.warning("%s : error [%s]", what, e)
            raise
        return False, str(e)
    value = np.asarray(value)
    if value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.ravel())
    return False, "Variables not initialized: " + names


def _safe_close(sess):
    try:
        sess.close()
    except Exception:  # noqa: BLE001 - closing a half-dead session must not hide the cause
        pass


class SessionManager:
    """Creates sessions and makes (chief) or waits for (others) a ready model."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=30, local_init_run_options=None, local_init_feed_dict=None):
        if ready_op is None and ready_for_local_init_op is not None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a ready_op.")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else _ops.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None,
                            checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                            max_wait_secs=7200, config=None):
        from dtf.train.saver import latest_checkpoint

        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        path = latest_checkpoint(checkpoint_dir)
        deadline = time.monotonic() + max_wait_secs
        while path is None and wait_for_checkpoint and time.monotonic() < deadline:
            log.info("Waiting for checkpoint to be available.")
            time.sleep(min(self._recovery_wait_secs, _MAX_POLL_SECS))
            path = latest_checkpoint(checkpoint_dir)
        if path is None:
            return sess, False
        log.info("Restoring parameters from %s", path)
        saver.restore(sess, path)
        saver.recover_last_checkpoints([path])
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A session with a ready model: restored from the newest checkpoint, else initialized."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir,
                                                  checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                       "local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, msg = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready for local_init. "
                                   f"Init op: {_op_name(init_op)}, init fn: {init_fn}, error: {msg}")
            ok, msg = _ready(self._ready_op, sess, "Model not ready")
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready. Init op: "
                                   f"{_op_name(init_op)}, init fn: {init_fn}, local_init_op: "
                                   f"{_op_name(self._local_init_op)}, error: {msg}")
        except BaseException:
            _safe_close(sess)
            raise
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, local_init_run_options=None):
        """(session, whether its model is ready) after trying to restore a checkpoint."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir,
                                                  checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        if not ok:
            log.info("Restoring model from %s did not make model ready for local init: %s",
                     checkpoint_dir or checkpoint_filename_with_path, msg)
            return sess, False
        ready, msg = _ready(self._ready_op, sess, "Model not ready")
        if not ready:
            log.info("Restoring model from %s did not make model ready: %s",
                     checkpoint_dir or checkpoint_filename_with_path, msg)
            return sess, False
        return sess, True

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """Polls until the model is ready (made so by the chief); DeadlineExceededError naming
        what is still uninitialized after ``max_wait_secs``."""
        max_wait_secs = float("Inf") if max_wait_secs is None else max_wait_secs
        deadline = time.monotonic() + max_wait_secs
        poll = min(self._recovery_wait_secs, _MAX_POLL_SECS)
        sess = Session(master, graph=self._graph, config=config)
        try:
            while True:
                why = self._not_ready(sess)
                if why is None:
                    return sess
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.DeadlineExceededError(
                        None, None, f"Session was not ready after waiting {max_wait_secs:g} secs. "
                        f"Still waiting for: {why}")
                log.info("Waiting for model to be ready. %s", why)
                time.sleep(min(poll, remaining))
        except BaseException:
            _safe_close(sess)
            raise

    def _not_ready(self, sess):
        """None when the model is ready (local init done), else what it waits for."""
        ok, not_ready_local = self._try_run_local_init_op(sess)
        if not ok:
            return f"Ready_for_local_init_op: {not_ready_local}"
        ready, not_ready = _ready(self._ready_op, sess, "Model not ready")
        return None if ready else f"ready: {not_ready}"

    def _try_run_local_init_op(self, sess):
        if self._local_init_op is None:
            return True, None
        ready, msg = _ready(self._ready_for_local_init_op, sess, "Model not ready for local init")
        if not ready:
            return False, msg
        log.info("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        return True, None


def _op_name(op):
    return None if op is None else getattr(op, "name", op)
