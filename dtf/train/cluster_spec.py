"""tf.train.ClusterSpec: the jobs of a cluster and the network address of each task.

An immutable value object. It accepts what TF1 accepts (job -> list of addresses, job ->
{index: address}, another ClusterSpec, a ClusterDef) and, as the ClusterDef here is plain
data, ``{"job": [{"name": ..., "tasks": {index: address}}]}``.
"""
from __future__ import annotations

__all__ = ["ClusterSpec"]

_MAX_PORT = 65535


def parse_address(address: str) -> tuple:
    """Splits ``"host:port"`` into ``(host, port)``; an IPv6 host keeps its brackets."""
    if not isinstance(address, str):
        raise TypeError(f"Task address {address!r} must be bytes or unicode")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"Invalid address '{address}': expected 'host:port'")
    if int(port) > _MAX_PORT:
        raise ValueError(f"Invalid address '{address}': port {port} is out of range 0..{_MAX_PORT}")
    return host, int(port)


def _as_str(value, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what} {value!r} must be bytes or unicode")
    return value


def _job_tasks_from(job_name, tasks) -> dict:
    """One job's tasks as {index: address}, from a list (dense) or a dict (sparse)."""
    if isinstance(tasks, (list, tuple)):
        items = enumerate(tasks)
    elif isinstance(tasks, dict):
        items = tasks.items()
    else:
        raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary "
                        "from integers to strings.")
    out = {}
    for index, address in items:
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            raise TypeError(f"Task index {index!r} of job {job_name!r} must be an integer")
        if int(index) < 0:
            raise ValueError(f"Task index {index!r} of job {job_name!r} must be non-negative")
        out[int(index)] = _as_str(address, "Task address")
    return out


def _is_cluster_def(cluster: dict) -> bool:
    jobs = cluster.get("job")
    return (len(cluster) == 1 and isinstance(jobs, (list, tuple))
            and all(isinstance(j, dict) and "name" in j for j in jobs))


class ClusterSpec:
    """Represents a cluster as a set of "tasks", organized into "jobs"."""

    __slots__ = ("_cluster_spec",)

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            spec = {job: dict(tasks) for job, tasks in cluster._cluster_spec.items()}
        elif isinstance(cluster, dict) and _is_cluster_def(cluster):
            spec = {_as_str(j["name"], "Job name"): _job_tasks_from(j["name"], j.get("tasks", {}))
                    for j in cluster["job"]}
        elif isinstance(cluster, dict):
            spec = {_as_str(job, "Job name"): _job_tasks_from(job, tasks)
                    for job, tasks in cluster.items()}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to "
                            "lists of network addresses, or a `ClusterDef` protocol buffer")
        object.__setattr__(self, "_cluster_spec", spec)

    def __setattr__(self, name, value):
        raise AttributeError("ClusterSpec is immutable")

    @classmethod
    def from_flags_string(cls, flags: str) -> "ClusterSpec":
        """Parses the classic server flag ``'worker|w0:2222;w1:2222,ps|ps0:2222'``."""
        cluster = {}
        for job_part in filter(None, (p.strip() for p in flags.split(","))):
            job, sep, addresses = job_part.partition("|")
            if not sep or not job:
                raise ValueError(f"Invalid job specification '{job_part}' in '{flags}': "
                                 "expected 'job|host:port;host:port'")
            if job in cluster:
                raise ValueError(f"Job '{job}' appears twice in '{flags}'")
            tasks = [a.strip() for a in addresses.split(";") if a.strip()]
            for address in tasks:
                parse_address(address)
            cluster[job] = tasks
        return cls(cluster)

    # -- queries ----------------------------------------------------------------
    @property
    def jobs(self) -> list:
        return sorted(self._cluster_spec)

    def _job(self, job_name) -> dict:
        try:
            return self._cluster_spec[job_name]
        except (KeyError, TypeError):
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name) -> int:
        return len(self._job(job_name))

    def task_indices(self, job_name) -> list:
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index) -> str:
        job = self._job(job_name)
        try:
            return job[task_index]
        except (KeyError, TypeError):
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name) -> list:
        """Addresses by task index, with None where a sparse job has no task."""
        job = self._job(job_name)
        ret = [None] * (max(job) + 1 if job else 0)
        for index, address in job.items():
            ret[index] = address
        return ret

    def as_dict(self) -> dict:
        """Dense jobs as lists of addresses, sparse ones as {index: address}."""
        ret = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if indices and indices[-1] + 1 == len(indices):
                ret[job] = self.job_tasks(job)
            else:
                ret[job] = {i: self._cluster_spec[job][i] for i in indices}
        return ret

    def as_cluster_def(self) -> dict:
        return {"job": [{"name": job, "tasks": dict(sorted(self._cluster_spec[job].items()))}
                        for job in self.jobs]}

    # -- value semantics ----------------------------------------------------------
    def __bool__(self):
        return bool(self._cluster_spec)

    def __eq__(self, other):
        # TF compares the {job: {index: address}} mapping, so a plain dict of that form
        # compares equal too.
        if isinstance(other, ClusterSpec):
            other = other._cluster_spec
        return self._cluster_spec == other

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(tuple((job, tuple(sorted(tasks.items())))
                          for job, tasks in sorted(self._cluster_spec.items())))

    def __repr__(self):
        items = ", ".join(f"{job!r}: {tasks!r}" for job, tasks in self.as_dict().items())
        return "ClusterSpec({" + items + "})"
