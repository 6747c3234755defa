"""The in-process backend of ``tf.Session("")``: one CPU device, one executor.

Graphs that pin ops to a GPU instead go through an in-process master and worker of the
task /job:localhost/task:0 (placement, CPU/GPU partitions, copies at their boundaries);
both paths share the session's variables.
"""
from __future__ import annotations

import itertools
import os
import sys
import time

from dtf.framework import errors
from dtf.framework.device_spec import DeviceSpec
from dtf.framework.graph_def import node_def_of
from dtf.runtime import memory
from dtf.runtime.executor import ExecState, Executor, StepContext
from dtf.framework.graph_walk import needed_nodes
from .config import DeviceStepStats, NodeExecStats, RunOptions, describe_outputs
from .remote import RemoteBackend

LOCAL_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class LocalBackend:
    def __init__(self, graph, config):
        self._graph = graph
        self._config = config
        memory.keep_freed_memory()  # a step's arrays reuse the last one's pages, as on a task
        self._state = ExecState()
        self._executor = Executor("CPU", LOCAL_DEVICE, inter_op_threads(config))
        self._step_ids = itertools.count(1)
        self._logged = set()
        self._uses_gpu: dict = {}
        self._gpu_backend = None
        self._placed = 0  # the graph's first nodes, up to here, were checked by _check_devices

    def _lookup(self, name):
        try:
            op = self._graph._nodes_by_name[name]
        except KeyError:
            raise KeyError(name) from None
        return node_def_of(op)

    def _node_stats(self, stat) -> NodeExecStats:
        """A node's stats with TF's "name = Op(inputs)" label (a timeline draws dataflow
        arrows from it) and its outputs' sizes."""
        from dtf.partition import timeline_label

        try:
            node = self._lookup(stat.node_name)
            label, dtype_names = timeline_label(node), [d.name for d in node.output_dtypes]
        except KeyError:  # a node the executor made (a fused group)
            label, dtype_names = f"{stat.node_name} = {stat.op}()", None
        output, memory = describe_outputs(stat.output_shapes, dtype_names)
        return NodeExecStats(node_name=stat.node_name, all_start_micros=stat.all_start_micros,
                             op_end_rel_micros=stat.op_end_rel_micros,
                             all_end_rel_micros=stat.op_end_rel_micros, timeline_label=label,
                             output_shapes=stat.output_shapes, output=output, memory=memory)

    def _pins_gpu(self, fetches, feeds, targets) -> bool:
        key = (fetches, feeds, targets)
        pinned = self._uses_gpu.get(key)
        if pinned is None:
            pinned = self._uses_gpu[key] = any(
                (DeviceSpec.from_string(n.device).device_type or "").upper() == "GPU"
                for n in needed_nodes(self._lookup, fetches, feeds, targets) if n.device)
        return pinned

    def _check_devices(self):
        """As TF places the whole graph before a step: a node pinned to a job, replica or
        task other than this process's own fails every run, soft placement or not (that
        only relaxes the device type)."""
        nodes = self._graph._nodes_in_order
        for op in nodes[self._placed:]:
            if op.device:
                spec = DeviceSpec.from_string(op.device)
                if spec.job not in (None, "localhost") or spec.replica not in (None, 0) \
                        or spec.task not in (None, 0):
                    raise errors.InvalidArgumentError(
                        op.name, op, f"Cannot assign a device for operation {op.name}: {{{{node "
                        f"{op.name}}}}} was explicitly assigned to {op.device} but available devices "
                        f"are [ {', '.join(d.name for d in self.list_devices())} ]. Make sure the "
                        "device specification refers to a valid device.")
            self._placed += 1

    def run(self, fetches, feeds, targets, feed_values, options, run_metadata):
        self._check_devices()
        if self._pins_gpu(fetches, feeds, targets):
            if self._gpu_backend is None:
                self._gpu_backend = _InProcessTaskBackend(self._graph, self._config, self._state)
            return self._gpu_backend.run(fetches, feeds, targets, feed_values, options, run_metadata)
        plan = self._executor.plan(fetches, feeds, targets, self._lookup)
        if self._config.log_device_placement and plan not in self._logged:
            self._logged.add(plan)
            for _, _, _, _, node in plan.constants + plan.steps:
                print(f"{node.name}: ({node.op}): {LOCAL_DEVICE}", file=sys.stderr)
        timeout_ms = int(getattr(options, "timeout_in_ms", 0) or 0) or int(
            getattr(self._config, "operation_timeout_in_ms", 0) or 0)
        deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms > 0 else None
        ctx = StepContext(self._state, next(self._step_ids), deadline=deadline, device=LOCAL_DEVICE)
        trace = (options is not None and run_metadata is not None
                 and getattr(options, "trace_level", 0) >= RunOptions.SOFTWARE_TRACE)
        if not trace:
            return plan.run(ctx, feed_values)
        stats = []
        out = plan.run(ctx, feed_values, stats)
        dev = DeviceStepStats(device=LOCAL_DEVICE, node_stats=[self._node_stats(s) for s in stats])
        run_metadata.step_stats.dev_stats.append(dev)
        return out

    def prepare(self, fetches, targets):
        """``run`` of one signature without feeds, options or metadata, as a function of no
        arguments (see Session.make_callable), or None where the generic path must run
        (a step on a GPU, placement logging). The signature's plan and timeout are looked
        up once; every call still checks nodes added to the graph since."""
        self._check_devices()
        if self._pins_gpu(fetches, (), targets) or self._config.log_device_placement:
            return None
        plan = self._executor.plan(fetches, (), targets, self._lookup)
        timeout_s = int(getattr(self._config, "operation_timeout_in_ms", 0) or 0) / 1000.0
        state, step_ids, check_devices = self._state, self._step_ids, self._check_devices
        nodes = self._graph._nodes_in_order

        def run():
            if self._placed != len(nodes):
                check_devices()
            deadline = time.monotonic() + timeout_s if timeout_s > 0 else None
            return plan.run(StepContext(state, next(step_ids), deadline=deadline,
                                        device=LOCAL_DEVICE), ())

        return run

    def list_devices(self):
        from dtf.runtime.devices import gpu_count

        gpus = [_DeviceAttributes(LOCAL_DEVICE.replace("CPU:0", f"GPU:{i}"), "GPU", 0)
                for i in range(gpu_count())]
        return [_DeviceAttributes(LOCAL_DEVICE, "CPU", 0)] + gpus

    def close(self):
        self._executor.close()
        if self._gpu_backend is not None:
            self._gpu_backend.close()
            self._gpu_backend = None


def inter_op_threads(config) -> int:
    """Threads that may run a step's independent ops (the caller's included), from
    ``ConfigProto.inter_op_parallelism_threads``: negative means the caller's thread only,
    0 one per core this process may use."""
    n = int(getattr(config, "inter_op_parallelism_threads", 0) or 0)
    if n == 0:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(n, 1)


class _InProcessChannel:
    """Calls a task living in this session only (no socket)."""

    def __init__(self, service):
        self.service = service

    def call(self, msg, timeout_s=None):
        return self.service.dispatch(msg)

    def close(self):
        self.service.stop()


class _InProcessTaskBackend(RemoteBackend):
    """A session on the master of an unlistening task /job:localhost/replica:0/task:0 whose
    worker holds the local session's state."""

    def __init__(self, graph, config, state):
        from dtf.runtime.service import TaskService

        self._graph = graph
        self._config = config
        self._channel = _InProcessChannel(TaskService({"localhost": {0: "in-process"}}, "localhost", 0,
                                                      listen=False, state=state))
        self._session = None
        self._sent = 0


class _DeviceAttributes:
    def __init__(self, name, device_type, memory_limit_bytes):
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes
        self.incarnation = 0

    def __repr__(self):
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"
