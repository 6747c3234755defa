"""tf.train.Supervisor: TF1's session supervisor for (distributed) training loops.

The chief initializes or restores the model and runs the standard services on daemon
threads: a checkpoint every ``save_model_secs``, the summary op and the global step's
rate every ``save_summaries_secs``. The other workers wait until the model is ready.
A Coordinator shared by every thread carries the stop request and the first error.

Unlike TF1, the chief does not write ``graph.pbtxt`` or a meta graph into ``logdir``
(dtf writes no meta graphs); the graph itself goes to the event file, as in TF1.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.train import training_util
from dtf.train.coordinator import Coordinator, LooperThread
from dtf.train.session_manager import SessionManager

__all__ = ["Supervisor"]

log = logging.getLogger("dtf")

_VARIABLE_OP_TYPES = ("Variable", "VariableV2")


def _first_in_collection(key):
    found = _ops.get_collection(key)
    if len(found) > 1:
        log.info("Found %d %s operations. Returning the first one.", len(found), key)
    return found[0] if found else None


class Supervisor:
    """Creates (chief) or waits for (other workers) a session with a ready model, runs the
    chief's checkpoint and summary services, and coordinates stopping."""

    # TF1's sentinel for "take it from the graph's collections or build the default".
    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        graph = graph if graph is not None else _ops.get_default_graph()
        with graph.as_default():
            self._ready_op = _default_ready_op() if ready_op is Supervisor.USE_DEFAULT else ready_op
            self._ready_for_local_init_op = (
                _first_in_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP)
                if ready_for_local_init_op is Supervisor.USE_DEFAULT else ready_for_local_init_op)
            self._init_op = _default_init_op() if init_op is Supervisor.USE_DEFAULT else init_op
            self._init_feed_dict = init_feed_dict
            self._local_init_op = (_default_local_init_op() if local_init_op is Supervisor.USE_DEFAULT
                                   else local_init_op)
            self._saver = _default_saver() if saver is Supervisor.USE_DEFAULT else saver
            self._summary_op = (_default_summary_op() if summary_op is Supervisor.USE_DEFAULT
                                else summary_op)
            self._global_step = (_default_global_step(graph) if global_step is Supervisor.USE_DEFAULT
                                 else global_step)
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        # Only the chief writes: logdir, checkpoints and summaries stay None elsewhere.
        self._logdir = None
        self._save_summaries_secs = None
        self._save_model_secs = None
        self._save_path = None
        self._summary_writer = None
        self._graph_added_to_summary = False
        if is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if logdir:
                self._save_path = os.path.join(logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                if logdir:
                    from dtf.summary.writer import FileWriter

                    self._summary_writer = FileWriter(logdir)
            else:
                self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options)
        self._verify_setup()
        graph.finalize()

    def _verify_setup(self):
        """A non-chief replica's variables must be placed (on the ps), else each replica
        would train its own copy."""
        if self._is_chief:
            return
        for op in self._graph.get_operations():
            if op.type in _VARIABLE_OP_TYPES and not op.device:
                raise ValueError(f"When using replicas, all Variables must have their device "
                                 f"set: {op.name} ({op.type})")

    # -- properties --------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    # -- sessions ----------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """The chief: a session restored from ``logdir``'s newest checkpoint or initialized,
        and (with ``start_standard_services``) the services started. Others: a session once
        the model is ready. Queue runners of the graph start on both."""
        # A session made again after stop() must let the coordinator's threads run.
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A context yielding a prepared session; on exit stops the services and closes the
        session. An exception in the body stops them too and is re-raised, except
        OutOfRangeError, which ends the loop cleanly (the input ran out)."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - recorded, re-raised by stop() unless clean
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    try:
                        sess.close()
                    except Exception:  # noqa: BLE001 - a closing error must not hide the cause
                        pass

    def _write_graph(self):
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    # -- services ----------------------------------------------------------------------
    def start_standard_services(self, sess):
        """Starts the chief's threads: summaries and steps/sec every ``save_summaries_secs``,
        a checkpoint every ``save_model_secs``. Returns the threads (None without logdir)."""
        from dtf.summary.proto import SessionLog

        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only "
                               "chief supervisors can write events.")
        if not self._logdir:
            log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return None
        if self._global_step is not None and self._summary_writer:
            # TensorBoard purges events after a restart from this START's step.
            step = training_util.global_step(sess, self._global_step)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), step)
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(_SummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver and self._save_model_secs:
            threads.append(_CheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def start_queue_runners(self, sess, queue_runners=None):
        """Starts threads for ``queue_runners`` (default: the graph's QUEUE_RUNNERS) under
        this supervisor's coordinator; returns them."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Starts a thread calling ``target`` every ``timer_interval_secs`` (or repeatedly
        when None) until a stop is requested; ``stop`` joins it."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Requests a stop, joins the threads (grace period ``stop_grace_secs``) and closes
        the summary writer; re-raises the first error a thread reported."""
        from dtf.summary.proto import SessionLog

        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            # Last, as the threads may still have been writing.
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None):
        """Asks every thread to stop; ``ex`` is re-raised by ``stop`` (see Coordinator)."""
        self._coord.request_stop(ex=ex)

    def should_stop(self):
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None):
        """Writes ``summary`` (what a summary op returned) at ``global_step`` (default: the
        current global step)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = training_util.global_step(sess, self._global_step)
        self._summary_writer.add_summary(summary, global_step)

    # TF1's CamelCase aliases, still used by old trainers.
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


# -- defaults, as TF1 picks them ---------------------------------------------------------
def _collection_or_default(key, build):
    """The first item of collection ``key``, else ``build()`` (added to it unless None)."""
    found = _first_in_collection(key)
    if found is None:
        found = build()
        if found is not None:
            _ops.add_to_collection(key, found)
    return found


def _default_ready_op():
    from dtf.ops import variables

    return _collection_or_default(GraphKeys.READY_OP, variables.report_uninitialized_variables)


def _default_init_op():
    from dtf.ops import variables

    return _collection_or_default(GraphKeys.INIT_OP, variables.global_variables_initializer)


def _default_local_init_op():
    from dtf.ops import control_flow_ops, variables

    # TF1 groups the tables' initializers in too; dtf has no lookup tables.
    return _collection_or_default(
        GraphKeys.LOCAL_INIT_OP,
        lambda: control_flow_ops.group(variables.local_variables_initializer()))


def _default_saver():
    from dtf.ops import variables
    from dtf.train.saver import Saver

    return _collection_or_default(GraphKeys.SAVERS,
                                  lambda: Saver() if variables.global_variables() else None)


def _default_summary_op():
    from dtf.summary import merge_all

    return _collection_or_default(GraphKeys.SUMMARY_OP, merge_all)


def _default_global_step(graph):
    step = _first_in_collection(GraphKeys.GLOBAL_STEP)
    if step is not None:
        return step
    try:
        step = graph.get_tensor_by_name("global_step:0")
    except KeyError:
        return None
    if step.dtype.base_dtype not in (dtypes.int32, dtypes.int64):
        log.warning("Found 'global_step' is not an int type: %s", step.dtype)
        return None
    _ops.add_to_collection(GraphKeys.GLOBAL_STEP, step)
    return step


# -- the chief's services ----------------------------------------------------------------
class _SummaryThread(LooperThread):
    """Runs the summary op every save_summaries_secs and writes it at the global step."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary, step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary, step = self._sess.run(self._sv.summary_op), None
        if self._sv.summary_writer:
            log.info("Recording summary at step %s.", step)
            self._sv.summary_writer.add_summary(summary, step)


class _StepCounterThread(LooperThread):
    """Writes ``<global step op name>/sec``, the global step's rate, every
    save_summaries_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv, self._sess = sv, sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self._last_time, self._last_step = 0.0, 0
        self._logged = 0

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._sv.global_step)

    def run_loop(self):
        from dtf.summary.proto import Summary

        step = training_util.global_step(self._sess, self._sv.global_step)
        now = time.time()
        elapsed = now - self._last_time
        rate = (step - self._last_step) / elapsed if elapsed > 0.0 else float("inf")
        self._last_step, self._last_time = step, now
        if self._sv.summary_writer:
            summary = Summary(value=[Summary.Value(tag=self._tag, simple_value=rate)])
            self._sv.summary_writer.add_summary(summary, step)
        if self._logged < 10:  # as TF1: the first ten only
            self._logged += 1
            log.info("%s: %g", self._tag, rate)


class _CheckpointThread(LooperThread):
    """Saves a checkpoint (at the global step) every save_model_secs."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv, self._sess = sv, sess

    def run_loop(self):
        from dtf.summary.proto import SessionLog

        log.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            step = training_util.global_step(self._sess, self._sv.global_step)
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path),
                step)
