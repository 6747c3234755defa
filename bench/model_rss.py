"""Peak memory of a model's training steps (bench M1-M3), dtf beside TensorFlow.

    .venv/bin/python -m bench.model_rss [--models M1,M2,M3] [--steps 60] [--tf-python PATH]

Each implementation and model runs in a fresh process: build the model, train ``--steps``
steps in a local Session (waiting for dtf's compiled kernels halfway, so the steady state is
included), then report the process's peak resident memory (``ru_maxrss``): interpreter,
libraries, graph, variables, kernels and every step's buffers together, as a user's process
would hold them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(impl: str, model: str, steps: int) -> dict:
    from bench.impl import load
    from bench.models import ModelStep

    tf = load(impl)
    step = ModelStep(tf, model)
    step.times(steps // 2)
    if impl == "dtf":
        from dtf.kernels.cpu import jit_loading

        jit_loading.wait(120.0)
    step.times(steps - steps // 2)
    return {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="M1,M2,M3")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--tf-python", default=os.environ.get("DTF_BENCH_TF_PYTHON"))
    p.add_argument("--one", nargs=2, metavar=("IMPL", "MODEL"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print("@@RESULT " + json.dumps(measure(args.one[0], args.one[1], args.steps)), flush=True)
        return 0
    impls = {"dtf": sys.executable}
    if args.tf_python:
        impls["tf"] = args.tf_python
    for model in args.models.split(","):
        peaks = {}
        for impl, python in impls.items():
            out = subprocess.run([python, "-m", "bench.model_rss", "--one", impl, model,
                                  f"--steps={args.steps}"], cwd=REPO, capture_output=True,
                                 text=True, timeout=900)
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("@@RESULT ")), None)
            if line is None:
                raise RuntimeError(f"{impl} {model} gave no result:\n{out.stderr[-2000:]}")
            peaks[impl] = json.loads(line[len("@@RESULT "):])["peak_rss_mib"]
        ratio = f", dtf/TF {peaks['dtf'] / peaks['tf']:.2f}x" if "tf" in peaks else ""
        print(f"{model}: peak RSS " + ", ".join(f"{k} {v:.0f} MiB" for k, v in peaks.items())
              + ratio, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
