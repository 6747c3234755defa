import numpy as np
import pytest

import dtf as tf


def _op_names():
    return [op.name for op in tf.get_default_graph().get_operations()]


# -- tf.Variable ------------------------------------------------------------------------
def test_variable_ops_names_and_collections():
    v = tf.Variable([1.0, 2.0], name="v")
    u = tf.Variable(3, trainable=False)
    assert v.name == "v:0" and u.name == "Variable:0"
    assert _op_names() == ["v/initial_value", "v", "v/Assign", "v/read",
                           "Variable/initial_value", "Variable", "Variable/Assign", "Variable/read"]
    assert v.op.type == "VariableV2" and v.initializer.name == "v/Assign"
    assert v.value().name == "v/read:0" and v.dtype == tf.float32 and u.dtype == tf.int32
    assert v.shape.as_list() == [2] and v.get_shape().as_list() == [2]
    assert tf.global_variables() == [v, u] and tf.trainable_variables() == [v]
    assert tf.Variable(1.0, name="v").name == "v_1:0"


def test_uninitialized_read_and_report():
    v = tf.Variable(tf.zeros([2]), name="weights")
    w = tf.Variable(1.0, name="other")
    with tf.Session() as s:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights"):
            s.run(v + 1.0)
        assert list(s.run(tf.report_uninitialized_variables())) == [b"weights", b"other"]
        assert not s.run(tf.is_variable_initialized(v))
        s.run(v.initializer)
        assert list(s.run(tf.report_uninitialized_variables())) == [b"other"]
        s.run(tf.variables_initializer([w]))
        assert s.run(tf.report_uninitialized_variables()).shape == (0,)


def test_initializer_op_names():
    tf.Variable(1.0)
    assert tf.global_variables_initializer().name == "init"
    assert tf.local_variables_initializer().name == "init_1"


def test_assign_family_and_read_value():
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        np.testing.assert_allclose(s.run(v.assign([5.0, 6.0])), [5, 6])
        np.testing.assert_allclose(s.run(v.assign_add([1.0, 1.0])), [6, 7])
        np.testing.assert_allclose(s.run(tf.assign_sub(v, [2.0, 2.0])), [4, 5])
        np.testing.assert_allclose(s.run(v.read_value()), [4, 5])
        np.testing.assert_allclose(v.eval(s), [4, 5])
        assert isinstance(v.assign([0.0, 0.0], read_value=False), tf.Operation)
        v.load([9.0, 8.0], s)
        np.testing.assert_allclose(s.run(v), [9, 8])


def test_assign_shape_rules():
    v = tf.Variable(tf.zeros([2, 3]))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(3,\)"):
        v.assign([1.0, 2.0, 3.0])
    p = tf.placeholder(tf.float32)
    a = v.assign(p)
    loose = tf.assign(v, p, validate_shape=False)
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"lhs shape= \[2,3\] rhs shape= \[3\]"):
            s.run(a, {p: [1.0, 2.0, 3.0]})
        assert s.run(loose, {p: [1.0, 2.0, 3.0]}).shape == (3,)


def test_initialized_value_orders_dependent_initializers():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(v.initialized_value() * 3.0)
    with tf.Session() as s:
        s.run(w.initializer)  # v not initialized yet: uses v's initial value
        np.testing.assert_allclose(s.run(w), [3, 6])


def test_operator_overloads_and_conversion():
    v = tf.Variable(2.0)
    exprs = [v + 1.0, 1.0 + v, v * v, -v, v ** 2, v / 4.0, v > 1.0, tf.identity(v)]
    with tf.Session() as s:
        s.run(v.initializer)
        assert s.run(exprs) == [3.0, 3.0, 4.0, -2.0, 4.0, 0.5, True, 2.0]
    with pytest.raises(ValueError, match="Incompatible type conversion"):
        tf.convert_to_tensor(v, dtype=tf.int32)


def test_control_dependencies_do_not_leak_into_variables():
    c = tf.constant(1.0)
    with tf.control_dependencies([c]):
        v = tf.Variable(1.0)
    assert v.initializer.control_inputs == [] and v.op.control_inputs == []


# -- initializers ---------------------------------------------------------------------
def _value(initializer, shape, dtype=tf.float32):
    v = tf.get_variable(f"v{len(tf.global_variables())}", shape, dtype=dtype, initializer=initializer)
    with tf.Session() as s:
        s.run(v.initializer)
        return s.run(v)


def test_constant_initializers():
    np.testing.assert_array_equal(_value(tf.zeros_initializer(), [2, 2]), np.zeros((2, 2)))
    np.testing.assert_array_equal(_value(tf.ones_initializer(), [3], tf.int32), [1, 1, 1])
    np.testing.assert_array_equal(_value(tf.constant_initializer(7.5), [2]), [7.5, 7.5])
    np.testing.assert_array_equal(_value(tf.constant_initializer([1, 2, 3, 4]), [2, 2]),
                                  [[1, 2], [3, 4]])


def test_random_initializers_statistics():
    u = _value(tf.random_uniform_initializer(-2.0, 3.0, seed=1), [4000])
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.1
    n = _value(tf.random_normal_initializer(1.0, 2.0, seed=1), [4000])
    assert abs(n.mean() - 1.0) < 0.15 and abs(n.std() - 2.0) < 0.15
    t = _value(tf.truncated_normal_initializer(0.0, 1.0, seed=1), [4000])
    assert np.abs(t).max() <= 2.0
    g = _value(tf.glorot_uniform_initializer(seed=1), [30, 50])
    assert np.abs(g).max() <= np.sqrt(6.0 / 80) and g.std() > 0.5 * np.sqrt(2.0 / 80)
    gn = _value(tf.glorot_normal_initializer(seed=1), [100, 100])
    assert abs(gn.std() - np.sqrt(1.0 / 100)) < 0.01
    o = _value(tf.orthogonal_initializer(seed=1), [4, 4])
    np.testing.assert_allclose(o @ o.T, np.eye(4), atol=1e-5)


def test_initializer_seeds_repeat_across_sessions():
    v = tf.get_variable("v", [5], initializer=tf.random_normal_initializer(seed=3))
    w = tf.get_variable("w", [5], initializer=tf.random_normal_initializer(seed=4))
    runs = []
    for _ in range(2):
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            runs.append(s.run([v, w]))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert not np.allclose(runs[0][0], runs[0][1])


def test_random_initializer_requires_float():
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.random_normal_initializer(dtype=tf.int32)


def test_initializers_namespace():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.zeros([2]).op.type == "Const"  # the op, not the initializer class


# -- variable_scope / get_variable ------------------------------------------------------
def test_get_variable_names_scopes_and_defaults():
    with tf.variable_scope("foo"):
        with tf.variable_scope("bar"):
            v = tf.get_variable("v", [1])
            c = tf.constant(1.0, name="c")
        i = tf.get_variable("i", [2], dtype=tf.int32)
    assert v.name == "foo/bar/v:0" and c.name == "foo/bar/c:0"
    assert "foo/bar/v/Initializer/random_uniform" in _op_names()
    with tf.Session() as s:
        s.run(i.initializer)
        np.testing.assert_array_equal(s.run(i), [0, 0])
    with tf.variable_scope("foo"):  # same variable scope, uniquified name scope
        assert tf.constant(1.0, name="c").name == "foo_1/c:0"
        assert tf.get_variable_scope().name == "foo"


def test_get_variable_reuse_rules():
    with tf.variable_scope("foo"):
        v = tf.get_variable("v", [1])
    with pytest.raises(ValueError, match=r"Variable foo/v already exists, disallowed. Did you mean "
                                         r"to set reuse=True"):
        with tf.variable_scope("foo"):
            tf.get_variable("v", [1])
    with tf.variable_scope("foo", reuse=True):
        assert tf.get_variable("v", [1]) is v
        with pytest.raises(ValueError, match=r"Variable foo/w does not exist, or was not created "
                                             r"with tf.get_variable\(\)"):
            tf.get_variable("w", [1])
        with pytest.raises(ValueError, match="specified shape"):
            tf.get_variable("v", [2])
    with tf.variable_scope("foo") as scope:
        scope.reuse_variables()
        assert tf.get_variable("v") is v
    for _ in range(2):
        with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
            a = tf.get_variable("a", [1])
    assert [x.name for x in tf.global_variables()] == ["foo/v:0", "auto/a:0"]
    assert a.name == "auto/a:0"


def test_reentering_a_scope_object_and_default_names():
    with tf.variable_scope("outer") as outer:
        pass
    with tf.variable_scope("other"):
        with tf.variable_scope(outer):
            v = tf.get_variable("v", [1])
            assert tf.get_variable_scope().original_name_scope == "outer/"
            assert tf.constant(0.0, name="k").name == "other/outer/k:0"
    assert v.name == "outer/v:0"
    names = []
    for _ in range(2):
        with tf.variable_scope(None, default_name="layer"):
            names.append(tf.get_variable("w", [1]).name)
    assert names == ["layer/w:0", "layer_1/w:0"]
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="x", reuse=True):
            pass


def test_scope_initializer_dtype_and_regularizer():
    with tf.variable_scope("s", initializer=tf.constant_initializer(2.0), dtype=tf.float64,
                           regularizer=lambda w: tf.reduce_sum(w)):
        v = tf.get_variable("v", [2])
        u = tf.get_variable("u", initializer=np.array([1, 2], np.int64))
    assert v.dtype == tf.float64 and u.dtype == tf.int64
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2 and losses[0].name.startswith("s/v/Regularizer/")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(losses[0]) == 4.0
    with pytest.raises(ValueError, match="do not specify shape"):
        tf.get_variable("c", [2], initializer=np.zeros(2))
    with pytest.raises(ValueError, match="don't match"):
        tf.get_variable("d", dtype=tf.float32, initializer=np.zeros(2))


def test_get_local_variable_and_custom_getter():
    loc = tf.get_local_variable("loc", [1])
    assert tf.local_variables() == [loc] and loc not in tf.trainable_variables()
    seen = []

    def getter(base, name, *args, **kwargs):
        seen.append(name)
        return base(name, *args, **kwargs)

    with tf.variable_scope("c", custom_getter=getter):
        tf.get_variable("x", [1])
    assert seen == ["c/x"]


# -- global step ----------------------------------------------------------------------
def test_global_step():
    assert tf.train.get_global_step() is None
    gs = tf.train.get_or_create_global_step()
    assert gs.name == "global_step:0" and gs.dtype == tf.int64
    assert tf.train.get_or_create_global_step() is gs and tf.train.get_global_step() is gs
    assert gs in tf.get_collection(tf.GraphKeys.GLOBAL_STEP) and gs not in tf.trainable_variables()
    with pytest.raises(ValueError, match='"global_step" already exists'):
        tf.train.create_global_step()
    with tf.Session() as s:
        s.run(gs.initializer)
        assert tf.train.global_step(s, gs) == 0
