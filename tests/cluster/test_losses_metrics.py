"""tf.losses and tf.metrics in a between-graph replica: weights and metric accumulators
placed by replica_device_setter on the ps, trained and evaluated through
MonitoredTrainingSession on a worker task."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


def test_losses_and_metrics_train_and_stream_on_a_ps_worker_cluster(make_cluster, tmp_path):
    cl = make_cluster(ps=1, worker=1).start_all()
    rng = np.random.RandomState(0)
    x = rng.rand(64, 4).astype(np.float32)
    y = (x.sum(1) > 2).astype(np.int64)
    setter = tf.train.replica_device_setter(cluster=cl.cluster_spec(),
                                            worker_device="/job:worker/task:0")
    with tf.device(setter):
        inputs = tf.placeholder(tf.float32, [None, 4])
        labels = tf.placeholder(tf.int64, [None])
        w = tf.get_variable("w", [4, 2], initializer=tf.zeros_initializer(),
                            regularizer=tf.contrib.layers.l2_regularizer(1e-3))
        logits = tf.matmul(inputs, w)
        tf.losses.sparse_softmax_cross_entropy(labels, logits)
        loss = tf.losses.get_total_loss()
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=global_step)
        accuracy, update_accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
        auc, update_auc = tf.metrics.auc(labels, tf.nn.softmax(logits)[:, 1])
    metric_vars = tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)
    assert {v.op.name for v in metric_vars} >= {"accuracy/total", "accuracy/count"}
    assert all(v.device == "/job:ps/task:0" for v in metric_vars + [w])

    feed = {inputs: x, labels: y}
    with tf.train.MonitoredTrainingSession(master=cl.target("worker", 0),
                                           checkpoint_dir=str(tmp_path)) as sess:
        first = sess.run(loss, feed)
        for _ in range(60):
            sess.run(train_op, feed)
        assert sess.run(loss, feed) < first
        for start in range(0, 64, 16):   # four batches streamed into the accumulators
            batch = {inputs: x[start:start + 16], labels: y[start:start + 16]}
            sess.run([update_accuracy, update_auc], batch)
        streamed_acc, streamed_auc = sess.run([accuracy, auc])
        scores = x @ sess.run(w)
    assert streamed_acc == pytest.approx(np.mean(np.argmax(scores, 1) == y))
    # The exact ROC AUC: the fraction of (positive, negative) pairs ranked right; the
    # metric's 200 thresholds approximate it closely.
    p1 = np.exp(scores[:, 1]) / np.exp(scores).sum(1)
    pos, neg = p1[y == 1], p1[y == 0]
    exact = np.mean(pos[:, None] > neg[None, :])
    assert streamed_auc == pytest.approx(exact, abs=0.02)
