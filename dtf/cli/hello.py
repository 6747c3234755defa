"""``dtf hello``: the smoke test. Uses the cluster of cluster.toml when it is up, otherwise a
temporary two-task cluster in this process (two tf.train.Server on free ports)."""
from __future__ import annotations

import time
from pathlib import Path

from rich.markup import escape

from dtf.cli.console import ConfigOption, console, fail, load_config

GREETING = "Hello, distributed TensorFlow!"
_TIMEOUT_MS = 20000  # a task that stops answering fails hello instead of hanging it


def hello(config: ConfigOption = None):
    """Smoke test: a hello and the classic 238 computed across two tasks."""
    start = time.perf_counter()
    task_a, task_b, servers, where = _cluster(config)
    import dtf as tf

    try:
        _greet(task_a, task_b)
        _compute_238(task_a, task_b)
    except tf.errors.OpError as e:
        fail(f"hello failed: {escape(e.message)}")
    finally:
        for s in servers:
            s.stop()
    console.print(f"[dim]{where}; {(time.perf_counter() - start) * 1000:.0f} ms in all[/]")


def _cluster(config_option):
    """((job, index, address) x 2, servers to stop, description)."""
    from dtf.cli import config as config_mod

    path = config_mod.config_path(config_option)
    if config_option or path.exists():
        from dtf.cli import keys, probe

        cfg = load_config(config_option)
        keys.prepare_client(cfg)
        tasks = cfg.tasks()

        if len(probe.up_tasks(tasks, 1.0)) == len(tasks):
            a, b = tasks[0], tasks[1 % len(tasks)]
            return (a.job, a.index, a.address), (b.job, b.index, b.address), [], \
                f"cluster {cfg.path}"
        console.print(f"[dim]cluster {_short(cfg.path)} is not up; using a temporary local one[/]")
    return _local_cluster()


def _local_cluster():
    from dtf.train.server import Server, free_port

    t0 = time.perf_counter()
    addresses = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    cluster = {"local": addresses}
    servers = [Server(cluster, job_name="local", task_index=i) for i in range(2)]
    ms = (time.perf_counter() - t0) * 1000
    return ("local", 0, addresses[0]), ("local", 1, addresses[1]), servers, \
        f"temporary in-process cluster {', '.join(addresses)} (started in {ms:.0f} ms)"


def _short(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _session(tf, task):
    return tf.Session(f"grpc://{task[2]}", config=tf.ConfigProto(operation_timeout_in_ms=_TIMEOUT_MS))


def _device(task) -> str:
    return f"/job:{task[0]}/task:{task[1]}"


def _greet(task_a, task_b):
    import dtf as tf

    with tf.Graph().as_default():
        with tf.device(_device(task_b)):
            greeting = tf.constant(GREETING)
        with _session(tf, task_a) as sess:
            t0 = time.perf_counter()
            value = sess.run(greeting)
            ms = (time.perf_counter() - t0) * 1000
    text = value.decode() if isinstance(value, bytes) else str(value)
    console.print(f"[bold]{text}[/]  [dim](from {_device(task_b)} via the master of "
                  f"{_device(task_a)}, {ms:.1f} ms)[/]")


def _compute_238(task_a, task_b):
    import dtf as tf

    with tf.Graph().as_default():
        x = tf.constant(2)
        with tf.device(_device(task_b)):
            y2 = x - 66
        with tf.device(_device(task_a)):
            y1 = x + 300
            y = y1 + y2
        with _session(tf, task_a) as sess:
            t0 = time.perf_counter()
            results = sess.run([y1, y2, y])
            ms = (time.perf_counter() - t0) * 1000
    y1_v, y2_v, y_v = (int(v) for v in results)
    console.print(f"y1 = x + 300 = {y1_v} on {_device(task_a)}; y2 = x - 66 = {y2_v} on "
                  f"{_device(task_b)}; y = y1 + y2 = [bold]{y_v}[/]  [dim]({ms:.1f} ms)[/]")
