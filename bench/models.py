"""Model training steps (M1-M3), written once against a ``tf`` module, run in a local Session.

- M1: the deep-MNIST CNN of the TF1 tutorial: conv 5x5x32 SAME + relu + 2x2 max-pool, conv
  5x5x64 SAME + relu + 2x2 max-pool, dense 3136->1024 relu, dense 1024->10, sparse softmax
  cross-entropy, Adam(1e-4), batch 64, numpy batches fed every step.
- M2: the MLP 784-1024-1024-10 (relu), sparse softmax cross-entropy, plain gradient
  descent, batch 256, fed.
- M3: a small ResNet-style stack on 32x32x3, batch 64: a 3x3x16 stem, three residual blocks
  of (3x3 conv, batch norm, relu, 3x3 conv, batch norm, add, relu), global average pool,
  dense 16->10, Momentum(0.9); batch norm is tf.nn.fused_batch_norm in training mode
  (batch statistics, no moving averages).

Each ``setup_*(tf, env)`` builds the model once (warm-up steps included) and returns
``measure(quick) -> {metric id: value}``: the median ms per ``sess.run(train_op, feed)``
over one round and the GFLOP/s that median achieves. FLOPs are counted once, here, from the
layer shapes (2 per multiply-add; forward, and backward as the gradients TF1 builds:
no gradient with respect to the fed images), so dtf and TensorFlow are credited the same
work; elementwise ops, pooling and the optimizer's updates are not counted.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

CNN_BATCH = 64
MLP_BATCH = 256
MLP_SIZES = (784, 1024, 1024, 10)
RESNET_BATCH = 64
RESNET_BLOCKS = 3
RESNET_WIDTH = 16


def _weight(tf, rng, shape, name):
    """A variable initialized from numpy (same values under both implementations, and no
    random op for either to optimize)."""
    fan_in = int(np.prod(shape[:-1]))
    init = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return tf.Variable(init, name=name)


def _bias(tf, n, name, value=0.1):
    return tf.Variable(np.full([n], value, np.float32), name=name)


# -- FLOP counts ---------------------------------------------------------------------------------
def conv_flops(batch, out_hw, k_hw, c_in, c_out):
    """Multiply-adds x 2 of one convolution's forward pass."""
    return 2 * batch * out_hw[0] * out_hw[1] * k_hw[0] * k_hw[1] * c_in * c_out


def dense_flops(batch, n_in, n_out):
    return 2 * batch * n_in * n_out


def cnn_flops(batch=CNN_BATCH):
    conv1 = conv_flops(batch, (28, 28), (5, 5), 1, 32)
    conv2 = conv_flops(batch, (14, 14), (5, 5), 32, 64)
    fc1, fc2 = dense_flops(batch, 3136, 1024), dense_flops(batch, 1024, 10)
    # Backward: every layer's filter gradient, and the input gradient of all but conv1
    # (its input is the fed batch).
    return (conv1 + conv2 + fc1 + fc2) + conv1 + 2 * (conv2 + fc1 + fc2)


def mlp_flops(batch=MLP_BATCH, sizes=MLP_SIZES):
    layers = [dense_flops(batch, a, b) for a, b in zip(sizes[:-1], sizes[1:])]
    return sum(layers) + layers[0] + 2 * sum(layers[1:])


def resnet_flops(batch=RESNET_BATCH, blocks=RESNET_BLOCKS, width=RESNET_WIDTH):
    stem = conv_flops(batch, (32, 32), (3, 3), 3, width)
    body = 2 * blocks * conv_flops(batch, (32, 32), (3, 3), width, width)
    head = dense_flops(batch, width, 10)
    return (stem + body + head) + stem + 2 * (body + head)


# -- the models ----------------------------------------------------------------------------------
def build_cnn(tf, batch=CNN_BATCH, seed=0):
    """(x, labels, loss, train_op) of the deep-MNIST CNN."""
    rng = np.random.default_rng(seed)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = tf.reshape(x, [-1, 28, 28, 1])
    for i, (c_in, c_out) in enumerate(((1, 32), (32, 64))):
        w = _weight(tf, rng, [5, 5, c_in, c_out], f"conv{i + 1}/w")
        h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME")
                       + _bias(tf, c_out, f"conv{i + 1}/b"))
        h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    h = tf.reshape(h, [-1, 7 * 7 * 64])
    h = tf.nn.relu(tf.matmul(h, _weight(tf, rng, [3136, 1024], "fc1/w")) + _bias(tf, 1024, "fc1/b"))
    logits = tf.matmul(h, _weight(tf, rng, [1024, 10], "fc2/w")) + _bias(tf, 10, "fc2/b")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    train_op = tf.train.AdamOptimizer(1e-4).minimize(loss)
    return x, labels, loss, train_op


def build_mlp(tf, sizes=MLP_SIZES, seed=0):
    rng = np.random.default_rng(seed)
    x = tf.placeholder(tf.float32, [None, sizes[0]], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = x
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        h = tf.matmul(h, _weight(tf, rng, [n_in, n_out], f"w{i}")) + _bias(tf, n_out, f"b{i}", 0.0)
        if i < len(sizes) - 2:
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    return x, labels, loss, train_op


def build_resnet(tf, blocks=RESNET_BLOCKS, width=RESNET_WIDTH, seed=0):
    rng = np.random.default_rng(seed)
    x = tf.placeholder(tf.float32, [None, 32, 32, 3], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")

    def conv_bn(h, c_in, name):
        w = _weight(tf, rng, [3, 3, c_in, width], f"{name}/w")
        h = tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME")
        # tf.nn.fused_batch_norm rather than tf.layers: TensorFlow 2.21's compat.v1 layers
        # need Keras 2. Batch statistics, as in training; no moving averages.
        scale = tf.Variable(np.ones([width], np.float32), name=f"{name}/gamma")
        offset = tf.Variable(np.zeros([width], np.float32), name=f"{name}/beta")
        return tf.nn.fused_batch_norm(h, scale, offset, is_training=True)[0]

    h = tf.nn.relu(conv_bn(x, 3, "stem"))
    for b in range(blocks):
        y = tf.nn.relu(conv_bn(h, width, f"block{b}/a"))
        h = tf.nn.relu(conv_bn(y, width, f"block{b}/b") + h)
    h = tf.reduce_mean(h, axis=[1, 2])
    logits = tf.matmul(h, _weight(tf, rng, [width, 10], "fc/w")) + _bias(tf, 10, "fc/b", 0.0)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    train_op = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    return x, labels, loss, train_op


def _feeds(x, labels, shape, n=4, seed=1):
    """A few fixed batches, cycled (new arrays each step, as a data pipeline feeds them)."""
    rng = np.random.default_rng(seed)
    return [{x: rng.random(shape, dtype=np.float32), labels: rng.integers(0, 10, shape[0])}
            for _ in range(n)]


# name -> (builder, feed shape, flops per step, metric prefix, steps per round (full, quick))
MODELS = {
    "M1": (build_cnn, (CNN_BATCH, 784), cnn_flops(), "m1.cnn", (20, 8)),
    "M2": (build_mlp, (MLP_BATCH, 784), mlp_flops(), "m2.mlp", (30, 10)),
    "M3": (build_resnet, (RESNET_BATCH, 32, 32, 3), resnet_flops(), "m3.resnet", (20, 8)),
}


class ModelStep:
    """One model in its own graph and session: ``step()`` runs one training step."""

    def __init__(self, tf, name, session_config=None):
        builder, shape, self.flops, self.prefix, self.steps = MODELS[name]
        self.graph = tf.Graph()
        with self.graph.as_default():
            x, labels, self.loss, self.train_op = builder(tf)
            init = tf.global_variables_initializer()
        self.sess = tf.Session(graph=self.graph, config=session_config)
        self.sess.run(init)
        self.feeds = _feeds(x, labels, shape)
        self._i = 0

    def step(self, fetches=None, **kwargs):
        self._i += 1
        return self.sess.run(self.train_op if fetches is None else fetches,
                             self.feeds[self._i % len(self.feeds)], **kwargs)

    def times(self, n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.step()
            out.append(time.perf_counter() - t0)
        return out

    def close(self):
        self.sess.close()


def warm_up(model, impl, max_s=60.0):
    """Steps until the step time settles; under dtf, first until Numba's loops have loaded
    (kernels run numpy stand-ins until then), so rounds measure the steady state."""
    model.times(3)
    if impl == "dtf":
        from dtf.kernels.cpu import jit_loading

        jit_loading.wait(max_s)
        model.times(3)
        from dtf.kernels.cpu import conv_direct

        conv_direct.wait(max_s)  # the direct convolution loops compile on first use
    model.times(3)


def _setup(name):
    def setup(tf, env):
        model = ModelStep(tf, name)
        env.on_close(model.close)
        warm_up(model, env.impl)

        def measure(quick):
            ms = statistics.median(model.times(model.steps[1 if quick else 0])) * 1e3
            return {f"{model.prefix}_ms": ms, f"{model.prefix}_gflops": model.flops / ms / 1e6}

        return measure

    return setup


MODEL_SETUPS = {name: _setup(name) for name in MODELS}
