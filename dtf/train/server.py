"""tf.train.Server: one task of a cluster, hosting a master and a worker service."""
from __future__ import annotations

import socket
import threading

from dtf.framework import errors

__all__ = ["Server"]

_PROTOCOLS = ("grpc", "dtf", "grpc+dtf")


class Server:
    """An in-process server for one task (TF1's ``tf.train.Server``)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True):
        from dtf.train.cluster_spec import ClusterSpec

        if isinstance(server_or_cluster_def, dict) and "cluster" in server_or_cluster_def:
            sd = server_or_cluster_def
            job_name = job_name or sd.get("job_name")
            task_index = task_index if task_index is not None else sd.get("task_index")
            protocol = protocol or sd.get("protocol")
            server_or_cluster_def = sd["cluster"]
        cluster = server_or_cluster_def if isinstance(server_or_cluster_def, ClusterSpec) \
            else ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = cluster.jobs[0]
        if job_name not in cluster.jobs:  # TF's class and words (grpc_server_lib)
            raise errors.InternalError(None, None, f'Job "{job_name}" was not defined in cluster')
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = indices[0]
        try:
            task_index = int(task_index)
        except (TypeError, ValueError):
            pass  # refused just below, by name
        if not isinstance(task_index, int) or task_index not in cluster.task_indices(job_name):
            raise errors.InternalError(None, None, f'Task {task_index} was not defined in job "{job_name}" '
                                       f"(its tasks: {cluster.task_indices(job_name)})")
        protocol = protocol or "grpc"
        if protocol not in _PROTOCOLS:
            raise ValueError(f"Unsupported protocol {protocol!r}; use one of {', '.join(_PROTOCOLS)}")
        self._cluster = cluster
        self._job = job_name
        self._index = int(task_index)
        self._protocol = protocol
        self._config = config
        jobs = {j: {i: cluster.task_address(j, i) for i in cluster.task_indices(j)} for j in cluster.jobs}
        self._address = jobs[job_name][self._index]
        from dtf.kernels.cpu import cores

        cores.share_host(cores.compute_tasks_on_host(jobs, self._address))
        # The runtime (executor, wire, ZeroMQ) loads with the first server, not at `import dtf`.
        from dtf.client.local import inter_op_threads
        from dtf.runtime.service import TaskService

        self._service = TaskService(jobs, job_name, self._index,
                                    inter_op_threads=inter_op_threads(config))
        self._stopped = threading.Event()
        if start:
            self.start()

    def start(self):
        """Starts serving (idempotent)."""
        self._service.start()

    def join(self):
        """Blocks until the server is stopped (forever, for a classic ps task)."""
        from dtf.kernels.cpu import jit_loading

        jit_loading.preload_for_server()
        while not self._stopped.wait(3600):
            pass

    def stop(self):
        """Shuts the server down and frees its port (beyond TF1, which cannot stop)."""
        self._service.stop()
        self._stopped.set()

    @property
    def target(self) -> str:
        return f"grpc://{self._address}"

    @property
    def server_def(self) -> dict:
        return {"cluster": self._cluster.as_cluster_def(), "job_name": self._job,
                "task_index": self._index, "protocol": self._protocol}

    @staticmethod
    def create_local_server(config=None, start=True):
        """A single-task cluster on a free port of localhost."""
        return Server({"localhost": [f"localhost:{free_port()}"]}, job_name="localhost",
                      task_index=0, protocol="grpc", config=config, start=start)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


# Ports this process has handed out. The kernel may give the same ephemeral port to two
# bind(0) calls once the first socket is closed, so a cluster built from several
# free_port() calls could list one address twice; remembering them rules that out.
_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()


def free_port() -> int:
    """A 127.0.0.1 TCP port free now and not returned before by this process."""
    with _handed_out_lock:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise OSError("no free 127.0.0.1 port that this process has not handed out already")
