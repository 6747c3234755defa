"""W5/W6 driver side: one training run = a fresh cluster of 1 ps + N worker processes.

Workers start in order (the chief first, so the others find the model initialized), then
all get "go" together. Global steps/s = the last global step over the window from the
first worker's start to the last worker's end; examples/s counts every batch a worker
computed. A worker still running ``grace_s`` after another has finished (TF1's sync
replicas can leave one blocked on its token queue) is killed and noted.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

from bench.cluster import REPO, Cluster, quiet_env, stop_process, wait_for_output

RESULT = "@@RESULT "
# (mode, workers, warm): W5 is 1 worker, W6 2, W6w the same 2-worker runs in their steady
# state (WARMUP steps per worker before the window; dtf's Numba loops loaded).
CONFIGS = (("async", 1, False), ("async", 2, False), ("sync", 1, False), ("sync", 2, False),
           ("async", 2, True), ("sync", 2, True))
WARMUP = 300


def workload(workers: int, warm: bool) -> str:
    return "W6w" if warm else "W5" if workers == 1 else "W6"


def metric_prefix(mode: str, workers: int, warm: bool = False) -> str:
    return f"train.{mode}_{workers}w" + ("_warm" if warm else "")


def _start_worker(python, worker_argv, index, log_dir):
    log_path = os.path.join(log_dir, f"worker-{index}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([python, "-m", *worker_argv, f"--task_index={index}"],
                                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                cwd=REPO, env=quiet_env(), text=True)
    return proc, log_path


def _result_of(log_path):
    with open(log_path, errors="replace") as f:
        for line in f:
            if line.startswith(RESULT):
                return json.loads(line[len(RESULT):])
    return None


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def run_between_graph(impl, python, worker_argv, ps_tasks, workers, timeout_s=300.0,
                      grace_s=10.0, ready_timeout_s=120.0, ps_env=None):
    """One between-graph run on a fresh cluster: the ps tasks (``ps_env`` added to their
    environment), then ``python -m *worker_argv --cluster_spec=... --task_index=N`` per
    worker (each prints @@READY, waits for "go" on stdin, trains, prints @@RESULT {json}).
    Returns (the workers' results, the ps tasks' RSS in MiB when idle and after training,
    [notes])."""
    cluster = Cluster(impl, {"ps": ps_tasks, "worker": workers}, python=python, env=ps_env)
    log_dir = tempfile.mkdtemp(prefix=f"bench-{worker_argv[0].rsplit('.', 1)[-1]}-{impl}-")
    procs, notes = [], []
    try:
        cluster.start_jobs("ps")
        ps_pids = [p.pid for p in cluster.procs]
        idle = [rss_mib(pid) for pid in ps_pids]
        argv = [*worker_argv, f"--cluster_spec={cluster.flags_spec}"]
        for i in range(workers):
            proc, log_path = _start_worker(python, argv, i, log_dir)
            procs.append((proc, log_path))
            wait_for_output(proc, log_path, "@@READY", ready_timeout_s, f"{impl} worker {i}")
        for proc, _ in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = _collect(procs, timeout_s, grace_s, notes, impl)
        trained = [rss_mib(pid) for pid in ps_pids]
    finally:
        for proc, _ in procs:
            stop_process(proc, grace_s=2.0)
        cluster.stop()
    return results, idle, trained, notes


def between_graph_parser(doc: str, steps_default: int, steps_help: str):
    """The command line of a between-graph bench (bench.word2vec, bench.dist_cnn): the driver's
    options, and the ``--worker`` form it starts each worker with."""
    import argparse

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--impl", choices=("dtf", "tf"), help=argparse.SUPPRESS)
    p.add_argument("--cluster_spec", help=argparse.SUPPRESS)
    p.add_argument("--task_index", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=steps_default, help=steps_help)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--tf-python", default=os.environ.get("DTF_BENCH_TF_PYTHON"))
    p.add_argument("--no-tf", action="store_true")
    return p


def implementations(args, python) -> list:
    """[(impl, its Python)] for each round: dtf, and TensorFlow when asked for."""
    impls = {"dtf": python}
    if not args.no_tf and args.tf_python:
        impls["tf"] = args.tf_python
    return impls


def run_training(impl, python, mode, workers, steps, batch=64, timeout_s=300.0, grace_s=10.0,
                 warm=False):
    """One run; returns ({metric id: value}, [notes]). ``warm``: the steady state (see
    bench.train_worker's --warmup; a dtf ps loads its Numba loops as it starts)."""
    argv = ["bench.train_worker", f"--impl={impl}", f"--mode={mode}", f"--steps={steps}"]
    if warm:
        argv.append(f"--warmup={WARMUP}")
    ps_env = {"DTF_PRELOAD_KERNELS": "1"} if warm and impl == "dtf" else None
    results, _, _, notes = run_between_graph(impl, python, argv, 1, workers, timeout_s, grace_s,
                                             ps_env=ps_env)
    if not results:
        raise RuntimeError(f"no {impl} worker finished {mode} training within {timeout_s:.0f} s")
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    global_steps = max(r["global_step"] for r in results) - min(r.get("start_global_step", 0)
                                                               for r in results)
    examples = sum(r["local_steps"] for r in results) * batch
    prefix = metric_prefix(mode, workers, warm)
    return {f"{prefix}.steps_s": global_steps / window,
            f"{prefix}.examples_s": examples / window}, notes


# The floor's rate does not depend on how long it runs; below this many global steps a
# run lasts a fraction of a second and its figure is mostly noise.
FLOOR_MIN_STEPS = 10_000


def run_floor(python, mode, workers, steps) -> dict:
    """bench.train_floor for the same setup: {metric id ending in @numpy: global steps/s}
    of the step's messages and numpy kernels with no runtime (the W5/W6 rows' numpy
    column), run by ``python`` (dtf's interpreter: it uses dtf's codec)."""
    argv = [python, "-m", "bench.train_floor", f"--mode={mode}", f"--workers={workers}",
            f"--steps={max(steps, FLOOR_MIN_STEPS)}", "--json"]
    out = subprocess.run(argv, cwd=REPO, env=quiet_env(), capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"bench.train_floor exited {out.returncode}: {out.stderr[-800:]}")
    floor = json.loads(out.stdout.strip().splitlines()[-1])
    return {f"{metric_prefix(mode, workers)}.steps_s@numpy": floor["steps_s"]}


def _collect(procs, timeout_s, grace_s, notes, impl):
    """Results of the workers that finish; stops waiting ``grace_s`` after the first one."""
    deadline = time.monotonic() + timeout_s
    first_done = None
    results, crashed = {}, set()
    while len(results) + len(crashed) < len(procs) and time.monotonic() < deadline:
        for i, (proc, log_path) in enumerate(procs):
            if i in results or i in crashed:
                continue
            r = _result_of(log_path)
            if r is not None:
                results[i] = r
                first_done = first_done or time.monotonic()
            elif proc.poll() is not None:
                crashed.add(i)
                notes.append(f"{impl} worker {i} exited with {proc.returncode}: "
                             f"{_tail(log_path)}")
        if first_done and time.monotonic() - first_done > grace_s:
            break
        time.sleep(0.05)
    for i in range(len(procs)):
        if i not in results and i not in crashed:
            notes.append(f"{impl} worker {i} had not finished {grace_s:.0f} s after another "
                         "one did (killed)")
    return list(results.values())


def _tail(log_path, n=400):
    with open(log_path, errors="replace") as f:
        return f.read()[-n:].strip().replace("\n", " | ")
