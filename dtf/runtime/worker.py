"""Worker service: registers partitions, runs them per step, holds the task's resources.

Methods take and return plain message dicts (the ZeroMQ loop is a thin shell around them,
and masters in the same process call them directly).
"""
from __future__ import annotations

import itertools
import os
import random
import threading
import time
from dataclasses import dataclass

import dtf.framework.sendrecv_ops  # noqa: F401  (registers _Send/_Recv)
from dtf.framework import errors
from dtf.framework.device_spec import DeviceSpec
from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import jit_loading
from dtf.runtime import devices, memory
from dtf.runtime.executor import ExecState, Executor, StepContext
from dtf.runtime.rendezvous import RendezvousManager
from dtf.state.resources import ResourceManager


# A partition runs on the server's I/O thread only while each uninterrupted piece of it
# takes less than this: the I/O thread also answers pings and receives every tensor.
INLINE_BUDGET_S = 0.01


@dataclass
class _GraphStep:
    plan: object
    ctx: StepContext
    step_id: int
    feed_values: list
    fetches: tuple
    stats: list | None
    parts: int
    device_type: str


class _InlineRun:
    """A partition driven by a server's I/O thread (Worker.start_graph). A class rather
    than closures: a closure that schedules itself is a reference cycle, and every step's
    context, rendezvous and run then waited for the cycle collector (~35 objects per
    partition on a sync ps) instead of going when the step ends."""

    __slots__ = ("worker", "step", "run", "respond", "loop", "phase", "timer")

    def __init__(self, worker, step, respond, loop):
        self.worker = worker
        self.step = step
        plan = step.plan
        self.run = plan.start(step.ctx, step.feed_values) if plan.dataflow is not None else None
        self.respond = respond
        self.loop = loop
        # "inline" while the I/O thread drives it; "thread" once handed to a handler
        # thread; "ended" once answered. Late wake-ups (several waits may each wake a
        # parked step) find it no longer inline.
        self.phase = "inline"
        # The pending wake-up at the step's deadline, cancelled when the step leaves the
        # I/O thread: a queue's timeout (minutes for SyncReplicasOptimizer's token) would
        # otherwise keep every step, and all it holds, alive that long.
        self.timer = None

    def resume(self):
        self.loop.call_soon(self.advance)

    def advance(self):
        if self.phase != "inline":
            return
        step, run, worker = self.step, self.run, self.worker
        t0 = time.perf_counter()
        try:
            if run is None:
                values = step.plan.run(step.ctx, step.feed_values)
            elif run.advance(on_ready=self.resume):
                values = run.outputs()
            else:
                worker._judge_inline(step, time.perf_counter() - t0)
                self._stop_timer()
                if run.needs_thread:
                    self.phase = "thread"
                    self.loop.run_on_pool(lambda: _finish_blocking(run), self.finish)
                elif run.wake_at is not None:
                    self.timer = self.loop.call_later(max(0.0, run.wake_at - time.monotonic()),
                                                      self.advance)
                return
        except Exception as e:  # noqa: BLE001 - the reply carries it
            self.finish(e)
            return
        worker._judge_inline(step, time.perf_counter() - t0)
        self.finish(values)

    def finish(self, result):
        if self.phase == "ended":
            return
        self.phase = "ended"
        self._stop_timer()
        step, worker = self.step, self.worker
        if isinstance(result, errors.OpError):
            worker._step_failed(step, result)
        worker._partition_done(step.step_id, step.parts)
        self.respond(result if isinstance(result, BaseException) else worker._graph_reply(step, result))

    def _stop_timer(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


def _finish_blocking(run):
    """The rest of a step moved to a handler thread: it may block there."""
    run.advance()
    return run.outputs()


class Worker:
    def __init__(self, task_name: str, send_tensor=None, state: ExecState | None = None,
                 inter_op_threads: int = 1):
        """``task_name`` like '/job:worker/replica:0/task:1'; ``send_tensor(task, step_id,
        key, value)`` delivers a tensor to another task's rendezvous; ``state`` shares
        variables with an in-process session; ``inter_op_threads``: threads that may run a
        partition's independent ops (see dtf.runtime.parallel)."""
        self.inter_op_threads = inter_op_threads
        self.task_name = task_name
        memory.keep_freed_memory()  # a step's arrays reuse the last one's pages
        self.incarnation = random.getrandbits(62) | 1
        self.started = time.time()
        self.state = state or ExecState(ResourceManager())
        self.resources = self.state.resources
        self.rendezvous = RendezvousManager(send_tensor, task_name)
        self._graphs: dict = {}
        self._handles = itertools.count(1)
        self._lock = threading.Lock()
        self.steps_run = 0
        self.last_error = ""
        self._gpu_count = None
        self._parts_done: dict = {}

    @property
    def gpu_count(self) -> int:
        """The task's CUDA devices, probed on first use (Status or a GPU partition)."""
        if self._gpu_count is None:
            self._gpu_count = devices.gpu_count()
        return self._gpu_count

    # -- partitions --------------------------------------------------------------------
    def register_graph(self, msg):
        nodes = [n if isinstance(n, NodeDef) else NodeDef.from_dict(n) for n in msg["nodes"]]
        device = msg["device"]
        spec = DeviceSpec.from_string(device)
        executor = Executor(spec.device_type or "CPU", device, self.inter_op_threads)
        executor.add_nodes(nodes)
        targets = tuple(n.name for n in nodes)
        handle = f"{self.incarnation:x}-{next(self._handles)}"
        with self._lock:
            self._graphs[handle] = (executor, targets)
        return {"handle": handle, "incarnation": self.incarnation}

    def deregister_graph(self, msg):
        with self._lock:
            self._graphs.pop(msg["handle"], None)
        return {}

    def run_graph(self, msg, hooks=None, judge=True):
        """Runs one registered partition for one step: feeds in, fetches out. ``hooks``
        (rendezvous.WaitHooks): lent by a master whose thread runs this partition itself.
        ``judge``: time the run to decide whether ``start_graph`` may run the plan on the
        I/O thread; a master that only ever runs it on its own thread passes False and
        saves two reads of the thread CPU clock (system calls, ~0.56 us each)."""
        step = self._graph_step(msg, hooks=hooks)
        t0 = time.thread_time() if judge else 0.0
        try:
            values = step.plan.run(step.ctx, step.feed_values, step.stats)
        except errors.OpError as e:
            self._step_failed(step, e)
            raise
        finally:
            step.ctx.values = None  # the step's slots: the fetches are in ``values``
            self._partition_done(step.step_id, step.parts)
        if judge:
            self._judge_inline(step, time.thread_time() - t0)
        if not step.plan.ran:  # a plan's first run is always here (start_graph needs a cached one)
            step.plan.ran = True
            memory.trim()  # an initializer's temporaries; see dtf.runtime.memory
        return self._graph_reply(step, values)

    def start_graph(self, msg, respond, loop) -> bool:
        """Runs a partition on the calling thread (a server's I/O thread) when it has
        proved quick: it parks instead of waiting for tensors or for another step (queues,
        accumulators), so a step costs no thread hand-off. ``respond(reply or exception)``
        is called when it ends; the rest of a parked step runs through the loop's
        ``call_soon`` (when woken) and ``call_later`` (at its deadline), or moves to a
        handler thread if a kernel can only proceed blocking. Returns False when the
        partition must run on a thread of its own (``run_graph``)."""
        if msg.get("trace"):
            return False
        step = self._graph_step(msg, only_inline=True)
        if step is None:
            return False
        early, send_early = msg.get("early"), getattr(respond, "early", None)
        if (isinstance(early, str) and early != self.task_name and send_early is not None
                and step.parts == 1):  # the step's one partition here: no sends after its reply
            rendezvous = step.ctx.rendezvous
            rendezvous.early_task, rendezvous.send_early = early, send_early
            # Its last sends there ride in the reply, which follows at once: a synchronous
            # worker's token from the ps costs no message of its own.
            rendezvous.fold_task = early
        _InlineRun(self, step, respond, loop).advance()
        return True

    def _graph_step(self, msg, only_inline=False, hooks=None) -> "_GraphStep | None":
        """The step's plan and context; ``only_inline``: None unless the plan exists and
        may run on the I/O thread (never compiles one there); ``hooks`` as in run_graph."""
        if msg.get("incarnation") not in (None, self.incarnation):
            raise errors.AbortedError(None, None, f"{self.task_name} has restarted since the graph "
                                      "was registered (incarnation changed)")
        entry = self._graphs.get(msg["handle"])
        if entry is None:
            raise errors.AbortedError(None, None, f"Graph handle {msg['handle']!r} is not found on "
                                      f"{self.task_name}; the task may have restarted")
        executor, targets = entry
        feeds = msg.get("feeds") or {}
        feed_names = tuple(sorted(feeds)) if feeds else ()
        fetches = tuple(msg.get("fetches") or ())
        if only_inline:
            plan = executor.cached_plan(fetches, feed_names, targets)
            if plan is None or not plan.inline:
                return None
        else:
            plan = executor.plan(fetches, feed_names, targets)
        step_id = msg["step_id"]
        deadline = None
        if msg.get("timeout_ms"):
            deadline = time.monotonic() + msg["timeout_ms"] / 1000.0
        rendezvous = self.rendezvous.step(step_id, starting=True)
        if hooks is not None:  # a rendezvous.WaitHooks
            rendezvous.on_idle, rendezvous.pump = hooks.on_idle, hooks.pump
        parts = int(msg.get("task_partitions") or 1)
        fold = msg.get("fold")
        if isinstance(fold, str) and fold != self.task_name and parts == 1:
            rendezvous.fold_task = fold
        ctx = StepContext(self.state, step_id, rendezvous, deadline, executor.device, self.task_name)
        return _GraphStep(plan, ctx, step_id, [feeds[n] for n in feed_names] if feeds else [], fetches,
                          [] if msg.get("trace") else None, parts,
                          executor.device_type)

    def _judge_inline(self, step, busy_s):
        """A partition may run on the I/O thread once a run of it was quick (``busy_s``: time
        it held a thread, waits excluded); a slow piece demotes it. A plan that runs ops on
        inter-op threads never qualifies: its caller's time hides the work they do."""
        if step.stats is not None:
            return
        step.plan.inline = (busy_s < INLINE_BUDGET_S and step.device_type == "CPU"
                            and step.plan.inter_op is None)

    def _step_failed(self, step, e):
        self.last_error = e.message.splitlines()[0][:300]
        if step.parts > 1:  # this task's other partitions of the step must not wait for it
            self.rendezvous.abort(step.step_id, e)

    def _graph_reply(self, step, values):
        self.steps_run += 1
        # Fetches of a GPU partition leave it in host memory.
        values = [v.copy_to_host() if hasattr(v, "copy_to_host") else v for v in values]
        reply = {"outputs": dict(zip(step.fetches, values))}
        folded = step.ctx.rendezvous.folded if step.ctx.rendezvous is not None else None
        if folded:  # tensors for the master's task: its rendezvous takes them from the reply
            reply["step_id"] = step.step_id
            reply["keys"] = [k for k, _ in folded]
            reply["tensors"] = [v for _, v in folded]
        if step.stats is not None:
            reply["stats"] = [{"node": s.node_name, "op": s.op, "start_us": s.all_start_micros,
                               "dur_us": s.op_end_rel_micros, "shapes": s.output_shapes}
                              for s in step.stats]
        return reply

    def _partition_done(self, step_id, parts):
        """Ends the step's rendezvous once all ``parts`` partitions of it here have run."""
        if parts > 1:
            with self._lock:
                done = self._parts_done.get(step_id, 0) + 1
                if done < parts:
                    self._parts_done[step_id] = done
                    return
                self._parts_done.pop(step_id, None)
        self.rendezvous.finish(step_id)

    # -- step control --------------------------------------------------------------------
    def tensor_push(self, msg):
        keys, tensors = msg["keys"], msg["tensors"]
        if not isinstance(keys, list) or not isinstance(tensors, list) or len(keys) != len(tensors):
            raise errors.InvalidArgumentError(None, None, "Tensor message: keys and tensors differ")
        self.rendezvous.put_many(msg["step_id"], list(zip(keys, tensors)))

    def tensor_refused(self, header, error):
        """A ``Tensor`` push this task could not take (over its message limit, malformed):
        its step fails here with that error instead of waiting for the tensors."""
        step_id = header.get("step_id")
        if isinstance(step_id, int):
            self.rendezvous.abort(step_id, error)

    def abort_step(self, msg):
        err = errors.from_code(msg.get("code", errors.CANCELLED), msg.get("message", "step aborted"))
        self.rendezvous.abort(msg["step_id"], err)
        return {}

    def reset(self, msg):
        containers = msg.get("containers")
        self.resources.clear(containers)
        if containers is None:
            self.state.reset_rngs()
        return {}

    def status(self, msg=None):
        import resource as _resource

        rss_kb = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss
        return {"task": self.task_name, "incarnation": self.incarnation, "pid": os.getpid(),
                "uptime_s": time.time() - self.started, "steps": self.steps_run,
                "graphs": len(self._graphs), "max_rss_kb": rss_kb, "last_error": self.last_error,
                "variables": sum(1 for _ in self.resources.variables()), "gpus": self.gpu_count,
                "cpu_loops": jit_loading.state()}
