"""MonitoredSession and MonitoredTrainingSession: a session with hooks, initialization or
restore, checkpoints and summaries, and recovery from a preempted task.

Layers, outermost first: the recoverable session (re-creates everything when a step fails
with AbortedError or UnavailableError), the coordinated session (stop flag), the hooked
session (merges the hooks' fetches and feeds into each run), the tf.Session.
Unlike TF1, re-creating a session is bounded: after DTF_RECOVERY_TIMEOUT_S seconds
(default 60) without a working session it fails with UnavailableError naming the cause.
"""
from __future__ import annotations

import logging
import os
import time

from dtf.framework import errors
from dtf.framework import ops as _ops
from dtf.train import basic_session_run_hooks as _hooks
from dtf.train.coordinator import Coordinator
from dtf.train.session_manager import SessionManager
from dtf.train.session_run_hook import SessionRunContext, SessionRunValues

__all__ = ["Scaffold", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
           "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession"]

log = logging.getLogger("dtf")

USE_DEFAULT = object()
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
RECOVERY_TIMEOUT_ENV = "DTF_RECOVERY_TIMEOUT_S"
_DEFAULT_RECOVERY_TIMEOUT_S = 60.0


class Scaffold:
    """The ops that make a model ready (init, ready checks, local init), its saver and
    summary op; ``finalize`` fills what is unset from the graph's collections or defaults."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None, saver=None,
                 copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            pick = lambda own, name: own if own is not None else getattr(copy_from_scaffold, "_" + name)  # noqa: E731
            init_op, init_feed_dict = pick(init_op, "init_op"), pick(init_feed_dict, "init_feed_dict")
            init_fn = init_fn or copy_from_scaffold._user_init_fn
            ready_op = pick(ready_op, "ready_op")
            ready_for_local_init_op = pick(ready_for_local_init_op, "ready_for_local_init_op")
            local_init_op, summary_op = pick(local_init_op, "local_init_op"), pick(summary_op, "summary_op")
            saver = pick(saver, "saver")
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    def finalize(self):
        """Creates the missing ops and finalizes the graph."""
        from dtf.ops import variables
        from dtf.summary import merge_all
        from dtf.train.saver import Saver

        keys = _ops.GraphKeys
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", keys.INIT_OP,
                                                    variables.global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default("ready_op", keys.READY_OP,
                                                     variables.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", keys.READY_FOR_LOCAL_INIT_OP,
                lambda: variables.report_uninitialized_variables(variables.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default("local_init_op", keys.LOCAL_INIT_OP,
                                                          Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", keys.SUMMARY_OP, merge_all)
        if self._saver is None:
            self._saver = Scaffold.get_or_default(
                "saver", keys.SAVERS, lambda: Saver(sharded=True, allow_empty=True))
        self._saver.build()
        _ops.get_default_graph().finalize()
        log.info("Graph was finalized.")
        return self

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The single item of ``collection_key``, or ``default_constructor()`` (added to it)."""
        elements = _ops.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f"More than one item in the collection \"{collection_key}\". "
                                   f"Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as: tf.Scaffold({arg_name}=item to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            _ops.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """Initializes the local variables (dtf has no lookup tables to add)."""
        from dtf.ops import variables

        return variables.local_variables_initializer()


class SessionCreator:
    """Creates a tf.Session with a ready model."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for {}.".format(self))


class ChiefSessionCreator(SessionCreator):
    """Initializes or restores the model (the chief's job)."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config

    def _get_session_manager(self):
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op, ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=_ops.get_default_graph())
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master, saver=self._scaffold.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path, config=self._config,
            init_op=self._scaffold.init_op, init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn)


class WorkerSessionCreator(ChiefSessionCreator):
    """Waits (at most ``max_wait_secs``) for the chief to make the model ready."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        super().__init__(scaffold, master, config)
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs)


class _StepContext:
    """What ``run_step_fn`` gives ``step_fn``: the raw session, ``run_with_hooks`` and
    ``request_stop``."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        """Ends the loop: ``step_fn`` exits and ``should_stop()`` turns True."""
        raise StopIteration("step_fn has requested the iterations to stop.")


class _HookedSession:
    """One tf.Session, its coordinator, and the hooks around each of its runs."""

    def __init__(self, sess, hooks, coord):
        self.sess = sess
        self._hooks = hooks
        self.coord = coord
        self.stop_requested = False

    def should_stop(self):
        return self.stop_requested or self.coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        from dtf.client.config import RunMetadata, RunOptions

        actual_fetches = {"caller": fetches}
        context = SessionRunContext(
            original_args=(fetches, feed_dict, options, run_metadata), session=self.sess)
        options = options or RunOptions()  # as TF: hooks' options merge into it
        feed_dict = self._merge_hook_requests(context, actual_fetches, feed_dict, options)
        run_metadata = run_metadata or RunMetadata()
        outputs = self.sess.run(actual_fetches, feed_dict=feed_dict, options=options,
                                run_metadata=run_metadata)
        for index, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(results=outputs.get(index), options=options,
                                                     run_metadata=run_metadata))
        self.stop_requested = self.stop_requested or context.stop_requested
        return outputs["caller"]

    def _merge_hook_requests(self, context, actual_fetches, user_feeds, options):
        """Asks each hook's before_run; adds its fetches (keyed by its index) and feeds."""
        feed_dict = dict(user_feeds or {})
        for index, hook in enumerate(self._hooks):
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                actual_fetches[index] = request.fetches
            if request.options is not None:
                _merge_run_options(options, request.options)
            for key, value in (request.feed_dict or {}).items():
                if key in feed_dict:
                    if user_feeds and key in user_feeds:
                        raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user. "
                                           f"Conflict(s): {[key]}")
                    raise RuntimeError(f"Same tensor is fed by two hooks. Conflict(s): {[key]}")
                feed_dict[key] = value
        return feed_dict or None

    def close(self):
        self.coord.request_stop()
        try:
            self.sess.close()
        except Exception:  # noqa: BLE001 - a dead task must not make close() fail
            pass


def _merge_run_options(options, incoming):
    """A hook's RunOptions into the run's, as TF merges them: each field's larger value
    (e.g. a tracing hook raises trace_level for that run)."""
    for field in ("trace_level", "timeout_in_ms", "inter_op_thread_pool", "output_partition_graphs",
                  "report_tensor_allocations_upon_oom"):
        setattr(options, field, max(getattr(options, field), getattr(incoming, field)))


def _recovery_timeout_s() -> float:
    return float(os.environ.get(RECOVERY_TIMEOUT_ENV, _DEFAULT_RECOVERY_TIMEOUT_S))


class _MonitoredSession:
    """Shared by MonitoredSession and SingularMonitoredSession."""

    def __init__(self, session_creator, hooks, should_recover, stop_grace_period_secs=120):
        self._graph = _ops.get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._session_creator = session_creator or ChiefSessionCreator()
        self._should_recover = should_recover
        self._stop_grace_period_secs = stop_grace_period_secs
        self._sess = None
        self._closed = False
        self._sess = self._create_session()

    # -- creation and recovery -------------------------------------------------------
    def _create_once(self):
        with self._graph.as_default():
            tf_sess = self._session_creator.create_session()
            coord = Coordinator(clean_stop_exception_types=[])
            from dtf.train.queue_runner import start_queue_runners

            start_queue_runners(tf_sess, coord)
            hooked = _HookedSession(tf_sess, self._hooks, coord)
            try:
                for hook in self._hooks:
                    hook.after_create_session(tf_sess, coord)
            except BaseException:
                hooked.close()
                raise
        return hooked

    def _create_session(self):
        """A new hooked session; when recovering, retries preemption errors up to the bound."""
        if not self._should_recover:
            return self._create_once()
        bound = _recovery_timeout_s()
        deadline = time.monotonic() + bound
        wait = 0.1
        from dtf.client.remote import connect_deadline

        while True:
            try:
                with connect_deadline(deadline):
                    return self._create_once()
            except _PREEMPTION_ERRORS as e:
                if time.monotonic() + wait > deadline:
                    raise errors.UnavailableError(
                        e.node_def, e.op, f"Gave up creating a session after {bound:g} s (set "
                        f"{RECOVERY_TIMEOUT_ENV} to wait longer). Last error: {e.message}") from e
                log.warning("Creating a session failed (%s); retrying in %.1f s.", e.message, wait)
                time.sleep(wait)
                wait = min(wait * 2, 2.0)

    def _recover(self, error):
        log.info("An error was raised. This may be due to a preemption in a connected worker "
                 "or parameter server. The current session will be closed and a new session "
                 "will be created. Error: %s", error)
        self._sess.close()
        self._sess = None
        self._sess = self._create_session()

    def _call(self, fn):
        """Runs ``fn(hooked_session)``; on a preemption, re-creates the session and retries."""
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        while True:
            try:
                return fn(self._sess)
            except _PREEMPTION_ERRORS as e:
                if not self._should_recover:
                    raise
                self._recover(e)

    # -- the public surface ----------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the fetches with every hook's before_run/after_run around it."""
        return self._call(lambda s: s.run(fetches, feed_dict, options, run_metadata))

    def run_step_fn(self, step_fn):
        """Calls ``step_fn(step_context)``; the whole call is retried after a recovery."""
        import inspect  # here, not at import: inspect costs ~15 ms of start-up

        args = tuple(inspect.signature(step_fn).parameters)
        if args not in (("step_context",), ("self", "step_context")):
            raise ValueError("`step_fn` may either have one `step_context` argument, or `self` and "
                             f"`step_context` arguments if it's an instance method. Got {args} instead.")

        def call(hooked):
            try:
                return step_fn(_StepContext(hooked.sess, hooked.run))
            except StopIteration:
                hooked.stop_requested = True
                return None

        return self._call(call)

    def should_stop(self):
        return self._sess is None or self._sess.should_stop()

    def close(self):
        self._close_internal()

    def _tf_sess(self):
        return self._sess.sess

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type and self._sess is not None:
                for hook in self._hooks:
                    hook.end(self._tf_sess())
        finally:
            try:
                if self._sess is None:
                    # Leaving on an error with no session: a recovery that gave up. Its
                    # error is what the user must see last, not this one.
                    if exception_type is None:
                        raise RuntimeError("Session is already closed.")
                    return
                self._sess.close()
            finally:
                self._sess = None
                if not self._graph_was_finalized:
                    self._graph._unsafe_unfinalize()

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session with hooks that recovers from preempted tasks (TF1's MonitoredSession)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, should_recover=True,
                         stop_grace_period_secs=stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """A chief's MonitoredSession without recovery; ``raw_session()`` is its tf.Session."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, should_recover=False,
                         stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        return self._tf_sess()


def _resolve_defaults(steps, secs, default_steps, default_secs):
    """TF's rule: only one of steps/secs set by the caller wins; neither gives the defaults."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,  # noqa: N802
                             hooks=None, chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT, save_summaries_secs=USE_DEFAULT,
                             config=None, stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """A MonitoredSession for training: the chief initializes or restores and saves
    checkpoints and summaries; other workers wait for the chief's model."""
    from dtf.train import progress_hooks

    save_summaries_steps, save_summaries_secs = _resolve_defaults(
        save_summaries_steps, save_summaries_secs, 100, None)
    save_checkpoint_steps, save_checkpoint_secs = _resolve_defaults(
        save_checkpoint_steps, save_checkpoint_secs, None, 600)
    scaffold = scaffold or Scaffold()
    user_hooks = list(hooks or [])
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, user_hooks + progress_hooks.progress_hooks(user_hooks),
                                stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master,
                                  config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(_hooks.StepCounterHook(output_dir=summary_dir,
                                                    every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or (
                save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(_hooks.SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                                     save_secs=save_summaries_secs,
                                                     output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(_hooks.CheckpointSaverHook(
            checkpoint_dir, save_steps=save_checkpoint_steps, save_secs=save_checkpoint_secs,
            scaffold=scaffold, listeners=progress_hooks.checkpoint_listeners(checkpoint_dir)))
    all_hooks.extend(user_hooks)
    all_hooks.extend(progress_hooks.progress_hooks(all_hooks))
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)
