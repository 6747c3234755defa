"""tf.train.SyncReplicasOptimizer: synchronous training with TF1's design.

Every replica pushes its gradients into one ConditionalAccumulator per variable (on the
variable's device; a SparseConditionalAccumulator for IndexedSlices gradients, so an
embedding's replicas push and the chief takes only the rows a step touched), then waits for a token from the sync token queue (on the global
step's device). The chief runs a thread that takes ``replicas_to_aggregate`` averaged
gradients from every accumulator, applies them once, increments the global step and puts
``max(total_num_replicas, replicas_to_aggregate)`` tokens holding the new step into the
queue. Gradients computed from an older step are dropped by the accumulators, which is
also what makes backup replicas work.

Where TF1 is known to hang, dtf does not:
- the chief's thread runs its update in bounded slices (a step first waits for every
  accumulator to be ready, then takes, so a slice that times out has taken nothing) and
  stops as soon as the session stops or closes, instead of the 120 s grace period;
- at the end of training the chief puts one more token per replica into the queue, so a
  replica blocked on a token finishes its step, sees the last step and leaves its loop;
- a replica waits for a token at most DTF_SYNC_TOKEN_TIMEOUT_S seconds (default 300),
  then fails with DeadlineExceededError naming the queue instead of hanging forever when
  the chief or too many replicas have died;
- when no update has been possible for DTF_SYNC_STALL_CHECK_S seconds (default 10), the
  chief asks its master which tasks of the cluster do not answer; if any is dead (its port
  refuses connections) training stops with an UnavailableError naming it, instead of the
  chief waiting out the token timeout for gradients that will never come.
"""
from __future__ import annotations

import logging
import os
import threading
import time

import numpy as np

from dtf.client.config import RunOptions
from dtf.framework import errors
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.ops import array_ops, control_flow_ops, state_ops
from dtf.ops import variables as _variables
from dtf.framework.indexed_slices import IndexedSlices
from dtf.ops.data_flow_ops import ConditionalAccumulator, FIFOQueue
from dtf.ops.sparse_accumulator_ops import SparseConditionalAccumulator
from dtf.runtime import env
from dtf.train.optimizers import Optimizer
from dtf.train.session_run_hook import SessionRunHook

__all__ = ["SyncReplicasOptimizer"]

log = logging.getLogger("dtf")

TOKEN_TIMEOUT_ENV = "DTF_SYNC_TOKEN_TIMEOUT_S"
_DEFAULT_TOKEN_TIMEOUT_S = 300.0
# The chief's update runs in slices this long, so it notices a stop request promptly.
_CHIEF_SLICE_MS = 250
STALL_CHECK_ENV = "DTF_SYNC_STALL_CHECK_S"
_DEFAULT_STALL_CHECK_S = 10.0
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


def _token_timeout_ms() -> int:
    return int(float(os.environ.get(TOKEN_TIMEOUT_ENV, _DEFAULT_TOKEN_TIMEOUT_S)) * 1000)


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the gradients of ``replicas_to_aggregate`` replicas, averages them and
    applies them with ``opt`` once per global step."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        log.info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
                 replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list = []

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's compute_gradients: aggregation happens in apply_gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Pushes the gradients into the accumulators and waits for a token; returns the
        train op every replica runs. Builds the chief's update op on the way."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        graph = _ops.get_default_graph()
        self._build_local_step(graph, global_step)
        with _ops.name_scope(None, self._name):
            train_ops, aggregated = self._build_accumulators(grads_and_vars)
            with _ops.device(global_step.device), _ops.name_scope(""):
                update_op = self._opt.apply_gradients(
                    list(zip(aggregated, [v for _, v in grads_and_vars])), global_step)
                self._sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(),
                                                   name="sync_token_q", shared_name="sync_token_q")
                with _ops.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue(timeout_ms=_token_timeout_ms())
                train_op = state_ops.assign(self._local_step, token)
                with _ops.control_dependencies([update_op]):
                    # A fresh read, ordered after the increment: tokens carry the new step.
                    sync_op = self._enqueue_tokens(self._tokens_per_step)
                if self._variable_averages is not None:
                    with _ops.control_dependencies([sync_op]), _ops.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
            self._chief_queue_runner = _ChiefQueueRunner(sync_op)
            chief_init_ops = [self.local_step_init_op]
            for accum, dev in self._accumulator_list:
                with _ops.device(dev):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def _build_local_step(self, graph, global_step):
        """``sync_rep_local_step``: the step this replica's gradients are computed at; a
        local variable kept on this replica (colocated with an op placed here)."""
        local_anchor = control_flow_ops.no_op()
        with graph.colocate_with(local_anchor):
            self._local_step = _variables.Variable(
                0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        self.ready_for_local_init_op = _variables.report_uninitialized_variables(
            _variables.global_variables())

    def _build_accumulators(self, grads_and_vars):
        """Per variable: an accumulator and the op pushing this replica's gradient; and
        the chief's averaged gradients, taken only once every accumulator is ready (so a
        chief step that times out has taken nothing)."""
        train_ops, accums = [], []
        local_step = self._local_step_after(grads_and_vars)
        for grad, var in grads_and_vars:
            if grad is None:
                accums.append(None)
                continue
            with _ops.device(var.device):
                if isinstance(grad, _ops.Tensor):
                    accum = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                   shared_name=var.name + "/grad_accum")
                    train_ops.append(accum.apply_grad(grad, local_step=local_step))
                elif isinstance(grad, IndexedSlices):
                    # TF's choice, shape=(): the taken dense shape is [-1, ...], which the
                    # optimizers' sparse updates never read. Each row is averaged over the
                    # replicas that sent it.
                    accum = SparseConditionalAccumulator(grad.dtype, shape=(),
                                                         shared_name=var.name + "/grad_accum")
                    train_ops.append(accum.apply_indexed_slices_grad(grad, local_step=local_step))
                else:
                    raise ValueError("Unknown grad type!")
            accums.append(accum)
            self._accumulator_list.append((accum, var.device))
        n = self._replicas_to_aggregate
        waits = []
        for accum, dev in self._accumulator_list:
            with _ops.device(dev):
                waits.append(accum.wait_ready(n))
        aggregated = []
        with _ops.control_dependencies(waits):
            for accum, (_, var) in zip(accums, grads_and_vars):
                with _ops.device(var.device):
                    aggregated.append(None if accum is None else _take(accum, n))
        return train_ops, aggregated

    def _local_step_after(self, grads_and_vars):
        """The replica's local step, read once its gradients are computed. The value is the
        same whenever it is read (only the step's final assign changes it), but a read with
        no inputs runs first and, while the replica waits for the variables, travels to the
        ps as a message of its own; read after the gradients, it rides in theirs (one
        message fewer for the ps per replica step)."""
        grads = [g.values if isinstance(g, IndexedSlices) else g for g, _ in grads_and_vars
                 if isinstance(g, (_ops.Tensor, IndexedSlices))]
        with _ops.colocate_with(self._local_step.op), _ops.control_dependencies(grads):
            return array_ops.identity(self._local_step, name="local_step_after_grads")

    def _enqueue_tokens(self, num_tokens):
        tokens = array_ops.fill([num_tokens], self._global_step.read_value())
        return self._sync_token_queue.enqueue_many((tokens,))

    def get_chief_queue_runner(self):
        """The runner of the chief's update (aggregate, apply, increment, enqueue tokens)."""
        if self._gradients_applied is False:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def variables(self):
        """The wrapped optimizer's variables (not the local step)."""
        return self._opt.variables()

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def get_init_tokens_op(self, num_tokens=-1):
        """The op filling the token queue at the start (``replicas_to_aggregate`` tokens
        by default), so the first step can run."""
        if self._gradients_applied is False:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                             f"{tokens_needed} (needed)")
        if num_tokens <= 0:
            return control_flow_ops.no_op(name="no_init_tokens")
        with _ops.device(self._global_step.device), _ops.name_scope(""):
            return self._enqueue_tokens(num_tokens)

    def _end_tokens_op(self):
        """One token per replica, put in at the end of training: a replica blocked on a
        token finishes its step and sees the last step instead of waiting forever."""
        with _ops.device(self._global_step.device), _ops.name_scope(""):
            return self._enqueue_tokens(self._total_num_replicas)

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook that initializes the replica and, on the chief, runs the update thread."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


def _take(accum, n):
    if isinstance(accum, SparseConditionalAccumulator):
        return accum.take_indexed_slices_grad(n)
    return accum.take_grad(n)


class _ChiefQueueRunner:
    """Runs the chief's update op in a loop on a thread (what TF1 does with a QueueRunner
    over a dummy queue), in bounded slices so a stop is noticed within one slice."""

    def __init__(self, sync_op):
        self._sync_op = sync_op
        self._runs = []  # (thread, its stop event)
        self.error = None
        self.release_op = None  # set by the hook: tokens that free replicas blocked on one

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        stop = threading.Event()
        t = threading.Thread(target=self._run, args=(sess, coord, stop), daemon=daemon,
                             name="sync_replicas_chief")
        if coord is not None:
            coord.register_thread(t)
        self.error = None
        self._runs = [(t, stop)]
        if start:
            t.start()
        return [t]

    def _run(self, sess, coord, stop):
        options = RunOptions(timeout_in_ms=_CHIEF_SLICE_MS)

        def stopping():
            return stop.is_set() or (coord is not None and coord.should_stop())

        stall = _StallWatch(sess)
        while not stopping():
            try:
                sess.run(self._sync_op, options=options)
                stall.progressed()
            except errors.DeadlineExceededError:
                dead = stall.dead_tasks()  # not enough gradients yet; nothing was taken
                if dead and not stopping():
                    self._fail(sess, coord, errors.UnavailableError(None, None, (
                        f"Synchronous training cannot go on: no update for {stall.stalled_s():.0f} s "
                        f"and {'; '.join(dead)} is not answering, so the gradients it should "
                        "send will not come")))
                    return
                continue
            except Exception as e:  # noqa: BLE001 - reported below unless we are stopping
                if stopping():
                    return
                if isinstance(e, _PREEMPTION_ERRORS):
                    # The training loop sees the same failure and re-creates the session
                    # (which stops this thread); until then, retry gently.
                    stop.wait(0.5)
                    continue
                log.error("SyncReplicasOptimizer: the chief's update failed: %s", e)
                self.error = e
                if coord is not None:
                    coord.request_stop(e)
                return

    def _fail(self, sess, coord, error):
        """Stops training with ``error`` and frees the replicas (this chief's own training
        step included) waiting for a token, so that they see the stop."""
        log.error("SyncReplicasOptimizer: %s", error.message)
        self.error = error
        if coord is not None:
            coord.request_stop(error)
        if self.release_op is not None:
            try:
                sess.run(self.release_op)
            except Exception as e:  # noqa: BLE001 - the error above is the one to report
                log.warning("SyncReplicasOptimizer: releasing the replicas failed: %s", e)

    def stop(self, timeout_s):
        """Stops the threads and joins them, waiting at most ``timeout_s`` in all."""
        for _, stop in self._runs:
            stop.set()
        for t, _ in self._runs:
            if t.is_alive() and t is not threading.current_thread():
                t.join(timeout_s)


class _StallWatch:
    """Time since the chief's last update; once it exceeds the stall check period, asks
    the session's master (every period) which tasks are dead."""

    def __init__(self, sess):
        self._target = getattr(sess, "sess_str", "") or ""
        self._every = env.seconds(STALL_CHECK_ENV, _DEFAULT_STALL_CHECK_S)
        self.progressed()

    def progressed(self):
        self._last = time.monotonic()
        self._next_check = self._last + self._every

    def stalled_s(self) -> float:
        return time.monotonic() - self._last

    def dead_tasks(self) -> list:
        now = time.monotonic()
        if not self._target or self._every <= 0 or now < self._next_check:
            return []
        self._next_check = now + self._every
        from dtf.client.remote import tasks_not_answering

        try:
            silent = tasks_not_answering(self._target)
        except errors.OpError as e:  # the master itself: the training step reports that
            log.warning("SyncReplicasOptimizer: no update for %.0f s; asking the master which "
                        "tasks answer failed: %s", self.stalled_s(), e.message)
            return []
        if silent:
            log.warning("SyncReplicasOptimizer: no update for %.0f s; not answering: %s",
                        self.stalled_s(), "; ".join(
                            f"{t['task']} at {t['address']}" + (" (hung?)" if t["port_accepts"] else "")
                            for t in silent))
        return [f"{t['task']} at {t['address']}" for t in silent if not t["port_accepts"]]


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the SyncReplicasOptimizer's initialization on every replica and its update
    thread on the chief; at the end, stops the thread and releases waiting replicas."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._sync_optimizer
        if opt._gradients_applied is False:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using "
                             "the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
            self._end_tokens_op = opt._end_tokens_op()
            self._q_runner.release_op = self._end_tokens_op
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None
            self._end_tokens_op = None

    def after_create_session(self, session, coord):
        missing = np.asarray(session.run(self._ready_for_local_init_op)).ravel()
        if missing.size:
            names = ", ".join(m.decode() if isinstance(m, bytes) else str(m) for m in missing)
            raise RuntimeError("Init operations did not make model ready for SyncReplicasOptimizer "
                               f"local_init. Init op: {self._local_init_op.name}, error: "
                               f"Variables not initialized: {names}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.stop(_CHIEF_SLICE_MS / 1000.0 + 5.0)  # a previous session's thread
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def end(self, session):
        if self._q_runner is None:
            return
        self._q_runner.stop(_CHIEF_SLICE_MS / 1000.0 + 5.0)
        if self._q_runner.error is not None:
            raise self._q_runner.error
        session.run(self._end_tokens_op)
