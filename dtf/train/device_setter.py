"""tf.train.replica_device_setter and the ps placement strategies.

The device function places the ops whose type is in ``ps_ops`` (variables and other
stateful resources) on the ps tasks, chosen by ``ps_strategy`` (round-robin by default), and
every other op on ``worker_device``. Fields already set by inner device scopes win.
"""
from __future__ import annotations

import logging

from dtf.framework.device_spec import DeviceSpec
from dtf.framework.dtypes import as_dtype
from dtf.framework.tensor_shape import as_shape
from dtf.train.cluster_spec import ClusterSpec

__all__ = ["replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn"]

log = logging.getLogger("dtf.train")

# The op types that hold state a replica must share (TF's list, used by tf.estimator).
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
    "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator",
)


def _as_spec(device) -> DeviceSpec:
    return device if isinstance(device, DeviceSpec) else DeviceSpec.from_string(device or "")


class _RoundRobinStrategy:
    """The next ps task index, cycling over ``num_tasks``."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Places each ps op on the ps task with the least load so far (``load_fn(op)`` summed).

    Ties go to the lowest task index, so with equal loads it starts like round-robin.
    """

    def __init__(self, num_tasks, load_fn):
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = [0.0] * num_tasks

    def __call__(self, op):
        task = min(range(self._num_tasks), key=self._ps_loads.__getitem__)
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op):
    """Bytes held by a variable-like op: its "shape" and "dtype" attrs, else its single output.

    Raises ValueError when the op has no such attrs and not exactly one output, or when the
    shape is not fully defined.
    """
    attrs = getattr(op, "attrs", None) or {}
    if "shape" in attrs and "dtype" in attrs:
        # A resource handle's output is a scalar handle; the attrs describe the variable.
        shape, dtype = as_shape(attrs["shape"]), as_dtype(attrs["dtype"])
    else:
        if len(op.outputs) != 1:
            raise ValueError(f"Op {op.name} must have a single output")
        shape, dtype = op.outputs[0].shape, op.outputs[0].dtype
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} of op {op.name} is not fully defined")
    return shape.num_elements() * dtype.size


class _ReplicaDeviceChooser:
    """The device function that ``replica_device_setter`` returns (bound method)."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op) -> str:
        # Without merging, a device set by an inner scope is kept untouched.
        if not self._merge_devices and op.device:
            return op.device
        current = _as_spec(op.device)
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps_device = _as_spec(self._ps_device)
            # The ps task is chosen only when the op's own job (if any) is the ps job:
            # otherwise the task index would be applied to another job.
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._ps_strategy(op))
            return ps_device.make_merged_spec(current).to_string()
        return _as_spec(self._worker_device).make_merged_spec(current).to_string()


def _ps_tasks_in(cluster, ps_device):
    """Number of tasks of the ps job in ``cluster``, or None when it has no such job."""
    cluster_spec = ClusterSpec(cluster).as_dict()
    ps_job = _as_spec(ps_device).job
    if ps_job not in cluster_spec:
        return None
    return len(cluster_spec[ps_job])


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """Returns a device function for ``tf.device`` that places variables on ps tasks.

    ``ps_tasks`` is taken from ``cluster`` when one is given. Returns None when there is
    no ps job or no ps task.
    """
    if cluster is not None:
        ps_tasks = _ps_tasks_in(cluster, ps_device)
        if ps_tasks is None:
            return None
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        log.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                    "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices,
                                    ps_ops, ps_strategy)
    return chooser.device_function
