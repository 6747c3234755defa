"""The in-process backend of ``tf.Session("")``: one CPU device, one executor."""
from __future__ import annotations

import itertools
import sys

from dtf.framework import errors
from dtf.framework.graph_def import node_def_of
from dtf.runtime.executor import ExecState, Executor, StepContext
from .config import DeviceStepStats, NodeExecStats, RunOptions

LOCAL_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class LocalBackend:
    def __init__(self, graph, config):
        self._graph = graph
        self._config = config
        self._state = ExecState()
        self._executor = Executor("CPU", LOCAL_DEVICE)
        self._step_ids = itertools.count(1)
        self._logged = set()

    def _lookup(self, name):
        try:
            op = self._graph._nodes_by_name[name]
        except KeyError:
            raise KeyError(name) from None
        return node_def_of(op)

    def run(self, fetches, feeds, targets, feed_values, options, run_metadata):
        plan = self._executor.plan(fetches, feeds, targets, self._lookup)
        if self._config.log_device_placement and plan not in self._logged:
            self._logged.add(plan)
            for _, _, _, _, node in plan.steps:
                print(f"{node.name}: ({node.op}): {LOCAL_DEVICE}", file=sys.stderr)
        ctx = StepContext(self._state, next(self._step_ids), device=LOCAL_DEVICE)
        trace = (options is not None and run_metadata is not None
                 and getattr(options, "trace_level", 0) >= RunOptions.SOFTWARE_TRACE)
        if not trace:
            return plan.run(ctx, feed_values)
        stats = []
        out = plan.run(ctx, feed_values, stats)
        dev = DeviceStepStats(device=LOCAL_DEVICE, node_stats=[
            NodeExecStats(node_name=s.node_name, all_start_micros=s.all_start_micros,
                          op_start_rel_micros=0, op_end_rel_micros=s.op_end_rel_micros,
                          all_end_rel_micros=s.op_end_rel_micros,
                          timeline_label=f"{s.node_name} = {s.op}()", output_shapes=s.output_shapes)
            for s in stats])
        run_metadata.step_stats.dev_stats.append(dev)
        return out

    def list_devices(self):
        return [_DeviceAttributes(LOCAL_DEVICE, "CPU", 0)]

    def close(self):
        self._executor.clear()


class _DeviceAttributes:
    def __init__(self, name, device_type, memory_limit_bytes):
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes
        self.incarnation = 0

    def __repr__(self):
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"


_ = errors  # errors surface from the executor unchanged
