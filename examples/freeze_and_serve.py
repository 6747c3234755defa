"""Trains the digits MLP, freezes it into a GraphDef (variables become constants), and
serves that file from a fresh process with tf.import_graph_def: no checkpoint, no Python
model code, only the graph.

    python examples/freeze_and_serve.py [--steps 1500] [--out DIR/digits_frozen.pb]

The frozen file is TensorFlow's own GraphDef format: TF's tf.import_graph_def loads it too.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import dtf as tf
from mlp_digits import load_digits


def build_model():
    """A 64-128-10 MLP in tf.layers: 'x' in, 'predicted' (a label) out."""
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    hidden = tf.layers.dense(x, 128, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(hidden, 10, name="logits")
    tf.argmax(logits, 1, name="predicted")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train_op = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    return x, y, train_op


def train_and_freeze(path, steps=1500, batch=64):
    """Trains the MLP and writes its frozen inference graph; returns the file's path."""
    (train_x, train_y), _ = load_digits()
    tf.set_random_seed(1)
    x, y, train_op = build_model()
    rng = np.random.default_rng(1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            idx = rng.integers(0, len(train_x), batch)
            sess.run(train_op, {x: train_x[idx], y: train_y[idx]})
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["predicted"])
    ops = sorted({n.op for n in frozen.node})
    print(f"frozen graph: {len(frozen.node)} nodes ({', '.join(ops)})")
    return tf.train.write_graph(frozen, os.path.dirname(path), os.path.basename(path), as_text=False)


def serve(path):
    """Loads the frozen graph into an empty graph and labels the held-out digits."""
    _, (test_x, test_y) = load_digits()
    graph_def = tf.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default():
        (predicted,) = tf.import_graph_def(graph_def, return_elements=["predicted:0"], name="model")
        with tf.Session() as sess:
            labels = sess.run(predicted, {"model/x:0": test_x})
    accuracy = float(np.mean(labels == test_y))
    print(f"served from {os.path.basename(path)} in process {os.getpid()}: "
          f"held-out accuracy {accuracy:.4f}")
    return accuracy


def main(steps=1500, out=None):
    path = out or os.path.join(tempfile.mkdtemp(prefix="dtf_frozen_"), "digits_frozen.pb")
    train_and_freeze(path, steps)
    print(f"trained in process {os.getpid()}, wrote {path}")
    # A fresh interpreter: nothing of the training graph or its Python code survives there.
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--serve", path],
                          capture_output=True, text=True, check=True)
    print(proc.stdout, end="")
    return float(proc.stdout.rsplit("accuracy", 1)[1])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--out", default=None, help="where to write the frozen GraphDef")
    p.add_argument("--serve", default=None, help="serve this frozen GraphDef (what main runs)")
    args = p.parse_args()
    if args.serve:
        serve(args.serve)
    else:
        main(args.steps, args.out)
