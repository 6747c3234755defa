"""tf.distribute.cluster_resolver.SlurmClusterResolver: the cluster of a program that
``srun`` started, from the job step's environment.

Each task of the step runs the same script; the resolver reads ``SLURM_PROCID`` (this
task's rank), ``SLURM_STEP_NODELIST`` and ``SLURM_STEP_TASKS_PER_NODE`` (where the step's
tasks are) and ``SLURM_STEP_NUM_TASKS``, lays the tasks out as TF does (hosts sorted, ports
``port_base + k`` on each host, jobs sorted by name taking consecutive ranks) and so finds
its own job and index. GPUs are dealt to the tasks of a node in turn and, with
``auto_set_gpu``, ``CUDA_VISIBLE_DEVICES`` is set to this task's share.

Where TF would crash on a machine without GPUs (no ``nvidia-smi``: FileNotFoundError;
``gpus_per_task == 0``: a zero range step), tasks get no GPUs and the cluster is still
resolved: dtf runs on CPUs.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from dtf.distribute.cluster_resolver import ClusterResolver, format_master_url
from dtf.distribute.slurm_hostlist import expand_hostlist, expand_tasks_per_node
from dtf.train.cluster_spec import ClusterSpec

__all__ = ["SlurmClusterResolver", "expand_hostlist", "expand_tasks_per_node", "get_num_gpus"]


def _get_slurm_var(name: str) -> str:
    name = "SLURM_" + name
    try:
        return os.environ[name]
    except KeyError:
        raise RuntimeError(f"{name} not found in environment. Not running inside a SLURM step?") from None


def get_num_gpus() -> int:
    """The GPUs of this node: CUDA_VISIBLE_DEVICES when set, else ``nvidia-smi --list-gpus``;
    0 where there is no nvidia-smi."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len(visible.split(","))
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        output = subprocess.check_output(["nvidia-smi", "--list-gpus"], encoding="utf-8", timeout=30)
    except subprocess.CalledProcessError as e:
        raise RuntimeError("Could not get number of GPUs from nvidia-smi. "
                           f"Maybe it is missing?\nOutput: {e.output}") from None
    return sum(line.startswith("GPU ") for line in output.strip().split("\n"))


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return value


class SlurmClusterResolver(ClusterResolver):
    """ClusterResolver for a job step started by Slurm's ``srun``.

    Args (as TF's):
      jobs: {job name: number of tasks}; default: one 'worker' per task of the step.
      port_base: the port of the first task on each node; the k-th task there uses
        ``port_base + k``.
      gpus_per_node: GPUs on each node; default: counted (CUDA_VISIBLE_DEVICES or nvidia-smi).
      gpus_per_task: GPUs for each task; default: gpus_per_node // most tasks on a node.
      tasks_per_node: an int (the same on every node of SLURM_STEP_NODELIST) or
        {hostname: tasks}; default: from SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE.
      auto_set_gpu: set CUDA_VISIBLE_DEVICES to this task's GPUs in cluster_spec().
      rpc_layer: the protocol of master() addresses ('grpc').
    """

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
                 tasks_per_node=None, auto_set_gpu=True, rpc_layer="grpc"):
        self._rank = int(_get_slurm_var("PROCID"))
        if jobs is None:
            jobs = {"worker": int(_get_slurm_var("STEP_NUM_TASKS"))}
        if not isinstance(jobs, dict) or not jobs:
            raise ValueError(f"jobs must be a dict of job name to task count, e.g. "
                             f"{{'ps': 1, 'worker': 2}}, got {jobs!r}")
        self._jobs = {str(job): _count(n, f"jobs[{job!r}]") for job, n in jobs.items()}
        self._port_base = _count(port_base, "port_base")

        if tasks_per_node is None:
            self._task_configuration = self._resolve_task_configuration()
        elif isinstance(tasks_per_node, dict):
            self._task_configuration = {str(h): _count(n, f"tasks_per_node[{h!r}]")
                                        for h, n in tasks_per_node.items()}
        else:
            count = _count(tasks_per_node, "tasks_per_node")
            self._task_configuration = {host: count for host in self._resolve_hostlist()}
        if not self._task_configuration:
            raise RuntimeError("The step has no nodes (tasks_per_node is empty).")

        max_tasks_per_node = max(self._task_configuration.values())
        num_tasks = sum(self._task_configuration.values())
        if gpus_per_node is None:
            gpus_per_node = get_num_gpus()
        gpus_per_node = _count(gpus_per_node, "gpus_per_node")
        if gpus_per_task is None:
            gpus_per_task = gpus_per_node // max_tasks_per_node if max_tasks_per_node else 0
        self._gpus_per_node = gpus_per_node
        self._gpus_per_task = _count(gpus_per_task, "gpus_per_task")

        self._auto_set_gpu = auto_set_gpu
        self.task_type = None
        self.task_id = None
        self.rpc_layer = rpc_layer
        self._gpu_allocation = []
        self._cluster_allocation = {}

        if max_tasks_per_node * self._gpus_per_task > self._gpus_per_node:
            raise RuntimeError("Requested more GPUs per node than available.")
        if sum(self._jobs.values()) != num_tasks:
            raise RuntimeError(f"Requested {sum(self._jobs.values())} tasks but only "
                               f"{num_tasks} were assigned.")

    def _resolve_hostlist(self) -> list:
        return expand_hostlist(_get_slurm_var("STEP_NODELIST"))

    def _resolve_task_configuration(self) -> dict:
        hostlist = self._resolve_hostlist()
        tasks_per_node = expand_tasks_per_node(_get_slurm_var("STEP_TASKS_PER_NODE"))
        return dict(zip(hostlist, tasks_per_node))

    def _gpu_slots(self, num_tasks: int) -> list:
        """The GPU ids of each task on one node, as comma-joined strings ('' for none)."""
        if self._gpus_per_task == 0:  # CPU tasks (TF divides by zero here)
            return [""] * num_tasks
        starts = range(0, self._gpus_per_node, self._gpus_per_task)
        return [",".join(str(g) for g in range(start, start + self._gpus_per_task))
                for _, start in zip(range(num_tasks), starts)]

    def cluster_spec(self) -> ClusterSpec:
        """The cluster, resolved anew on each call; sets task_type and task_id (and
        CUDA_VISIBLE_DEVICES with auto_set_gpu)."""
        task_list = []
        self._gpu_allocation = []
        self._cluster_allocation = {}
        for host, num_tasks in sorted(self._task_configuration.items()):
            for port_offset, gpus in enumerate(self._gpu_slots(num_tasks)):
                task_list.append(f"{host}:{self._port_base + port_offset}")
                self._gpu_allocation.append(gpus)

        start = 0
        for task_type, num_tasks in sorted(self._jobs.items()):
            end = start + num_tasks
            self._cluster_allocation[task_type] = task_list[start:end]
            if start <= self._rank < end:
                self.task_type = task_type
                self.task_id = self._rank - start
            start = end

        if self._auto_set_gpu:
            if self._rank >= len(self._gpu_allocation):
                raise RuntimeError(f"SLURM_PROCID {self._rank} is outside the step's "
                                   f"{len(self._gpu_allocation)} tasks.")
            os.environ["CUDA_VISIBLE_DEVICES"] = self._gpu_allocation[self._rank]
        return ClusterSpec(self._cluster_allocation)

    def get_task_info(self):
        """(task_type, task_id) of this process; (None, None) until cluster_spec() ran."""
        return self.task_type, self.task_id

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        """'grpc://host:port' of this task (or the named one); '' before cluster_spec()
        when no task is named."""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is not None and task_id is not None:
            return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                     rpc_layer or self.rpc_layer)
        return ""

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        del task_type, task_id, config_proto  # as TF: the same for every task
        return {"GPU": self._gpus_per_task}
