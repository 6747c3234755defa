"""Layers outside the M1-M3 models, dtf beside TensorFlow: ``python -m bench.layer_kernels
[--tf-python PATH] [--steps 30]``.

Per layer, the median ms of its forward, of its gradient alone (from a fixed output
gradient, so nothing else runs) and of both, in a local Session with the input fed:
depthwise convolutions (NHWC input, 3x3 filter, channel multiplier 1, as MobileNet's;
DepthwiseConv2dNative and its two backprops), local response normalization (LRN,
LRNGrad) with the CIFAR-10 tutorial's, AlexNet's and TF's default parameters, a 3-D
convolution, average pooling, bilinear and nearest resizing, softmax, top-k and
unsorted_segment_sum. Each implementation runs in a process of its own (``--impl
dtf|tf`` runs one and prints @@RESULT {json}).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

# depthwise: (batch, height, width, channels, stride)
DEPTHWISE = [(64, 32, 32, 32, 1), (32, 56, 56, 64, 1), (64, 16, 16, 128, 2), (64, 8, 8, 256, 1)]
# LRN: (name, input shape, depth_radius, bias, alpha, beta)
LRN = [("cifar10 norm1", (128, 12, 12, 64), 4, 1.0, 0.001 / 9.0, 0.75),
       ("alexnet norm1", (32, 27, 27, 96), 2, 1.0, 2e-5, 0.75),
       ("tf defaults", (32, 28, 28, 64), 5, 1.0, 1.0, 0.5)]


def _layers(tf, rng):
    """(name, input array, build(x) -> (y, [tensors the gradient is taken for]))."""
    for n, h, w, c, stride in DEPTHWISE:
        f = rng.standard_normal((3, 3, c, 1)).astype(np.float32) * 0.1

        def depthwise(x, f=f, stride=stride):
            ft = tf.constant(f)
            return tf.nn.depthwise_conv2d(x, ft, [1, stride, stride, 1], "SAME"), [ft]

        yield f"depthwise {n}x{h}x{w}x{c} s{stride}", (n, h, w, c), depthwise
    for name, shape, r, bias, alpha, beta in LRN:
        yield (f"lrn {name}", shape,
               lambda x, r=r, bias=bias, alpha=alpha, beta=beta: (
                   tf.nn.lrn(x, r, bias=bias, alpha=alpha, beta=beta), []))
    f3 = rng.standard_normal((3, 3, 3, 16, 16)).astype(np.float32) * 0.1
    yield ("conv3d 8x16x16x16x16 3x3x3", (8, 16, 16, 16, 16),
           lambda x: (tf.nn.conv3d(x, tf.constant(f3), [1] * 5, "SAME"), []))
    yield ("avg_pool 3x3 s2 64x56x56x64", (64, 56, 56, 64),
           lambda x: (tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), []))
    yield ("resize_bilinear 32x32x32x64 x2", (32, 32, 32, 64),
           lambda x: (tf.image.resize_bilinear(x, [64, 64]), []))
    yield ("resize_nearest 32x32x32x64 x2", (32, 32, 32, 64),
           lambda x: (tf.image.resize_nearest_neighbor(x, [64, 64]), []))
    yield "softmax 32x32x32x64", (32, 32, 32, 64), lambda x: (tf.nn.softmax(x), [])
    yield "top_k 5 of 256x1000", (256, 1000), lambda x: (tf.nn.top_k(x, 5)[0], [])
    ids = rng.integers(0, 100, 4096)
    yield ("unsorted_segment_sum 4096x256", (4096, 256),
           lambda x: (tf.math.unsorted_segment_sum(x, tf.constant(ids), 100), []))


def measure(impl, steps):
    from bench.impl import load

    tf = load(impl)
    rng = np.random.default_rng(0)
    out = {}
    for name, shape, build in _layers(tf, rng):
        graph = tf.Graph()
        with graph.as_default():
            xv = rng.standard_normal(shape).astype(np.float32)
            x = tf.placeholder(tf.float32, xv.shape)
            y, wrt = build(x)
            # dy in a variable: from a constant, TensorFlow's graph optimizer folds every
            # gradient that does not read x (nearest resize, segment sums) into a constant
            # up to 10 MB and the figure timed nothing (0.5-0.8 ms against 1.4-9.6 fed).
            dy = tf.Variable(rng.standard_normal(y.shape.as_list()).astype(np.float32))
            grads = tf.gradients(y, [x] + wrt, grad_ys=[dy])
            init = tf.global_variables_initializer()
            sess = tf.Session()
            sess.run(init)

            def median_ms(fetch):
                for _ in range(5):
                    sess.run(fetch, {x: xv})
                times = []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    sess.run(fetch, {x: xv})
                    times.append(time.perf_counter() - t0)
                return round(1e3 * statistics.median(times), 3)

            if impl == "dtf":
                from dtf.kernels.cpu import jit_loading

                jit_loading.wait(60)
            out[name] = {"forward": median_ms(y.op), "grads": median_ms([g.op for g in grads]),
                         "fwd+bwd": median_ms([y.op] + [g.op for g in grads])}
            sess.close()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=("dtf", "tf"))
    p.add_argument("--tf-python", help="a Python with tensorflow installed")
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args(argv)
    if args.impl:
        print("@@RESULT " + json.dumps(measure(args.impl, args.steps)), flush=True)
        return 0
    pythons = {"dtf": sys.executable}
    if args.tf_python:
        pythons["tf"] = args.tf_python
    results = {}
    for impl, python in pythons.items():
        proc = subprocess.run([python, "-m", "bench.layer_kernels", f"--impl={impl}",
                               f"--steps={args.steps}"], capture_output=True, text=True)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT ")]
        if proc.returncode or not line:
            print(f"{impl} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
            return 1
        results[impl] = json.loads(line[0][len("@@RESULT "):])
    print(f"{'layer':34s} {'what':8s} {'dtf ms':>8s} {'TF ms':>8s} {'TF/dtf':>7s}")
    for layer, timings in results["dtf"].items():
        for what, ms in timings.items():
            tf_ms = results.get("tf", {}).get(layer, {}).get(what)
            ratio = f"{tf_ms / ms:6.2f}x" if tf_ms else ""
            print(f"{layer:34s} {what:8s} {ms:8.2f} {tf_ms if tf_ms else '':>8} {ratio:>7s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
