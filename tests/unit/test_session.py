"""Session semantics: fetch structures, feeds, defaults, closing, tracing, error classes."""
import collections

import numpy as np
import pytest

import dtf as tf
from dtf.framework import errors


def test_fetch_nesting_of_lists_tuples_dicts_namedtuples_and_ops():
    a = tf.constant(1)
    b = tf.constant([2.0, 3.0])
    op = tf.no_op()
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"a": a, "rest": [b, (a, op)], "p": Pair(a, b), "name": "Const:0"})
    assert out["a"] == 1 and out["name"] == 1
    np.testing.assert_array_equal(out["rest"][0], [2.0, 3.0])
    assert out["rest"][1] == (1, None)
    assert isinstance(out["p"], Pair) and out["p"].x == 1


def test_feeds_by_tensor_and_by_name_and_default():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    d = tf.placeholder_with_default(tf.constant(5.0), [], name="d")
    y = tf.reduce_sum(x) * d
    with tf.Session() as sess:
        assert sess.run(y, {x: [[1, 2]]}) == 15.0
        assert sess.run(y, {"x:0": [[1, 2]], d: 2.0}) == 6.0


def test_missing_feed_is_invalid_argument_naming_the_placeholder():
    x = tf.placeholder(tf.float32, [None, 3], name="inputs")
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="inputs.*float.*\\[\\?,3\\]"):
            sess.run(x * 2.0)


def test_feed_shape_mismatch_is_value_error():
    x = tf.placeholder(tf.float32, [2], name="p")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor 'p:0', which has shape '\(2,\)'"):
            sess.run(x, {x: [1, 2, 3]})


def test_feed_shape_checks_each_known_dimension_and_the_rank():
    x = tf.placeholder(tf.float32, [None, 2], name="q")
    anything = tf.placeholder(tf.float32, None, name="any")
    with tf.Session() as sess:
        assert sess.run(tf.reduce_sum(x), {x: np.ones((3, 2))}) == 6.0
        with pytest.raises(ValueError, match=r"shape \(3, 3\) for Tensor 'q:0', which has shape '\(\?, 2\)'"):
            sess.run(x, {x: np.ones((3, 3))})
        with pytest.raises(ValueError, match=r"shape \(2,\) for Tensor 'q:0'"):
            sess.run(x, {x: np.ones(2)})
        assert sess.run(anything, {anything: np.ones((1, 2, 3))}).shape == (1, 2, 3)
        x.set_shape([4, 2])  # a shape refined after runs is what later feeds are checked against
        with pytest.raises(ValueError, match=r"shape \(3, 2\) for Tensor 'q:0', which has shape '\(4, 2\)'"):
            sess.run(x, {x: np.ones((3, 2))})


def test_a_fetched_variable_reuses_its_fetch_plan_and_reads_fresh_values():
    v = tf.Variable(1.0)
    bump = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        for expected in (2.0, 3.0):
            sess.run(bump)
            assert sess.run([v]) == [expected]
        assert len(sess._fetch_plans) == 3  # v.initializer's, bump's, and [v]'s once


def test_feed_value_cannot_be_a_tensor():
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
            sess.run(x, {x: tf.constant(1.0)})


def test_bad_fetch_is_type_error():
    tf.constant(1)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="Fetch argument 12 has invalid type"):
            sess.run(12)
        with pytest.raises(TypeError, match="Fetch argument None"):
            sess.run(None)


def test_closed_session_is_runtime_error():
    c = tf.constant(1)
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_eval_and_run_on_default_session_and_interactive_session():
    c = tf.constant(4) * 2
    with pytest.raises(ValueError, match="No default session"):
        c.eval()
    with tf.Session().as_default():
        assert c.eval() == 8
    sess = tf.InteractiveSession()
    try:
        assert c.eval() == 8
        v = tf.Variable(1.0)
        v.initializer.run()
        assert v.eval() == 1.0
    finally:
        sess.close()


def test_uninitialized_variable_is_failed_precondition():
    v = tf.Variable(3.0, name="weights")
    with tf.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value weights"):
            sess.run(v + 1.0)


def test_out_of_range_gather_is_invalid_argument():
    i = tf.placeholder(tf.int32, [])
    g = tf.gather(tf.constant([1, 2, 3]), i)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="GatherV2"):
            sess.run(g, {i: 5})


def test_shape_errors_at_construction_are_value_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))


def test_op_names_follow_tf():
    a = tf.constant(1)
    b = tf.constant(2)
    c = a + b
    with tf.name_scope("layer1"):
        s = tf.multiply(c, 3, name="scaled")
    with tf.name_scope("layer1"):
        t = tf.identity(s, name="scaled")
    assert [a.name, b.name, c.name, s.name, t.name] == [
        "Const:0", "Const_1:0", "add:0", "layer1/scaled:0", "layer1_1/scaled:0"]
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("add:0") is c
    assert g.get_operation_by_name("layer1/scaled") is s.op
    assert [o.name for o in g.get_operations()][:3] == ["Const", "Const_1", "add"]


def test_control_dependencies_order_side_effects():
    v = tf.Variable(0)
    inc = tf.assign_add(v, 1)
    with tf.control_dependencies([inc]):
        read = tf.identity(v)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(read) == 1
        assert sess.run(read) == 2


def test_full_trace_fills_step_stats():
    y = tf.constant(2) + 300
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    dev = md.step_stats.dev_stats[0]
    assert dev.device.endswith("device:CPU:0")
    assert "add" in {n.node_name for n in dev.node_stats}


def test_config_proto_accepts_tf_fields():
    cfg = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                         inter_op_parallelism_threads=2, intra_op_parallelism_threads=2,
                         operation_timeout_in_ms=1000, device_filters=["/job:ps"])
    cfg.gpu_options.allow_growth = True
    with tf.Session(config=cfg) as sess:
        assert sess.run(tf.constant(3)) == 3
    with pytest.raises(ValueError):
        tf.ConfigProto(no_such_field=1)


def test_string_tensors():
    s = tf.constant(["a", "bc"])
    with tf.Session() as sess:
        assert list(sess.run(s)) == [b"a", b"bc"]


def test_graph_as_default_and_reset():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1)
        assert tf.get_default_graph() is g
    assert c.graph is g
    with pytest.raises(ValueError):
        with tf.Session() as sess:  # default graph does not hold c
            tf.constant(0)
            sess.run(c)


def test_matmul_operator_names_its_op_like_tf():
    a, b = tf.ones([2, 3]), tf.ones([3, 4])
    assert (a @ b).name == "matmul:0"
    assert tf.matmul(a, b).name == "MatMul_1:0"  # names are unique case-insensitively


def test_make_callable_runs_its_step_like_run_and_fails_like_tf():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0)
        inc = tf.assign_add(v, 2.0)
        x = tf.placeholder(tf.float32, [2])
        y = x * 3.0
        nothing = tf.no_op()
    sess = tf.Session(graph=g)
    sess.run(v.initializer)
    step = sess.make_callable(inc.op)
    assert step() is None and step() is None
    assert sess.run(v) == 5.0
    read = sess.make_callable({"v": v, "both": (v, nothing)})
    assert read() == {"v": 5.0, "both": (5.0, None)}
    assert sess.make_callable(y, feed_list=[x])([1.0, 2.0]).tolist() == [3.0, 6.0]
    with pytest.raises(TypeError, match="feed_list"):
        sess.make_callable(y, feed_list=x)
    traced = sess.make_callable(v, accept_options=True)
    meta = tf.RunMetadata()
    assert traced(options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta) == 5.0
    assert meta.step_stats.dev_stats
    with pytest.raises(TypeError):
        sess.make_callable(None)
    with pytest.raises(TypeError):
        step(1)
    with g.as_default():  # a node added later is still placed before the next call
        with tf.device("/job:ps/task:0"):
            tf.constant(1.0, name="elsewhere")
    with pytest.raises(errors.InvalidArgumentError, match="elsewhere"):
        step()
    sess.close()
    with pytest.raises(errors.CancelledError, match="closed"):
        read()
