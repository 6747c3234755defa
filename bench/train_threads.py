"""Where a W5/W6 training run's CPU goes, per process: ``python -m bench.train_threads
[--mode async|sync] [--workers 2] [--steps 4000]``.

Runs one dtf between-graph run of bench.train_worker's MLP on a fresh cluster (1 ps + N
workers, as bench.training does) and prints its global steps/s and, per global step and
per process, the user and system CPU of its threads, the time they waited for a CPU
(/proc schedstat) and their involuntary context switches, read from /proc before the
workers start and as each one reports its result.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from bench import training
from bench.cluster import Cluster, stop_process, wait_for_output

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_counters(pid: int) -> dict:
    """Sums over the threads of ``pid``: user and system CPU s, run-queue wait s,
    involuntary context switches."""
    out = {"user": 0.0, "system": 0.0, "cpu_wait": 0.0, "preempted": 0}
    for tid in os.listdir(f"/proc/{pid}/task"):
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(f"{base}/stat") as f:
                stat = f.read()
            with open(f"{base}/schedstat") as f:
                sched = f.read().split()
            with open(f"{base}/status") as f:
                status = f.read()
        except OSError:  # the thread ended
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out["user"] += int(fields[11]) / CLOCK_TICKS
        out["system"] += int(fields[12]) / CLOCK_TICKS
        out["cpu_wait"] += int(sched[1]) / 1e9
        for line in status.splitlines():
            if line.startswith("nonvoluntary_ctxt_switches"):
                out["preempted"] += int(line.split()[1])
    return out


def run(mode: str, workers: int, steps: int) -> tuple:
    cluster = Cluster("dtf", {"ps": 1, "worker": workers})
    log_dir = cluster.log_dir
    procs = []
    try:
        cluster.start_jobs("ps")
        pids = {"ps": cluster.procs[0].pid}
        argv = ["bench.train_worker", "--impl=dtf", f"--mode={mode}", f"--steps={steps}",
                f"--cluster_spec={cluster.flags_spec}"]
        for i in range(workers):
            proc, log_path = training._start_worker(sys.executable, argv, i, log_dir)
            procs.append((proc, log_path))
            wait_for_output(proc, log_path, "@@READY", 120, f"worker {i}")
            pids[f"worker {i}"] = proc.pid
        before = {name: process_counters(pid) for name, pid in pids.items()}
        for proc, _ in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        after, results = {}, {}
        deadline = time.monotonic() + 600
        while len(results) < workers and time.monotonic() < deadline:
            for i, (proc, log_path) in enumerate(procs):
                if i not in results:
                    # A worker exits as soon as it reports: its last reading before that.
                    counters = process_counters(proc.pid) if proc.poll() is None else None
                    result = training._result_of(log_path)
                    if result is not None:
                        results[i] = result
                    elif counters is not None:
                        after[f"worker {i}"] = counters
            time.sleep(0.01)
        after["ps"] = process_counters(pids["ps"])
    finally:
        for proc, _ in procs:
            stop_process(proc, grace_s=2.0)
        cluster.stop()
    if len(results) < workers:
        raise RuntimeError(f"only {len(results)} of {workers} workers finished")
    window = max(r["end"] for r in results.values()) - min(r["start"] for r in results.values())
    global_steps = max(r["global_step"] for r in results.values())
    per_step = {name: {k: (after[name][k] - before[name][k]) / global_steps for k in before[name]}
                for name in before if name in after}
    return global_steps / window, per_step


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("async", "sync"), default="async")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=4000)
    args = p.parse_args(argv)
    steps_s, per_step = run(args.mode, args.workers, args.steps)
    print(f"{args.mode}, 1 ps + {args.workers} workers: {steps_s:.0f} global steps/s")
    print(f"{'per global step':16s} {'user us':>8s} {'system us':>10s} {'CPU wait us':>12s} "
          f"{'preempted':>10s}")
    for name, c in per_step.items():
        print(f"{name:16s} {c['user'] * 1e6:8.0f} {c['system'] * 1e6:10.0f} "
              f"{c['cpu_wait'] * 1e6:12.0f} {c['preempted']:10.2f}")


if __name__ == "__main__":
    sys.exit(main())
