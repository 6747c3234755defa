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

import dtf.ops.sendrecv_ops  # noqa: F401  (registers _Send/_Recv)
from dtf.framework import errors
from dtf.framework.device_spec import DeviceSpec
from dtf.framework.graph_def import NodeDef
from dtf.runtime import devices
from dtf.runtime.executor import ExecState, Executor, StepContext
from dtf.runtime.rendezvous import RendezvousManager
from dtf.runtime.resources import ResourceManager


class Worker:
    def __init__(self, task_name: str, send_tensor=None, state: ExecState | None = None):
        """``task_name`` like '/job:worker/replica:0/task:1'; ``send_tensor(task, step_id,
        key, value)`` delivers a tensor to another task's rendezvous; ``state`` shares
        variables with an in-process session."""
        self.task_name = task_name
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
        executor = Executor(spec.device_type or "CPU", device)
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

    def run_graph(self, msg):
        """Runs one registered partition for one step: feeds in, fetches out."""
        if msg.get("incarnation") not in (None, self.incarnation):
            raise errors.AbortedError(None, None, f"{self.task_name} has restarted since the graph "
                                      "was registered (incarnation changed)")
        entry = self._graphs.get(msg["handle"])
        if entry is None:
            raise errors.AbortedError(None, None, f"Graph handle {msg['handle']!r} is not found on "
                                      f"{self.task_name}; the task may have restarted")
        executor, targets = entry
        feeds = msg.get("feeds") or {}
        feed_names = tuple(sorted(feeds))
        fetches = tuple(msg.get("fetches") or ())
        plan = executor.plan(fetches, feed_names, targets)
        step_id = msg["step_id"]
        deadline = None
        if msg.get("timeout_ms"):
            deadline = time.monotonic() + msg["timeout_ms"] / 1000.0
        rendezvous = self.rendezvous.step(step_id)
        if msg.get("_on_idle") is not None:  # only set by a master in this process
            rendezvous.on_idle = msg["_on_idle"]
        ctx = StepContext(self.state, step_id, rendezvous, deadline, executor.device, self.task_name)
        stats = [] if msg.get("trace") else None
        parts = int(msg.get("task_partitions") or 1)
        try:
            values = plan.run(ctx, [feeds[n] for n in feed_names], stats)
        except errors.OpError as e:
            self.last_error = e.message.splitlines()[0][:300]
            if parts > 1:  # this task's other partitions of the step must not wait for it
                self.rendezvous.abort(step_id, e)
            raise
        finally:
            self._partition_done(step_id, parts)
        self.steps_run += 1
        # Fetches of a GPU partition leave it in host memory.
        values = [v.copy_to_host() if hasattr(v, "copy_to_host") else v for v in values]
        reply = {"outputs": dict(zip(fetches, values))}
        if stats is not None:
            reply["stats"] = [{"node": s.node_name, "op": s.op, "start_us": s.all_start_micros,
                               "dur_us": s.op_end_rel_micros, "shapes": s.output_shapes} for s in stats]
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
        for key, value in zip(keys, tensors):
            self.rendezvous.put(msg["step_id"], key, value)

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
                "variables": sum(1 for _ in self.resources.variables()), "gpus": self.gpu_count}
