"""Where a model's training step goes: ``python -m bench.model_profile M1 [--impl dtf|tf]
[--steps 20] [--ops] [--cpu] [--cprofile]``.

Builds one model of bench/models.py in a local Session, warms it up and prints the median
ms per step and the GFLOP/s it achieves. ``--ops`` adds the time per op type from the step
stats of traced runs (``RunOptions(trace_level=FULL_TRACE)``), under dtf and TensorFlow
alike; ``--cpu`` (dtf only) the CPU time of each kernel node on the thread that called it,
in untraced steps; ``--cprofile`` adds the Python functions untraced steps spend their time in.

Traced wall times count the waits of kernels that overlap or lose their core, which on a
shared machine can double them; thread CPU time does not. With
``DTF_INTRA_OP_THREADS=1`` every chunk of a kernel runs on its calling thread, so ``--cpu``
then gives each kernel's whole CPU cost (a fused elementwise tail is not counted).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import defaultdict

from bench.impl import load
from bench.models import MODELS, ModelStep, warm_up


def op_times(tf, model, steps):
    """{op type: (ms per step, kernels per step)} from traced steps. TensorFlow's node
    stats hold every executor's kernel once (dtf's as well), labelled ``name = Op(...)``."""
    total, count = defaultdict(float), defaultdict(int)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    for _ in range(steps):
        meta = tf.RunMetadata()
        model.step(options=options, run_metadata=meta)
        for dev in meta.step_stats.dev_stats:
            for s in dev.node_stats:
                label = s.timeline_label
                op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else s.node_name
                total[op] += s.op_end_rel_micros / 1e3
                count[op] += 1
    return {op: (total[op] / steps, count[op] / steps) for op in total}


class KernelClock:
    """Thread CPU time per dtf kernel node: wraps the computes the kernel registry hands
    out (installed before the model's plans are built); counts only while ``on``."""

    def __init__(self):
        import dataclasses

        from dtf.kernels import registry
        from dtf.runtime import executor

        self.on, self.total, self.calls = False, defaultdict(float), defaultdict(int)
        real = registry.lookup

        def lookup(op, device, dtype=None):
            kdef = real(op, device, dtype)
            return dataclasses.replace(kdef, factory=self._timed(op, kdef.factory))

        executor.kernel_registry.lookup = lookup

    def _timed(self, op, factory):
        def timed_factory(node):
            compute, key = factory(node), f"{op} {node.name}"

            def run(*args):
                t0 = time.thread_time()
                try:
                    return compute(*args)
                finally:
                    if self.on:
                        self.total[key] += time.thread_time() - t0
                        self.calls[key] += 1
            return run
        return timed_factory

    def measure(self, model, steps):
        self.on = True
        try:
            model.times(steps)
        finally:
            self.on = False
        print(f"{'kernel node (thread CPU)':<70} {'ms/step':>8}")
        for key, t in sorted(self.total.items(), key=lambda kv: -kv[1]):
            if t / steps >= 5e-5:
                print(f"{key[:70]:<70} {t / steps * 1e3:8.2f}")
        print(f"{'total':<70} {sum(self.total.values()) / steps * 1e3:8.2f}")


def print_ops(per_op, step_ms):
    print(f"{'op type':<36} {'ms/step':>8} {'share':>6} {'kernels':>8}")
    for op, (ms, n) in sorted(per_op.items(), key=lambda kv: -kv[1][0]):
        if ms < 0.01:
            continue
        print(f"{op:<36} {ms:8.2f} {ms / step_ms:6.1%} {n:8.0f}")
    print(f"{'total (kernels only)':<36} {sum(ms for ms, _ in per_op.values()):8.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("model", choices=sorted(MODELS))
    p.add_argument("--impl", choices=("dtf", "tf"), default="dtf")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--ops", action="store_true", help="time per op type (traced steps)")
    p.add_argument("--cpu", action="store_true", help="thread CPU time per kernel node (dtf)")
    p.add_argument("--cprofile", action="store_true", help="cProfile of untraced steps")
    args = p.parse_args(argv)
    if args.cpu and args.impl != "dtf":
        p.error("--cpu times dtf's kernels only")
    tf = load(args.impl)
    clock = KernelClock() if args.cpu else None
    model = ModelStep(tf, args.model)
    warm_up(model, args.impl)
    ms = statistics.median(model.times(args.steps)) * 1e3
    print(f"{args.impl} {args.model}: median step {ms:.1f} ms, "
          f"{model.flops / ms / 1e6:.1f} GFLOP/s ({model.flops / 1e9:.2f} GFLOP/step), {args.steps} steps")
    if args.ops:
        print_ops(op_times(tf, model, args.steps), ms)
    if clock is not None:
        clock.measure(model, args.steps)
    if args.cprofile:
        prof = cProfile.Profile()
        prof.runcall(model.times, args.steps)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    model.close()


if __name__ == "__main__":
    main()
