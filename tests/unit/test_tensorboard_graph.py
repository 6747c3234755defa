"""TensorBoard's own loader (its EventAccumulator, as the Graphs tab uses it) reads a dtf run:
the graph from FileWriter(logdir, graph=...) with each node's device, and a traced step from
add_run_metadata with each node's compute time and memory. Skipped without tensorboard."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf


def _traced_run(logdir):
    with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones([3, 2], np.float32), name="w")
        y = tf.matmul(x, w, name="y")
    loss = tf.reduce_sum(y, name="loss")
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(logdir, graph=sess.graph)
        sess.run(w.initializer)
        sess.run(loss, {x: np.ones([4, 3], np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        writer.add_run_metadata(meta, "step_1", global_step=1)
        writer.add_graph(sess.graph, global_step=2)  # a second graph event: the newest wins
        writer.close()
    return meta


def test_tensorboard_loads_the_graph_with_devices_and_the_traced_step(tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    meta = _traced_run(str(tmp_path))
    acc = ea.EventAccumulator(str(tmp_path))
    acc.Reload()
    tags = acc.Tags()
    assert tags["graph"] is True and tags["run_metadata"] == ["step_1"]
    nodes = {n.name: n for n in acc.Graph().node}
    assert {"x", "w", "w/read", "y", "loss"} <= set(nodes)
    assert nodes["y"].op == "MatMul" and list(nodes["y"].input) == ["x", "w/read"]
    assert nodes["y"].device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert nodes["loss"].device == ""
    assert nodes["x"].attr["_output_shapes"].list.shape[0].dim[1].size == 3

    stats = acc.RunMetadata("step_1").step_stats
    assert [d.device for d in stats.dev_stats] == [d.device for d in meta.step_stats.dev_stats]
    traced = {n.node_name: n for d in stats.dev_stats for n in d.node_stats}
    y = traced["y"]
    assert y.all_start_micros > 0 and y.all_end_rel_micros >= 0
    assert y.timeline_label == "y = MatMul(x, w/read)"
    # its memory: the [4, 2] float32 product it allocated
    assert [(m.allocator_name, m.total_bytes) for m in y.memory] == [("cpu", 32)]
    (out,) = y.output
    assert [d.size for d in out.tensor_description.shape.dim] == [4, 2]
    assert out.tensor_description.dtype == 1  # DT_FLOAT
    assert out.tensor_description.allocation_description.requested_bytes == 32
