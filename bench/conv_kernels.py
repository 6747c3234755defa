"""The convolution kernels of the deep-MNIST CNN (bench M1) and of the ResNet step (M3) in
isolation, against the machine's sgemm rate measured in the same run: ``python -m
bench.conv_kernels [--reps 7] [--threads 1]``.

Each of M1's convolution kernels (conv1's forward and filter gradient; conv2's forward,
filter gradient and input gradient), and the three of one of M3's 3x3 16 -> 16 layers, is
called directly through the kernel registry on the layer's shapes (batch 64, SAME, fresh
random data), and so is one float32 sgemm of 2048^3. Two rates are printed per kernel,
each the best of ``--reps`` calls:

- per core: FLOPs over the CPU time of the whole process (every thread), against a
  one-thread sgemm measured the same way. CPU time hardly moves when other programs share
  the cores, so this is the figure to compare between runs on a busy machine.
- wall: FLOPs over elapsed time with the process's intra-op threads, against numpy's
  sgemm on all its BLAS threads (the bench's ``sgemm 2048^3 peak``). Only meaningful when
  the machine is quiet.

The fraction printed beside each rate is of the sgemm rate of the same kind (issue #29's
goal: Conv2D forward + backward at 60% or more of the measured sgemm peak).
FLOPs count 2 per multiply-add of the convolution as written (padding taps included, as
in bench.models.cnn_flops).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

# (name, x shape, filter shape): M1's two convolutions, 5x5 SAME at stride 1, and one of
# M3's six 3x3 16 -> 16 body convolutions (SAME, stride 1).
LAYERS = (("conv1", (64, 28, 28, 1), (5, 5, 1, 32)), ("conv2", (64, 14, 14, 32), (5, 5, 32, 64)),
          ("m3", (64, 32, 32, 16), (3, 3, 16, 16)))
# The kernels a training step runs per layer: conv1's input is the fed batch, so it has
# no input gradient.
KERNELS = {"conv1": ("Conv2D", "Conv2DBackpropFilter"),
           "conv2": ("Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput"),
           "m3": ("Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput")}
# Summary rows: (name, layers).
TOTALS = (("conv2, fwd + bwd", ("conv2",)), ("M1 all, fwd + bwd", ("conv1", "conv2")),
          ("m3, fwd + bwd", ("m3",)))


def _best(fn, reps):
    """(best wall seconds, best process-CPU seconds) over ``reps`` calls after one warm call."""
    fn()
    walls, cpus = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def sgemm_rates(reps, n=2048):
    """(GFLOP/s per core on one BLAS thread by CPU time, GFLOP/s on all BLAS threads by
    wall time) of an n^3 float32 product."""
    from dtf.kernels.cpu.blas import one_thread

    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    flops = 2 * n ** 3 / 1e9
    with one_thread():
        _, cpu = _best(lambda: np.matmul(a, b, out=out), reps)
    wall, _ = _best(lambda: np.matmul(a, b, out=out), reps)
    return flops / cpu, flops / wall


def _kernel(op):
    import dtf as tf
    from dtf.framework.graph_def import NodeDef
    from dtf.kernels import registry

    attrs = {"T": tf.float32, "strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC",
             "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True, "explicit_paddings": []}
    node = NodeDef(f"bench_{op}", op, [], [], "", attrs, [tf.float32])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def kernel_rates(reps):
    """[(layer, op, GFLOP, best wall s, best CPU s)] for every kernel of LAYERS."""
    from dtf.kernels.cpu import conv_direct, jit_loading

    jit_loading.wait()  # the Numba kernels, not their numpy stand-ins
    rng = np.random.default_rng(29)
    rows = []
    for layer, x_shape, w_shape in LAYERS:
        x = rng.standard_normal(x_shape, dtype=np.float32)
        w = rng.standard_normal(w_shape, dtype=np.float32)
        dy = rng.standard_normal(x_shape[:3] + w_shape[3:], dtype=np.float32)
        gflop = 2 * dy.size * int(np.prod(w_shape[:3])) / 1e9
        calls = {
            "Conv2D": (lambda k: k(None, x, w)),
            "Conv2DBackpropFilter": (lambda k: k(None, x, np.array(w_shape, np.int32), dy)),
            "Conv2DBackpropInput": (lambda k: k(None, np.array(x_shape, np.int32), w, dy)),
        }
        kernels = {op: _kernel(op) for op in KERNELS[layer]}
        for op, k in kernels.items():
            calls[op](k)
        conv_direct.wait()  # the direct loops (few channels) compile at their first call
        for op, k in kernels.items():
            call = calls[op]
            wall, cpu = _best(lambda: call(k), reps)
            rows.append((layer, op, gflop, wall, cpu))
    return rows


def measure(reps=7) -> dict:
    """Plain data for the report: the two sgemm rates and one row per kernel."""
    core_peak, wall_peak = sgemm_rates(reps)
    kernels = [{"layer": layer, "op": op, "gflop": gflop, "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3}
               for layer, op, gflop, wall, cpu in kernel_rates(reps)]
    return {"sgemm_core_gflops": core_peak, "sgemm_wall_gflops": wall_peak, "kernels": kernels,
            "load_average": os.getloadavg()[0]}


def run_subprocess(reps=7, timeout_s=600.0):
    """``measure`` in a fresh process of this interpreter (the report's own process has
    other workloads' threads and caches), or None with the reason printed."""
    import json
    import subprocess
    import sys

    from bench.cluster import REPO, quiet_env

    proc = subprocess.run([sys.executable, "-m", "bench.conv_kernels", "--reps", str(reps), "--json"],
                          cwd=REPO, env=quiet_env(), capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        print(f"bench.conv_kernels failed: {proc.stderr[-600:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def format_table(data, peak=None) -> str:
    """The kernels' rates and their fractions of the sgemm rates; ``peak``: the report's
    own ``sgemm 2048^3 peak`` (all cores, wall), else this measurement's."""
    core_peak = data["sgemm_core_gflops"]
    wall_peak = peak or data["sgemm_wall_gflops"]
    lines = [f"{'conv kernel (M1, M3 shapes)':<30} {'ms wall':>8} {'ms CPU':>8} {'GFLOP/s/core':>13} "
             f"{'of sgemm':>9} {'GFLOP/s wall':>13} {'of peak':>8}"]

    def line(name, gflop, wall, cpu):
        lines.append(f"{name:<30} {wall:8.2f} {cpu:8.2f} {gflop / cpu * 1e3:13.1f} "
                     f"{gflop / cpu * 1e3 / core_peak:9.0%} {gflop / wall * 1e3:13.1f} "
                     f"{gflop / wall * 1e3 / wall_peak:8.0%}")

    rows = data["kernels"]
    for r in rows:
        line(f"{r['layer']} {r['op']}", r["gflop"], r["wall_ms"], r["cpu_ms"])
    for name, layers in TOTALS:
        sel = [r for r in rows if r["layer"] in layers]
        line(name, *(sum(r[k] for r in sel) for k in ("gflop", "wall_ms", "cpu_ms")))
    lines.append(f"sgemm 2048^3: {core_peak:.1f} GFLOP/s per core (1 BLAS thread, CPU time), "
                 f"{wall_peak:.1f} GFLOP/s wall (all cores); load average {data['load_average']:.1f}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--json", action="store_true", help="print the measurement as one JSON line")
    args = p.parse_args(argv)
    data = measure(args.reps)
    if args.json:
        import json

        print(json.dumps(data))
    else:
        print(format_table(data))


if __name__ == "__main__":
    main()
