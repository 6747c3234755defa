"""The ps-preemption recovery demo: train with 1 ps + 1 worker, kill -9 the ps in the
middle, start it again on the same address, and watch training finish from the newest
checkpoint.

    python examples/ps_recovery_demo.py [--last_step=300] [--checkpoint_dir=DIR]

Each task is a process running examples/between_graph_async.py. The worker's
MonitoredTrainingSession sees the ps go away (UnavailableError) and come back empty
(AbortedError), re-creates its session, restores the newest checkpoint and goes on; only
the steps since that checkpoint are trained again.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "between_graph_async.py")


def _free_port():
    from dtf.train.server import free_port

    return free_port()


def _start(flags, job, extra=()):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    cmd = [sys.executable, TRAINER, f"--ps_hosts={flags.ps}", f"--worker_hosts={flags.worker}",
           f"--job_name={job}", "--task_index=0", *extra]
    return subprocess.Popen(cmd, env=env, cwd=os.path.dirname(HERE))


def _wait_for_checkpoint_past(checkpoint_dir, step, timeout):
    from dtf.train.saver import latest_checkpoint

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = latest_checkpoint(checkpoint_dir)
        if path and int(path.rsplit("-", 1)[1]) >= step:
            return path
        time.sleep(0.1)
    raise RuntimeError(f"no checkpoint past step {step} in {checkpoint_dir} after {timeout} s")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--last_step", type=int, default=300)
    p.add_argument("--save_checkpoint_steps", type=int, default=50)
    p.add_argument("--kill_after_step", type=int, default=100)
    p.add_argument("--down_secs", type=float, default=6.0,
                   help="How long the ps stays dead (longer than the 5 s a step takes to see it die)")
    p.add_argument("--checkpoint_dir", default=None)
    flags = p.parse_args(argv)
    flags.checkpoint_dir = flags.checkpoint_dir or tempfile.mkdtemp(prefix="dtf_recovery_")
    flags.ps, flags.worker = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    worker_flags = [f"--checkpoint_dir={flags.checkpoint_dir}", f"--last_step={flags.last_step}",
                    f"--save_checkpoint_steps={flags.save_checkpoint_steps}", "--step_delay=0.01"]
    ps = _start(flags, "ps")
    worker = _start(flags, "worker", worker_flags)
    try:
        path = _wait_for_checkpoint_past(flags.checkpoint_dir, flags.kill_after_step, 60)
        print(f"demo: checkpoint {path} written; killing the ps (pid {ps.pid})", flush=True)
        os.kill(ps.pid, signal.SIGKILL)
        ps.wait()
        time.sleep(flags.down_secs)
        ps = _start(flags, "ps")
        print(f"demo: ps restarted on {flags.ps} (pid {ps.pid})", flush=True)
        code = worker.wait(120)
    finally:
        for proc in (worker, ps):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)
    print(f"demo: worker exited with code {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
