"""tf.distribute.cluster_resolver: where the cluster and this task come from.

``TFConfigClusterResolver`` reads the ``TF_CONFIG`` environment variable, e.g.
``{"cluster": {"worker": ["w0:2222", "w1:2222"], "ps": ["ps0:2222"]},
"task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}``, each time it is asked,
as TF does, so a change of the variable is seen by an existing resolver.
"""
from __future__ import annotations

import json
import os

from dtf.train.cluster_spec import ClusterSpec

__all__ = ["ClusterResolver", "SimpleClusterResolver", "SlurmClusterResolver",
           "TFConfigClusterResolver"]

_TF_CONFIG_ENV = "TF_CONFIG"


def format_master_url(master, rpc_layer=None):
    return f"{rpc_layer}://{master}" if rpc_layer else master


def _load_tf_config() -> dict:
    raw = os.environ.get(_TF_CONFIG_ENV, "")
    if not raw.strip():
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{_TF_CONFIG_ENV} is not valid JSON: {e.msg} at line {e.lineno} "
                         f"column {e.colno} (char {e.pos})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{_TF_CONFIG_ENV} must be a JSON object, got {type(config).__name__}")
    return config


def _task_info() -> dict:
    task = _load_tf_config().get("task", {})
    if not isinstance(task, dict):
        raise ValueError(f"{_TF_CONFIG_ENV} 'task' must be an object like "
                         f'{{"type": "worker", "index": 0}}, got {task!r}')
    return task


class ClusterResolver:
    """The interface: a cluster spec, a master address and this task's identity."""

    _task_type = None
    _task_id = None
    _rpc_layer = None

    def cluster_spec(self) -> ClusterSpec:
        raise NotImplementedError(f"cluster_spec is not implemented for {self}.")

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        raise NotImplementedError(f"master is not implemented for {self}.")

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        """Accelerators per task by type; dtf runs on CPUs only, so none."""
        return {}

    @property
    def environment(self) -> str:
        return ""

    @property
    def task_type(self):
        return self._task_type

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        return self._task_id

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def rpc_layer(self):
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer


class SimpleClusterResolver(ClusterResolver):
    """A resolver holding the values it is given."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("cluster_spec must be a `tf.train.ClusterSpec`.")
        if not isinstance(master, str):
            raise TypeError("master must be a string.")
        self._cluster_spec = cluster_spec
        self._master = master
        self._task_type = task_type
        self._task_id = task_id
        self._environment = environment
        self._num_accelerators = num_accelerators
        self._rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The given master, or the address of ``task_type``/``task_id`` when both are set."""
        if task_type is not None and task_id is not None:
            master = self._cluster_spec.task_address(task_type, task_id)
        else:
            master = self._master
        return format_master_url(master, rpc_layer or self._rpc_layer)

    @property
    def environment(self) -> str:
        return self._environment

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        return {} if self._num_accelerators is None else self._num_accelerators


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster, this task and the rpc layer from ``TF_CONFIG``; arguments given
    here override it."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @property
    def task_type(self):
        if self._task_type is not None:
            return str(self._task_type)
        task = _task_info()
        return str(task["type"]) if "type" in task else None

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        if self._task_id is not None:
            return int(self._task_id)
        task = _task_info()
        return int(task["index"]) if "index" in task else None

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def rpc_layer(self):
        if self._rpc_layer is not None:
            return self._rpc_layer
        return _load_tf_config().get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer

    @property
    def environment(self):
        return self._environment

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(_load_tf_config().get("cluster", {}))

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """The session target of this task (or of the given one): ``"grpc://host:port"``
        with an rpc layer, ``"host:port"`` without; "" for a cluster of one task."""
        session_master = _load_tf_config().get("session_master")
        if session_master is not None:
            return session_master
        cluster_spec = self.cluster_spec()
        jobs = cluster_spec.jobs
        if not jobs or (len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1):
            return ""
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        if task_type is None or task_id is None:
            raise ValueError(f"Cannot find the master: {_TF_CONFIG_ENV} names no task "
                             f"(task type {task_type!r}, task id {task_id!r}); set "
                             '"task": {"type": ..., "index": ...} or pass task_type and task_id')
        rpc_layer = self.rpc_layer if rpc_layer is None else rpc_layer
        return format_master_url(cluster_spec.task_address(task_type, task_id), rpc_layer)


# Last: the Slurm resolver builds on ClusterResolver above.
from dtf.distribute.slurm_cluster_resolver import SlurmClusterResolver  # noqa: E402
