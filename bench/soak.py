"""Soak: many steps against real task processes, watching memory and file descriptors.

    python -m bench.soak                       # 100,000 runs + 20,000 training steps, each mode
    python -m bench.soak --runs 5000 --steps 1000 --sync-steps 1000 --sessions 2000 --every 1000

Part 1 runs a cross-task graph (two worker task processes; this process is the client):
every ``sess.run`` feeds a value, computes on task 0, sends the result to task 1 and
fetches from there. Part 2 trains a small MLP between-graph style (one ps task holding the
variables, one worker task computing, this process the client); part 3 trains it
synchronously (SyncReplicasOptimizer under MonitoredTrainingSession); part 4 churns
sessions: each opens a session over both worker tasks, runs once and closes it, and the
tasks' registered-graph counts must come back to where they were; part 5 floods a task
with idle connections (TCP and same-host lanes, none sending anything), runs a step during
each flood and closes them, round after round. For every process it
records RSS (VmRSS) and the number of open descriptors (/proc/PID/fd) at start, every
``--every`` steps and at the end, and prints the growth after warm-up.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

from bench.cluster import Cluster

WARMUP_STEPS = 1000  # allocator pools, kernel caches and socket buffers settle first


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Probe:
    """Samples RSS and fd counts of named processes (and, for those named in
    ``graph_counts``, the graphs their task has registered: name -> fn() -> count)."""

    def __init__(self, pids: dict, graph_counts=None):
        self.pids = pids
        self.graph_counts = graph_counts or {}
        self.samples: list = []

    def sample(self, step: int):
        row = {"step": step, "t": time.monotonic()}
        for name, pid in self.pids.items():
            row[name] = {"rss_kb": rss_kb(pid), "fds": fd_count(pid)}
            if name in self.graph_counts:
                row[name]["graphs"] = self.graph_counts[name]()
        self.samples.append(row)
        cells = "  ".join(f"{n}: {row[n]['rss_kb'] / 1024:.1f} MiB {row[n]['fds']} fds"
                          + (f" {row[n]['graphs']} graphs" if "graphs" in row[n] else "") for n in self.pids)
        print(f"  step {step:>7}  {cells}", flush=True)

    def growth(self, warmup=WARMUP_STEPS) -> dict:
        """Per process: start, after ``warmup`` steps, end, and growth since then."""
        warm = next((s for s in self.samples if s["step"] >= warmup), self.samples[0])
        first, last = self.samples[0], self.samples[-1]
        out = {}
        for name in self.pids:
            out[name] = {
                "rss_start_kb": first[name]["rss_kb"], "rss_warm_kb": warm[name]["rss_kb"],
                "rss_end_kb": last[name]["rss_kb"],
                "rss_growth_kb": last[name]["rss_kb"] - warm[name]["rss_kb"],
                "fds_start": first[name]["fds"], "fds_warm": warm[name]["fds"],
                "fds_end": last[name]["fds"], "fds_growth": last[name]["fds"] - warm[name]["fds"]}
            if "graphs" in last[name]:
                out[name].update(graphs_start=first[name]["graphs"], graphs_end=last[name]["graphs"])
        return out


def _loop(probe, n, every, step_fn):
    probe.sample(0)
    start = time.monotonic()
    for i in range(1, n + 1):
        step_fn()
        if i % every == 0 or i == n or i == WARMUP_STEPS:
            probe.sample(i)
    return time.monotonic() - start


def _cross_task_graph(tf):
    """(graph, x, out, feed, expected): x fed, computed on worker 0, reduced on worker 1."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [64], name="x")
        with tf.device("/job:worker/task:0"):
            a = tf.tanh(x) + 1.0
        with tf.device("/job:worker/task:1"):
            out = tf.reduce_sum(a * 2.0)
    feed = np.linspace(-1, 1, 64).astype(np.float32)
    return graph, x, out, feed, float(np.sum((np.tanh(feed) + 1.0) * 2.0))


def soak_cross_task(tf, runs: int, every: int) -> dict:
    cluster = Cluster("dtf", {"worker": 2})
    try:
        cluster.start_jobs("worker")
        graph, x, out, feed, expected = _cross_task_graph(tf)
        pids = {"client": os.getpid(), "worker0": cluster.procs[0].pid, "worker1": cluster.procs[1].pid}
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            probe = Probe(pids)

            def step():
                got = sess.run(out, {x: feed})
                if abs(got - expected) > 1e-3:
                    raise AssertionError(f"cross-task run returned {got}, expected {expected}")

            wall = _loop(probe, runs, every, step)
        return {"runs": runs, "wall_s": round(wall, 1), "runs_per_s": round(runs / wall, 1),
                "growth": probe.growth()}
    finally:
        cluster.stop()


def _dense(tf, inputs, n_in, n_out, name):
    w = tf.Variable(tf.truncated_normal([n_in, n_out], stddev=0.3, seed=1), name=f"{name}/w")
    b = tf.Variable(tf.zeros([n_out]), name=f"{name}/b")
    return tf.matmul(inputs, w) + b


class _SoakModel:
    """The MLP 16-32-4 both training parts run, variables on the ps (replica_device_setter),
    and its fixed batch. ``wrap(optimizer)`` may wrap the GradientDescent optimizer."""

    def __init__(self, tf, spec, wrap=lambda opt: opt):
        rng = np.random.RandomState(0)
        xs = rng.rand(32, 16).astype(np.float32)
        ys = np.eye(4, dtype=np.float32)[rng.randint(0, 4, 32)]
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                      cluster=spec)):
            self.x = tf.placeholder(tf.float32, [None, 16])
            self.y = tf.placeholder(tf.float32, [None, 4])
            h = tf.nn.relu(_dense(tf, self.x, 16, 32, "hidden"))
            logits = _dense(tf, h, 32, 4, "logits")
            self.loss = tf.reduce_mean(
                tf.nn.softmax_cross_entropy_with_logits_v2(labels=self.y, logits=logits))
            self.global_step = tf.train.get_or_create_global_step()
            self.optimizer = wrap(tf.train.GradientDescentOptimizer(0.1))
            self.train_op = self.optimizer.minimize(self.loss, global_step=self.global_step)
        self.feed = {self.x: xs, self.y: ys}


@contextlib.contextmanager
def _ps_and_worker(tf):
    """(cluster, its ClusterSpec, pids of this process and both tasks), stopped after."""
    cluster = Cluster("dtf", {"ps": 1, "worker": 1})
    try:
        cluster.start_jobs("ps", "worker")
        pids = {"client": os.getpid(), "ps": cluster.procs[0].pid, "worker": cluster.procs[1].pid}
        yield cluster, tf.train.ClusterSpec(cluster.jobs), pids
    finally:
        cluster.stop()


def soak_training(tf, steps: int, every: int) -> dict:
    with _ps_and_worker(tf) as (cluster, spec, pids):
        graph = tf.Graph()
        with graph.as_default():
            m = _SoakModel(tf, spec)
            init = tf.global_variables_initializer()
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            sess.run(init)
            first_loss = sess.run(m.loss, m.feed)
            probe = Probe(pids)
            wall = _loop(probe, steps, every, lambda: sess.run(m.train_op, m.feed))
            last_loss, last_step = sess.run([m.loss, m.global_step], m.feed)
        if int(last_step) != steps:
            raise AssertionError(f"global step {last_step} after {steps} steps")
        return {"steps": steps, "wall_s": round(wall, 1), "steps_per_s": round(steps / wall, 1),
                "loss_first": float(first_loss), "loss_last": float(last_loss), "growth": probe.growth()}


def soak_sync_training(tf, steps: int, every: int) -> dict:
    """Part 3: the same model under SyncReplicasOptimizer and MonitoredTrainingSession (this
    process is the chief, with its queue runner): the ps parks the replica's step on the
    token queue and the chief's on the gradient accumulators, every step."""
    with _ps_and_worker(tf) as (cluster, spec, pids):
        graph = tf.Graph()
        with graph.as_default():
            m = _SoakModel(tf, spec, lambda opt: tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=1, total_num_replicas=1))
            hooks = [m.optimizer.make_session_run_hook(True),
                     tf.train.StopAtStepHook(last_step=steps)]
            with tf.train.MonitoredTrainingSession(
                    master=cluster.target("worker", 0), is_chief=True, hooks=hooks,
                    save_checkpoint_secs=None, save_summaries_steps=None,
                    save_summaries_secs=None, log_step_count_steps=0) as sess:
                probe = Probe(pids)
                done = [0]

                def step():
                    if not sess.should_stop():
                        sess.run(m.train_op, m.feed)
                        done[0] += 1

                wall = _loop(probe, steps, every, step)
        if done[0] < steps - 1:
            raise AssertionError(f"sync training stopped after {done[0]} of {steps} steps")
        return {"steps": done[0], "wall_s": round(wall, 1), "steps_per_s": round(done[0] / wall, 1),
                "growth": probe.growth()}


def soak_session_churn(tf, sessions: int, every: int) -> dict:
    """Part 4: ``sessions`` sessions, each opened over both worker tasks, run once and
    closed. Closing deregisters the session's graphs on every task (as TF does), so the
    tasks' graph counts, RSS and descriptors stay flat however many sessions come and go."""
    from dtf.wire import transport

    cluster = Cluster("dtf", {"worker": 2})
    client = transport.Client()
    try:
        cluster.start_jobs("worker")
        graph, x, out, feed, expected = _cross_task_graph(tf)
        pids = {"client": os.getpid(), "worker0": cluster.procs[0].pid, "worker1": cluster.procs[1].pid}
        addresses = {"worker0": cluster.jobs["worker"][0], "worker1": cluster.jobs["worker"][1]}
        probe = Probe(pids, {name: (lambda a=a: client.call(a, {"type": "Status"}, 10)["graphs"])
                             for name, a in addresses.items()})

        def step():
            with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
                got = sess.run(out, {x: feed})
            if abs(got - expected) > 1e-3:
                raise AssertionError(f"run returned {got}, expected {expected}")

        wall = _loop(probe, sessions, every, step)
        time.sleep(1.0)  # deregistrations on the peer are sent, not waited for
        probe.sample(sessions)
        left = {name: probe.samples[-1][name]["graphs"] for name in addresses}
        if any(left.values()):
            raise AssertionError(f"graphs still registered after every session closed: {left}")
        return {"sessions": sessions, "wall_s": round(wall, 1),
                "sessions_per_s": round(sessions / wall, 1), "growth": probe.growth()}
    finally:
        client.close()
        cluster.stop()


def soak_connection_flood(tf, rounds: int, conns: int) -> dict:
    """``rounds`` floods of ``conns`` idle TCP and as many idle lane connections to one task
    (a step must answer during each and after it); samples once a round, after the close."""
    import resource
    import socket

    from dtf.wire import transport

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    need = 2 * conns + 256
    if hard != resource.RLIM_INFINITY and hard < need:
        raise SystemExit(f"--flood-conns {conns} needs {need} open files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))
    cluster = Cluster("dtf", {"worker": 1})
    try:
        cluster.start_jobs("worker")
        port = int(cluster.jobs["worker"][0].rsplit(":", 1)[1])
        lane = transport.ask_lane(port)
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [])
            y = x * 2.0
        worker_pid = cluster.procs[0].pid
        probe = Probe({"client": os.getpid(), "worker0": worker_pid})
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            sess.run(y, {x: 0.0})  # what a first run loads is not the flood's
            probe.sample(0)
            settled = fd_count(worker_pid)
            start = time.monotonic()
            for i in range(1, rounds + 1):
                idle = []
                for _ in range(conns):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        s.connect(("127.0.0.1", port))
                    idle.append(s)
                for _ in range(conns if lane else 0):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect("\0" + lane[0])
                    idle.append(s)
                for value in (float(i), -float(i)):  # during the flood, then after it
                    got = sess.run(y, {x: value})
                    if got != 2 * value:
                        raise AssertionError(f"flooded task returned {got}, expected {2 * value}")
                    for s in idle:
                        s.close()
                    idle.clear()
                # The task closes its ends as it notices, and accepts what is still queued.
                deadline = time.monotonic() + 10
                while fd_count(worker_pid) > settled + 8 and time.monotonic() < deadline:
                    time.sleep(0.05)
                probe.sample(i)
            wall = time.monotonic() - start
        return {"rounds": rounds, "connections_per_round": conns * (2 if lane else 1),
                "wall_s": round(wall, 1), "growth": probe.growth(warmup=1)}  # the first flood warms
    finally:
        cluster.stop()


def _print_growth(title, result):
    print(f"\n{title}: {json.dumps({k: v for k, v in result.items() if k != 'growth'})}")
    for name, g in result["growth"].items():
        print(f"  {name:8} RSS {g['rss_start_kb'] / 1024:7.1f} -> {g['rss_warm_kb'] / 1024:7.1f} (warm) -> "
              f"{g['rss_end_kb'] / 1024:7.1f} MiB (growth {g['rss_growth_kb'] / 1024:+.1f} MiB); "
              f"fds {g['fds_start']} -> {g['fds_warm']} -> {g['fds_end']} ({g['fds_growth']:+d})"
              + (f"; graphs {g['graphs_start']} -> {g['graphs_end']}" if "graphs_end" in g else ""))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=100_000, help="cross-task sess.run calls (0: skip)")
    p.add_argument("--steps", type=int, default=20_000, help="training steps (0: skip)")
    p.add_argument("--sync-steps", type=int, default=20_000,
                   help="synchronous training steps (0: skip)")
    p.add_argument("--sessions", type=int, default=5_000,
                   help="sessions opened, run once and closed (0: skip)")
    p.add_argument("--every", type=int, default=10_000, help="sample every N steps")
    p.add_argument("--flood-rounds", type=int, default=50,
                   help="rounds of idle connections to one task (0: skip)")
    p.add_argument("--flood-conns", type=int, default=2000,
                   help="idle TCP connections per round, and as many lanes")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args(argv)
    import dtf as tf

    results = {}
    if args.runs:
        print(f"cross-task graph: {args.runs} runs", flush=True)
        results["cross_task"] = soak_cross_task(tf, args.runs, args.every)
        _print_growth("cross-task graph", results["cross_task"])
    if args.steps:
        print(f"\ntraining (1 ps + 1 worker, MLP 16-32-4): {args.steps} steps", flush=True)
        results["training"] = soak_training(tf, args.steps, max(1, args.every // 5))
        _print_growth("training", results["training"])
    if args.sync_steps:
        print(f"\nsync training (SyncReplicasOptimizer, 1 ps + 1 worker): {args.sync_steps} steps",
              flush=True)
        results["sync_training"] = soak_sync_training(tf, args.sync_steps, max(1, args.every // 5))
        _print_growth("sync training", results["sync_training"])
    if args.sessions:
        print(f"\nsession churn (2 worker tasks): {args.sessions} sessions", flush=True)
        results["session_churn"] = soak_session_churn(tf, args.sessions, max(1, args.every // 10))
        _print_growth("session churn", results["session_churn"])
    if args.flood_rounds:
        print(f"\nconnection flood: {args.flood_rounds} rounds of {args.flood_conns} idle TCP "
              "connections and as many lanes", flush=True)
        results["connection_flood"] = soak_connection_flood(tf, args.flood_rounds, args.flood_conns)
        _print_growth("connection flood", results["connection_flood"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
