"""GPU placement end to end in tf.Session(): partitions, soft placement, errors, logging,
step stats and the task's reported GPUs (on the CUDA simulator: one GPU)."""
import logging
import subprocess
import sys

import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.placement import ClusterView, place

pytestmark = pytest.mark.gpu

SOFT = tf.ConfigProto(allow_soft_placement=True)


def test_import_dtf_does_not_import_numba_cuda():
    code = "import sys, dtf; sys.exit('numba.cuda' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def _mlp(device):
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    with tf.device(device):
        w = tf.Variable(rng.uniform(-1, 1, (5, 3)).astype(np.float32), name="w")
        b = tf.Variable(np.zeros(3, np.float32), name="b")
        logits = tf.nn.relu(tf.matmul(x, w) + b)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    return x, y, w, loss, train


def _train(device):
    tf.reset_default_graph()
    x, y, w, loss, train = _mlp(device)
    feed = {x: np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5), y: np.int32([0, 1, 2, 1])}
    with tf.Session(config=SOFT) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, feed)
        return sess.run([loss, w], feed)


def test_mlp_training_step_on_gpu_matches_cpu():
    gpu_loss, gpu_w = _train("/gpu:0")
    cpu_loss, cpu_w = _train("/cpu:0")
    assert isinstance(gpu_w, np.ndarray)
    np.testing.assert_allclose(gpu_loss, cpu_loss, rtol=1e-5)
    np.testing.assert_allclose(gpu_w, cpu_w, rtol=1e-5, atol=1e-6)


def _array_model(device):
    """Slicing, gathering, padding, tiling and selecting ops and their gradients."""
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    with tf.device(device):
        w = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")
        h = x * w
        a, b = tf.split(h, [1, 2], axis=1)
        g = tf.gather(tf.pad(b, [[1, 0], [0, 1]], mode="REFLECT"), [0, 2, 2])
        t = tf.tile(h[1:3, ::-1], [1, 2])
        s = tf.where(t > 0, t, -t)
        u = tf.unstack(tf.concat([h, tf.pad(a, [[0, 0], [0, 2]])], axis=0))
        loss = tf.reduce_sum(g * g) + tf.reduce_mean(s) + tf.reduce_sum(tf.one_hot([1, 2], 3) * a[:2]) + \
            tf.reduce_sum(u[5] * u[0])
        grad = tf.gradients(loss, [w])[0]
        flag = tf.reduce_any(grad > 0)
    feed = {x: np.arange(12, dtype=np.float32).reshape(4, 3) / 6 - 1}
    with tf.Session() as sess:  # no soft placement: every op must have a GPU kernel
        sess.run(tf.global_variables_initializer())
        return sess.run([loss, grad, flag], feed)


def test_array_ops_and_their_gradients_run_on_gpu_without_soft_placement():
    gpu_loss, gpu_grad, gpu_flag = _array_model("/gpu:0")
    cpu_loss, cpu_grad, cpu_flag = _array_model("/cpu:0")
    np.testing.assert_allclose(gpu_loss, cpu_loss, rtol=1e-5)
    np.testing.assert_allclose(gpu_grad, cpu_grad, rtol=1e-5, atol=1e-6)
    assert gpu_flag == cpu_flag


def test_op_without_gpu_kernel_needs_soft_placement():
    x = tf.constant(2.0)
    with tf.device("/device:GPU:0"):
        y = tf.summary.scalar("loss", x * 2.0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="ScalarSummary.*GPU|GPU.*ScalarSummary"):
            sess.run(y)
    with tf.Session(config=SOFT) as sess:
        assert isinstance(sess.run(y), bytes)


def test_missing_gpu_is_an_error_naming_op_and_device():
    one, two = tf.constant(1.0), tf.constant(2.0)
    with tf.device("/device:GPU:3"):
        y = tf.add(one, two, name="far_add")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="far_add.*GPU:3"):
            sess.run(y)
    with tf.Session(config=SOFT) as sess:
        assert sess.run(y) == 3.0


def test_placement_logging_and_step_stats(caplog):
    with tf.device("/gpu:0"):
        y = tf.matmul(tf.constant(np.eye(2, dtype=np.float32)), tf.constant([[1.0], [2.0]]), name="mm")
    config = tf.ConfigProto(log_device_placement=True)
    meta = tf.RunMetadata()
    with caplog.at_level(logging.INFO, logger="dtf"), tf.Session(config=config) as sess:
        out = sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        devices = [d.name for d in sess.list_devices()]
    np.testing.assert_allclose(out, [[1], [2]])
    assert "mm: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0" in caplog.text
    gpu_stats = [d for d in meta.step_stats.dev_stats if d.device.endswith("GPU:0")]
    assert gpu_stats and "mm" in [s.node_name for s in gpu_stats[0].node_stats]
    assert "/job:localhost/replica:0/task:0/device:GPU:0" in devices


def test_cpu_only_graphs_keep_the_fast_path():
    with tf.Session() as sess:
        assert sess.run(tf.constant(2.0) * 3.0) == 6.0
        assert sess._backend._gpu_backend is None


def test_status_reports_gpus_and_placement_uses_them():
    from dtf.runtime.service import TaskService

    task = TaskService({"w": {0: "in-process"}}, "w", 0, listen=False)
    try:
        assert task.status()["gpus"] == 1
        assert task.master.cluster_view().gpu_count("w", 0) == 1
    finally:
        task.stop()
    node = NodeDef("m", "MatMul", ["a:0", "b:0"], [], "/job:w/task:1/device:GPU:0", {"T": tf.float32},
                   [tf.float32])
    view = ClusterView({"w": {0, 1}}, "w", 0, {("w", 1): 1})
    assert place([node], view) == {"m": "/job:w/replica:0/task:1/device:GPU:0"}
    with pytest.raises(tf.errors.InvalidArgumentError, match="task:0 has 0 GPU"):
        place([NodeDef("m", "MatMul", [], [], "/job:w/task:0/device:GPU:0", {"T": tf.float32},
                       [tf.float32])], view)


def test_ops_without_a_cuda_kernel_run_on_the_host_inside_a_gpu_partition():
    """Cumsum, Cumprod and TopKV2 run their CPU kernel on a GPU device (inputs copied to
    the host); the GPU kernels around them take and give device arrays as usual."""
    tf.reset_default_graph()
    x = np.array([[1.0, 4.0, 2.0], [3.0, 0.5, 5.0]], np.float32)
    with tf.device("/gpu:0"):
        t = tf.constant(x) * 2.0
        scanned = tf.cumsum(t, 1, exclusive=True) + tf.cumprod(t, 0, reverse=True)
        values, indices = tf.nn.top_k(t, 2)
        out = values * 3.0
    with tf.Session() as sess:
        got_scan, got_out, got_idx = sess.run([scanned, out, indices])
    t2 = x * 2
    want_scan = np.concatenate([np.zeros((2, 1)), np.cumsum(t2, 1)[:, :-1]], 1) + \
        np.flip(np.cumprod(np.flip(t2, 0), 0), 0)
    np.testing.assert_allclose(got_scan, want_scan, rtol=1e-6)
    np.testing.assert_array_equal(got_idx, [[1, 2], [2, 0]])
    np.testing.assert_allclose(got_out, [[24.0, 12.0], [30.0, 18.0]])


def test_graph_utilities_run_on_the_host_inside_a_gpu_partition(capfd):
    """Print, CheckNumerics, Assert, PyFunc and IdentityN placed on a GPU run their CPU
    kernels on the host between GPU kernels, without soft placement."""
    tf.reset_default_graph()
    x = np.array([1.0, -2.0, 3.0], np.float32)

    @tf.custom_gradient
    def twice(v):
        return v * 2.0, lambda dy: dy * 2.0

    with tf.device("/gpu:0"):
        t = tf.constant(x) * 2.0
        printed = tf.Print(t, [t], "on gpu: ")
        checked = tf.check_numerics(printed + 1.0, "checked")
        guard = tf.Assert(tf.reduce_all(checked > -10.0), [checked])
        with tf.control_dependencies([guard]):
            through = tf.py_func(lambda v: v * 10, [checked], tf.float32) * 1.0
        doubled = twice(t)
        grad = tf.gradients(tf.reduce_sum(doubled), t)[0]
        bad = tf.check_numerics(t * np.float32(np.nan), "checked")
    with tf.Session() as sess:
        got, got_double, got_grad = sess.run([through, doubled, grad])
        with pytest.raises(tf.errors.InvalidArgumentError, match="checked : Tensor had NaN"):
            sess.run(bad)
    np.testing.assert_allclose(got, (x * 2 + 1) * 10)
    np.testing.assert_allclose(got_double, x * 4)
    np.testing.assert_allclose(got_grad, [2.0, 2.0, 2.0])
    assert "on gpu: [2 -4 6]" in capfd.readouterr().err
