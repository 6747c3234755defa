"""The benchmark report: ``python -m bench [--quick] [--tf-python PATH] [--only W2,W7]``.

Runs every workload on dtf and, when a TensorFlow interpreter is available, on TensorFlow
in the same invocation, interleaving their rounds (the machine is small and shared: every
figure is a median over rounds). Prints a table and writes it as JSON to
bench/results/latest.json. TensorFlow always runs in its own processes (``--tf-python``),
so dtf never depends on it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from bench import conv_kernels, raw
from bench.cluster import REPO, quiet_env
from bench.probe_client import ProbeClient
from bench.report import format_table, summarize
from bench.training import CONFIGS, run_floor, run_training, workload

# A venv beside the checkout holding tensorflow-cpu (see docs/benchmarks.md), or $DTF_BENCH_TF_PYTHON.
DEFAULT_TF_PYTHON = os.environ.get(
    "DTF_BENCH_TF_PYTHON", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".tfvenv", "bin", "python"))
IN_PROCESS = ("W2", "W3", "W3t", "W4", "W7", "W7s", "W8", "W9")
MODELS = ("M1", "M2", "M3")  # model training steps, bench/models.py
ALL = ("W1",) + IN_PROCESS + ("W5", "W6", "W6w") + MODELS


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer rounds and steps per round (training still runs its steps)")
    p.add_argument("--rounds", type=int, help="rounds per workload (default 5, quick 3)")
    p.add_argument("--train-rounds", type=int, help="rounds per training setup (default 3, quick 1)")
    p.add_argument("--steps", type=int, default=2000, help="global steps per training run")
    p.add_argument("--tf-python", default=None,
                   help=f"interpreter with tensorflow installed (default: {DEFAULT_TF_PYTHON} "
                        "when it exists)")
    p.add_argument("--no-tf", action="store_true", help="measure dtf only")
    p.add_argument("--only", default="", help=f"comma-separated subset of {','.join(ALL)}")
    p.add_argument("--json", default=os.path.join(REPO, "bench", "results", "latest.json"))
    args = p.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 5)
    args.train_rounds = args.train_rounds or (1 if args.quick else 3)
    if args.tf_python is None and os.path.exists(DEFAULT_TF_PYTHON):
        args.tf_python = DEFAULT_TF_PYTHON
    if args.no_tf:
        args.tf_python = None
    selected = [w.strip() for w in args.only.split(",") if w.strip()] or list(ALL)
    unknown = set(selected) - set(ALL)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(ALL)}")
    args.selected = selected
    return args


class Run:
    """Samples per (implementation, metric id), plus notes, gathered over all rounds."""

    def __init__(self, args):
        self.args = args
        self.pythons = {"dtf": sys.executable}
        if args.tf_python:
            self.pythons["tf"] = args.tf_python
        self.samples: dict = {}
        self.notes: list = []
        self.versions: dict = {}

    @property
    def impls(self):
        return list(self.pythons)

    def add(self, impl, values: dict):
        for key, value in values.items():
            metric, _, peer = key.partition("@")
            self.samples.setdefault(peer or impl, {}).setdefault(metric, []).append(value)

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
            print(f"  note: {text}", file=sys.stderr)

    def order(self, r):
        """Alternates which implementation goes first, round by round."""
        return self.impls if r % 2 == 0 else self.impls[::-1]


# -- W1: whole-process cold starts -------------------------------------------------------------
def _wall(cmd, cwd, timeout_s=120.0):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=quiet_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stdout[-600:]}")
    return elapsed


def _dtf_cli():
    exe = os.path.join(os.path.dirname(sys.executable), "dtf")
    return [exe] if os.path.exists(exe) else None


def cold_start_commands(impl, python):
    """metric -> command; ``dtf hello`` runs where no cluster.toml makes it probe a cluster."""
    script = [python, "-m", "bench.hello_script", f"--impl={impl}"]
    module = "dtf" if impl == "dtf" else "tensorflow.compat.v1"
    cmds = {"w1.import_s": ([python, "-c", f"import {module}"], None),
            "w1.hello_script_s": (script, REPO)}
    if impl == "dtf":
        cli = _dtf_cli()
        cmds["w1.hello_s"] = ((cli + ["hello"]) if cli else script, None if cli else REPO)
    return cmds


def run_cold_starts(run: Run):
    empty_dir = tempfile.mkdtemp(prefix="bench-cold-")
    if _dtf_cli() is None:
        run.note("the dtf CLI is not installed: W1 'dtf hello' is the hello script")
    for r in range(run.args.rounds):
        for impl in run.order(r):
            for metric, (cmd, cwd) in cold_start_commands(impl, run.pythons[impl]).items():
                try:
                    value = _wall(cmd, cwd or empty_dir)
                except Exception as e:  # noqa: BLE001 - noted, the rest goes on
                    run.note(f"W1 {impl} {metric}: {e}")
                    continue
                run.add(impl, {metric: value})
                if impl == "tf" and metric == "w1.hello_script_s":
                    run.add(impl, {"w1.hello_s": value})
    os.rmdir(empty_dir)


# -- W2-W4, W7: long-lived probe processes ------------------------------------------------------
def run_in_process(run: Run, workloads):
    probes = {}
    try:
        for impl in run.impls:
            try:
                probes[impl] = ProbeClient(impl, run.pythons[impl])
                run.versions[impl] = probes[impl].version
            except Exception as e:  # noqa: BLE001
                run.note(f"{impl} probe did not start: {e}")
        for name in workloads:
            failed = set()
            print(f"{name} ...", file=sys.stderr, flush=True)
            for r in range(run.args.rounds):
                for impl in run.order(r):
                    if impl not in probes or impl in failed:
                        continue
                    res = probes[impl].request({"workload": name, "quick": run.args.quick})
                    if res.get("ok"):
                        run.add(impl, res["metrics"])
                    else:
                        failed.add(impl)
                        run.note(f"{name} on {impl} failed: {res.get('error')}")
    finally:
        for p in probes.values():
            p.close()


# -- W5/W6: training clusters -------------------------------------------------------------------
def run_trainings(run: Run, configs):
    for mode, workers, warm in configs:
        print(f"training {mode} x{workers}{' warm' if warm else ''} ...", file=sys.stderr, flush=True)
        failed = set()
        for r in range(run.args.train_rounds):
            for impl in run.order(r):
                if impl in failed:
                    continue
                if mode == "sync" and not _has_sync(run, impl):
                    failed.add(impl)
                    continue
                try:
                    values, notes = run_training(impl, run.pythons[impl], mode, workers,
                                                 run.args.steps, warm=warm)
                    run.add(impl, values)
                    for n in notes:
                        run.note(f"{mode} x{workers}: {n}")
                except Exception as e:  # noqa: BLE001
                    failed.add(impl)
                    run.note(f"training {mode} x{workers} on {impl} failed: {str(e)[-800:]}")
            if not warm:  # the floor is in its steady state from its first step
                try:
                    run.add("dtf", run_floor(run.pythons["dtf"], mode, workers, run.args.steps))
                except Exception as e:  # noqa: BLE001
                    run.note(f"floor {mode} x{workers} failed: {str(e)[-800:]}")


def _has_sync(run: Run, impl) -> bool:
    key = f"has_sync_{impl}"
    if key not in run.versions:
        check = ("from bench.impl import load; tf = load('%s'); "
                 "tf.train.SyncReplicasOptimizer; tf.train.MonitoredTrainingSession; "
                 "tf.train.StopAtStepHook" % impl)
        ok = subprocess.run([run.pythons[impl], "-c", check], cwd=REPO, env=quiet_env(),
                            capture_output=True).returncode == 0
        run.versions[key] = ok
        if not ok:
            run.note(f"sync training skipped on {impl}: SyncReplicasOptimizer / "
                     "MonitoredTrainingSession / StopAtStepHook not importable yet")
    return run.versions[key]


# -- report ------------------------------------------------------------------------------------
def main(argv=None):
    args = parse_args(argv)
    run = Run(args)
    started = time.time()
    sel = args.selected
    print(f"bench: dtf {sys.executable}; TF {args.tf_python or 'not used'}; "
          f"rounds {args.rounds}, training rounds {args.train_rounds}", file=sys.stderr)
    raw_limits = raw.measure(args.quick)
    # M1's convolution kernels in isolation, against the sgemm peak of this same run.
    convs = conv_kernels.run_subprocess(3 if args.quick else 7) if "M1" in sel else None
    if "W1" in sel:
        print("W1 ...", file=sys.stderr, flush=True)
        run_cold_starts(run)
    run_in_process(run, [w for w in IN_PROCESS + MODELS if w in sel])
    configs = [c for c in CONFIGS if workload(c[1], c[2]) in sel]
    run_trainings(run, configs)
    rows = summarize(run.samples)
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {
        "meta": {"command": command.strip(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
                 "duration_s": round(time.time() - started, 1), "machine": platform.platform(),
                 "cpus": os.cpu_count(), "python": platform.python_version(),
                 "versions": {k: v for k, v in run.versions.items() if not k.startswith("has_")},
                 "rounds": args.rounds, "train_rounds": args.train_rounds,
                 "train_steps": args.steps, "quick": args.quick},
        "raw": raw_limits,
        "metrics": rows,
        "notes": run.notes,
    }
    if convs:
        result["conv_kernels"] = convs
    print(format_table(result))
    if convs:
        print("\n" + conv_kernels.format_table(convs, raw_limits["sgemm_gflops"]))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwritten to {os.path.relpath(args.json)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
