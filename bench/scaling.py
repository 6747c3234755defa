"""Scaling with the number of tasks, dtf beside TensorFlow:

    python -m bench.scaling                          # the full grid (see docs/benchmarks.md)
    python -m bench.scaling --fanout 2,4 --train 1x1 --steps 100 --train-steps 200   # a smoke run

Two workloads, each on a fresh cluster of task processes per configuration:

- **fan-out/fan-in** (``--fanout N,...``): one step touches N worker tasks: a small vector
  (``--width`` float32) fed by the client goes to every task, each computes on it, and task
  0 sums the N results (bench/scaling_client.py). Per N: step latency p50/p90, steps/s,
  and the CPU per step of each task (mean and max over the N tasks, from /proc) and of the
  client, so the cost growth with N shows; and how much the tasks' resident memory grew
  over the timed steps (with many ``--steps``, a soak).
- **MLP training** (``--train WxP,...``: W workers, P ps tasks; ``--mode async`` or
  ``sync``): the W5/W6 MLP
  (bench/train_worker.py) with its variables spread over the ps tasks by
  replica_device_setter. Per configuration: global steps/s, and CPU per global step of the
  ps tasks and of the workers.

Where the tasks run is printed with the figures: ``--rig`` puts every task and the client on
a host of its own of the multi-host rig (tests/cluster/rig.py: network namespaces on one
machine, TCP between them, root only); otherwise ``loopback`` (every task on 127.0.0.1;
dtf's same-host lanes and shared memory carry its tensors unless ``--tcp``, which sets
DTF_IPC=0 so dtf, like TF, goes over TCP). TensorFlow runs in its own processes
(``--tf-python``, default DTF_BENCH_TF_PYTHON or .tfvenv/bin/python). Results go to
``--json`` (default bench/results/scaling-latest.json).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.cluster import REPO, SERVER_COMMANDS, free_port, quiet_env, stop_process, wait_for_output
from bench.run import DEFAULT_TF_PYTHON
from bench.training import _collect

CLOCK_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_S  # utime, stime


def rss_mib(pid: int) -> float:
    """Resident memory of a process now, in MiB (VmRSS from /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


class Loopback:
    """Every process on this machine's 127.0.0.1."""

    def __init__(self, tcp: bool):
        self.label = ("loopback, dtf over TCP only (DTF_IPC=0)" if tcp
                      else "loopback (dtf: same-host lanes and /dev/shm)")

    def address(self, slot: int) -> str:
        return f"127.0.0.1:{free_port()}"

    def popen(self, slot: int, argv, **kwargs):
        return subprocess.Popen(argv, **kwargs)

    def close(self):
        pass


class OnRig:
    """Process ``slot`` on host ``slot`` of a multi-host rig (tests/cluster/rig.py: one
    network namespace per host, its own /dev/shm; root only). Every task listens on port
    2222 of its own host's address."""

    label = "multi-host rig (one network namespace per task, TCP between them)"

    def __init__(self, n_hosts: int):
        from tests.cluster import rig

        rig.clean_stale()
        self.rig = rig.Rig(n_hosts)  # rig.RigUnavailable names why not

    def address(self, slot: int) -> str:
        return f"{self.rig.hosts[slot].address}:2222"

    def popen(self, slot: int, argv, **kwargs):
        return self.rig.hosts[slot].popen(argv, **kwargs)

    def close(self):
        self.rig.close()


class Tasks:
    """The task processes of one run, one per slot of the placement, stopped by PID."""

    def __init__(self, impl: str, python: str, jobs: dict, place, env: dict):
        self.impl, self.python, self.place, self.env = impl, python, place, env
        self.slots, slot = {}, 0
        self.jobs = {}
        for job, n in jobs.items():
            self.jobs[job] = []
            for i in range(n):
                self.slots[(job, i)] = slot
                self.jobs[job].append(place.address(slot))
                slot += 1
        self.next_slot = slot  # the first slot left for clients
        self.procs: list = []
        self.log_dir = tempfile.mkdtemp(prefix=f"bench-scaling-{impl}-")

    @property
    def flags_spec(self) -> str:
        return ",".join(f"{j}|{';'.join(a)}" for j, a in self.jobs.items())

    def popen(self, slot: int, argv, log_path: str, stdin=subprocess.DEVNULL):
        with open(log_path, "w") as log:
            return self.place.popen(slot, argv, stdout=log, stderr=subprocess.STDOUT, stdin=stdin,
                                    cwd=REPO, env=dict(quiet_env(), **self.env), text=True)

    def start(self):
        for (job, i), slot in self.slots.items():
            log_path = os.path.join(self.log_dir, f"{job}-{i}.log")
            proc = self.popen(slot, [self.python, *SERVER_COMMANDS[self.impl],
                                     f"--cluster_spec={self.flags_spec}", f"--job_name={job}",
                                     f"--task_index={i}"], log_path)
            self.procs.append(proc)
            wait_for_output(proc, log_path, "listening on", 60.0, f"{self.impl} task {job}:{i}")
        return self

    def stop(self):
        for p in self.procs:
            stop_process(p)
        self.procs.clear()


def _result(log_path: str) -> dict | None:
    with open(log_path, errors="replace") as f:
        for line in f:
            if line.startswith("@@RESULT "):
                return json.loads(line[len("@@RESULT "):])
    return None


def _rss_by_tenth(samples: list, before: list) -> dict:
    """Memory at the end of each tenth of the timed run: the largest task and all tasks
    together (MiB). A leak keeps climbing tenth after tenth; an allocator settling climbs
    early and then stays flat, which one before/after figure cannot tell apart."""
    if not samples:
        return {"largest": [], "total": []}
    end = samples[-1][0]
    marks = []
    for tenth in range(1, 11):
        rss = next((r for t, r in samples if t >= end * tenth / 10), samples[-1][1])
        marks.append(rss)
    return {"before_largest": max(before), "before_total": sum(before),
            "largest": [round(max(r), 2) for r in marks],
            "total": [round(sum(r), 2) for r in marks]}


def fanout(impl: str, python: str, n: int, steps: int, width: int, env: dict, place,
           timeout_s=None) -> dict:
    """One fan-out/fan-in run over ``n`` fresh worker tasks (the client in the next slot)."""
    # A soak of many steps runs for a long time: allow 50 ms a step on top of the fixed limit.
    timeout_s = timeout_s or 300.0 + 0.05 * steps
    cluster = Tasks(impl, python, {"worker": n}, place, env)
    log_path = os.path.join(cluster.log_dir, "client.log")
    client = None
    try:
        cluster.start()
        client = cluster.popen(cluster.next_slot, [
            python, "-m", "bench.scaling_client", f"--impl={impl}",
            f"--cluster_spec={cluster.flags_spec}", f"--steps={steps}", f"--width={width}"],
            log_path, stdin=subprocess.PIPE)
        wait_for_output(client, log_path, "@@READY", timeout_s, f"{impl} fan-out client (N={n})")
        before = [cpu_s(p.pid) for p in cluster.procs]
        rss_before = [rss_mib(p.pid) for p in cluster.procs]
        client.stdin.write("go\n")
        client.stdin.flush()
        started = time.monotonic()
        deadline = started + timeout_s
        result = None
        rss_samples = []  # (seconds since go, the largest task RSS): growth after warm-up
        while result is None and time.monotonic() < deadline and client.poll() is None:
            time.sleep(0.05)
            result = _result(log_path)
            if len(rss_samples) < 100_000:
                rss_samples.append((time.monotonic() - started,
                                    [rss_mib(p.pid) for p in cluster.procs]))
        result = result or _result(log_path)
        if result is None:
            with open(log_path, errors="replace") as f:
                raise RuntimeError(f"{impl} fan-out client (N={n}) gave no result:\n{f.read()[-2000:]}")
        per_task = [1e3 * (cpu_s(p.pid) - b) / steps for p, b in zip(cluster.procs, before)]
        # Memory over the timed steps (after the warm-up): with many --steps this is the soak
        # that shows whether a task's memory grows with the number of steps.
        rss_after = [rss_mib(p.pid) for p in cluster.procs]
        # The second half of the run alone: what an allocator's warm-up leaves out.
        half = next((rss for t, rss in rss_samples if t >= rss_samples[-1][0] / 2), rss_before) \
            if rss_samples else rss_before
        tenths = _rss_by_tenth(rss_samples, rss_before)
    finally:
        stop_process(client, grace_s=2.0)
        cluster.stop()
    return dict(result, task_rss_mib_max=max(rss_after),
                task_rss_growth_mib_max=max(a - b for a, b in zip(rss_after, rss_before)),
                task_rss_growth_second_half_mib_max=max(a - b for a, b in zip(rss_after, half)),
                task_rss_mib_by_tenth=tenths,
                task_cpu_ms_per_step_mean=statistics.fmean(per_task),
                task_cpu_ms_per_step_max=max(per_task),
                all_tasks_cpu_ms_per_step=sum(per_task))


def train(impl: str, python: str, workers: int, ps: int, steps: int, env: dict, place,
          mode="async", timeout_s=300.0, grace_s=10.0) -> dict:
    """One MLP run (``mode``: async, or sync through SyncReplicasOptimizer) on ``ps`` ps
    tasks and ``workers`` worker processes (each worker process hosts its own task, as
    bench/train_worker.py does)."""
    cluster = Tasks(impl, python, {"ps": ps, "worker": workers}, place, env)
    procs, notes = [], []
    try:
        for i in range(ps):
            log_path = os.path.join(cluster.log_dir, f"ps-{i}.log")
            proc = cluster.popen(cluster.slots[("ps", i)], [
                python, *SERVER_COMMANDS[impl], f"--cluster_spec={cluster.flags_spec}",
                "--job_name=ps", f"--task_index={i}"], log_path)
            cluster.procs.append(proc)
            wait_for_output(proc, log_path, "listening on", 60.0, f"{impl} task ps:{i}")
        for i in range(workers):
            log_path = os.path.join(cluster.log_dir, f"worker-{i}.log")
            proc = cluster.popen(cluster.slots[("worker", i)], [
                python, "-m", "bench.train_worker", f"--impl={impl}",
                f"--cluster_spec={cluster.flags_spec}", f"--task_index={i}", f"--mode={mode}",
                f"--steps={steps}"], log_path, stdin=subprocess.PIPE)
            procs.append((proc, log_path))
            wait_for_output(proc, log_path, "@@READY", 120.0, f"{impl} worker {i}")
        ps_before = [cpu_s(p.pid) for p in cluster.procs]
        for proc, _ in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = _collect(procs, timeout_s, grace_s, notes, impl)
        ps_cpu = [cpu_s(p.pid) - b for p, b in zip(cluster.procs, ps_before)]
    finally:
        for proc, _ in procs:
            stop_process(proc, grace_s=2.0)
        cluster.stop()
    if not results:
        raise RuntimeError(f"no {impl} worker finished within {timeout_s:.0f} s: {notes}")
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    global_steps = max(r["global_step"] for r in results)
    return {"steps_s": global_steps / window,
            "ps_cpu_ms_per_step": 1e3 * sum(ps_cpu) / global_steps,
            "worker_cpu_ms_per_step": 1e3 * sum(r["cpu_s"] for r in results) / global_steps,
            "notes": notes}


def _ints(text: str) -> list:
    return [int(v) for v in text.split(",") if v.strip()]


def _train_configs(text: str) -> list:
    """'1x1,2x1,4x2' -> [(1, 1), (2, 1), (4, 2)]: workers x ps."""
    out = []
    for item in text.split(","):
        w, _, p = item.strip().partition("x")
        out.append((int(w), int(p or 1)))
    return out


def _table(rows: list, columns: list) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fanout", default="2,4,8,16,32", help="task counts N of the fan-out step ('' skips it)")
    p.add_argument("--train", default="1x1,2x1,4x1,1x2,2x2,4x2",
                   help="MLP async configurations WORKERSxPS ('' skips them)")
    p.add_argument("--mode", choices=("async", "sync"), default="async",
                   help="training: async, or sync (SyncReplicasOptimizer, every worker's gradient per step)")
    p.add_argument("--steps", type=int, default=300,
                   help="timed fan-out steps per N (many steps make it a memory soak)")
    p.add_argument("--train-steps", type=int, default=2000, help="global steps per training run")
    p.add_argument("--width", type=int, default=16, help="float32 elements per fan-out tensor")
    p.add_argument("--tcp", action="store_true", help="dtf over TCP only (DTF_IPC=0), as between hosts")
    p.add_argument("--rig", action="store_true",
                   help="every task (and the client) on its own host of a multi-host rig (root)")
    p.add_argument("--tf-python", default=None, help="TensorFlow's Python (default: DTF_BENCH_TF_PYTHON, "
                   "else .tfvenv/bin/python in the checkout)")
    p.add_argument("--no-tf", action="store_true", help="measure dtf only")
    p.add_argument("--json", default=os.path.join(REPO, "bench", "results", "scaling-latest.json"))
    args = p.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    pythons = {"dtf": sys.executable}
    tf_python = args.tf_python or DEFAULT_TF_PYTHON
    if not args.no_tf:
        if not os.path.exists(tf_python):
            p.error(f"no TensorFlow Python at {tf_python}: pass --tf-python PATH or --no-tf")
        pythons["tf"] = tf_python
    envs = {"dtf": {"DTF_IPC": "0"} if args.tcp else {}, "tf": {}}
    fanouts = _ints(args.fanout)
    trains = _train_configs(args.train) if args.train else []
    if args.rig:
        from tests.cluster.rig import RigUnavailable

        hosts = max([n + 1 for n in fanouts] + [w + ps for w, ps in trains] + [1])
        try:
            place = OnRig(hosts)
        except RigUnavailable as e:
            p.error(f"cannot make a rig of {hosts} hosts here ({e}); run without --rig for loopback")
    else:
        place = Loopback(args.tcp)
    try:
        return _run(args, pythons, envs, place, fanouts, trains)
    finally:
        place.close()


def _run(args, pythons, envs, place, fanouts, trains) -> int:
    placement = place.label
    print(f"bench.scaling: tasks on {placement}; {os.cpu_count()} CPUs; dtf {sys.executable}; "
          f"TF {pythons.get('tf', 'not used')}", flush=True)
    out = {"placement": placement, "command": "python -m bench.scaling " + " ".join(args.argv),
           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "fanout": {}, "train": {}}

    rows = []
    for n in fanouts:
        for impl, python in pythons.items():
            r = fanout(impl, python, n, args.steps, args.width, envs[impl], place)
            out["fanout"].setdefault(str(n), {})[impl] = r
            rows.append([str(n), impl, f"{r['p50_ms']:.3f}", f"{r['p90_ms']:.3f}", f"{r['steps_s']:.0f}",
                         f"{r['task_cpu_ms_per_step_mean']:.3f}", f"{r['task_cpu_ms_per_step_max']:.3f}",
                         f"{r['client_cpu_ms_per_step']:.3f}", f"{r['task_rss_growth_mib_max']:+.1f}",
                         f"{r['task_rss_growth_second_half_mib_max']:+.1f}"])
            print(f"  fan-out N={n} {impl}: p50 {r['p50_ms']:.3f} ms, {r['steps_s']:.0f} steps/s", flush=True)
            tenths = r["task_rss_mib_by_tenth"]
            if tenths.get("largest"):
                print(f"    RSS by tenth of the run, largest task (MiB): {tenths['before_largest']:.1f} -> "
                      + " ".join(f"{v:.1f}" for v in tenths["largest"]), flush=True)
                print(f"    RSS by tenth of the run, all {n} tasks (MiB): {tenths['before_total']:.1f} -> "
                      + " ".join(f"{v:.1f}" for v in tenths["total"]), flush=True)
    if rows:
        print("\nFan-out/fan-in step over N tasks (" + placement + ")")
        print(_table(rows, ["N", "impl", "p50 ms", "p90 ms", "steps/s", "task CPU ms/step (mean)",
                            "task CPU ms/step (max)", "client CPU ms/step",
                            "task RSS growth MiB (max)", "in the second half"]))

    rows = []
    for workers, ps in trains:
        for impl, python in pythons.items():
            r = train(impl, python, workers, ps, args.train_steps, envs[impl], place, args.mode)
            out["train"].setdefault(f"{workers}x{ps}", {})[impl] = dict(r, mode=args.mode)
            rows.append([str(workers), str(ps), impl, f"{r['steps_s']:.0f}",
                         f"{r['ps_cpu_ms_per_step']:.3f}", f"{r['worker_cpu_ms_per_step']:.3f}",
                         "; ".join(r["notes"])])
            print(f"  train {args.mode} {workers} workers x {ps} ps {impl}: {r['steps_s']:.0f} steps/s",
                  flush=True)
    if rows:
        print(f"\nMLP {args.mode} training (" + placement + ")")
        print(_table(rows, ["workers", "ps", "impl", "global steps/s", "ps CPU ms/step",
                            "workers CPU ms/step", "notes"]))

    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
