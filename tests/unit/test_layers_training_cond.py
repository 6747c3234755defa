"""tf.layers with a ``training`` Tensor build a tf.cond (TF's smart_cond): only the branch
taken runs. Checked by counting the kernel calls a step makes; the values against TF are in
tests/goldens/cases_layers.py."""
import dataclasses

import numpy as np
import pytest

import dtf as tf
from dtf.kernels import registry
from dtf.ops.smart_cond import smart_cond, smart_constant_value


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


@pytest.fixture
def kernel_calls(monkeypatch):
    """``kernel_calls(*op_types)`` -> a dict op type -> how many times its CPU kernels ran
    (inside If bodies too) from then on."""
    counts = {}

    def count(*op_types):
        registry.load_all()
        for op_type in op_types:
            counts[op_type] = 0
            entries = registry._KERNELS[(op_type, "CPU")]
            monkeypatch.setitem(registry._KERNELS, (op_type, "CPU"),
                                [dataclasses.replace(e, factory=_counting(e.factory, op_type, counts))
                                 for e in entries])
        return counts

    return count


def _counting(factory, op_type, counts):
    def counting_factory(node):
        kernel = factory(node)

        def run(*args, **kwargs):
            counts[op_type] += 1
            return kernel(*args, **kwargs)
        return run
    return counting_factory


def test_dropout_draws_no_mask_when_a_fed_training_is_false(kernel_calls):
    x = tf.placeholder(tf.float32, [4, 5])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.5, training=training, seed=1)
    xv = np.arange(20, dtype=np.float32).reshape(4, 5)
    calls = kernel_calls("RandomUniform")
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: xv, training: False}), xv)
        assert calls["RandomUniform"] == 0
        on = sess.run(y, {x: xv, training: True})
        assert calls["RandomUniform"] == 1
    assert set(np.unique(on[xv != 0])) <= {0.0} | set(2 * xv.ravel())


def test_fused_batch_norm_computes_no_batch_statistics_at_inference(kernel_calls):
    x = tf.placeholder(tf.float32, [2, 3, 3, 4])
    training = tf.placeholder_with_default(False, [])
    y = tf.layers.batch_normalization(x, training=training, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    xv = np.random.RandomState(0).randn(2, 3, 3, 4).astype(np.float32) + 3
    # Both branches are one FusedBatchNormV3 op (inference and training): only the taken
    # one may run.
    calls = kernel_calls("FusedBatchNormV3")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: xv})
        assert calls["FusedBatchNormV3"] == 1
        np.testing.assert_allclose(out, xv / np.sqrt(1 + 1e-3), rtol=1e-5)
        moving = sess.run(tf.global_variables()[2:])
        np.testing.assert_array_equal(moving[0], np.zeros(4))
        np.testing.assert_array_equal(moving[1], np.ones(4))
        sess.run([y, updates], {x: xv, training: True})
        assert calls["FusedBatchNormV3"] == 2
        mean = sess.run(tf.global_variables()[2])
    np.testing.assert_allclose(mean, 0.5 * xv.mean(axis=(0, 1, 2)), rtol=1e-5)


def test_batch_norm_updates_run_no_assignment_when_a_fed_training_is_false(kernel_calls):
    x = tf.placeholder(tf.float32, [6, 3])  # 2-D: the non-fused path
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=training, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    xv = np.random.RandomState(1).randn(6, 3).astype(np.float32)
    calls = kernel_calls("AssignSub")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([y, updates], {x: xv, training: False})
        assert calls["AssignSub"] == 0
        sess.run([y, updates], {x: xv, training: True})
        assert calls["AssignSub"] == 2
        mean = sess.run(tf.global_variables()[2])
    np.testing.assert_allclose(mean, 0.5 * xv.mean(axis=0), rtol=1e-5, atol=1e-7)


def test_smart_cond_picks_a_static_branch_and_builds_a_cond_otherwise():
    assert smart_cond(True, lambda: 1, lambda: 2) == 1
    assert smart_cond(0, lambda: 1, lambda: 2) == 2
    assert smart_constant_value(tf.constant(False)) is False
    assert smart_constant_value(tf.identity(tf.constant(True))) is True
    assert smart_constant_value(tf.placeholder_with_default(True, [])) is None
    assert smart_constant_value(tf.Variable(True)) is None
    p = tf.placeholder(tf.bool, [])
    out = smart_cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
    assert out.op.type == "If"
    with tf.Session() as sess:
        assert sess.run(out, {p: False}) == 2.0
    with pytest.raises(TypeError, match="true_fn"):
        smart_cond(p, 1, lambda: 2)
    with pytest.raises(TypeError, match="pred"):
        smart_cond("yes", lambda: 1, lambda: 2)
