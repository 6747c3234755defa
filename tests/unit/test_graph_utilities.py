"""Print, tf.print, Assert, check_numerics, the assert_* family, py_func, make_template,
hessians and custom_gradient: what they write, the exact messages TF 1.15 gives, the
reference kernels and finite-difference gradients."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

RNG = np.random.RandomState(11)


def test_print_writes_tfs_summaries_to_stderr_and_returns_its_input(capfd):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    p = tf.Print(x, [x, tf.constant("s"), tf.constant([1, 2, 3, 4, 5])], "Msg: ", summarize=4)
    once = tf.Print(x, [x], first_n=1)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(p), [[1, 2], [3, 4]])
        sess.run(once)
        sess.run(once)
        sess.run(tf.Print(tf.constant(1.0), [tf.constant([0.1, -2.5e10, np.nan]),
                                             tf.constant([1.0], tf.float64) / 3]))
    err = capfd.readouterr().err.splitlines()
    assert err == ["Msg: [[1 2][3 4]][s][1 2 3 4...]", "[[1 2][3...]...]",
                   "[0.1 -2.5e+10 nan][0.33333333333333331]"]


def test_tf_print_formats_like_numpy_and_writes_where_asked(capfd, tmp_path):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    target = tmp_path / "log.txt"
    with tf.Session() as sess:
        sess.run(tf.print("hello", x, tf.constant([1, 2, 3, 4, 5, 6, 7]), {"b": x, "a": 1},
                          output_stream=sys.stdout))
        sess.run(tf.print(tf.constant([True]), tf.constant([["a"]]), summarize=2, sep="|",
                          end="!\n"))
        sess.run(tf.print(tf.constant("raw"), output_stream=f"file://{target}"))
    out, err = capfd.readouterr()
    assert out == "hello [[1 2]\n [3 4]] [1 2 3 ... 5 6 7] {'a': 1, 'b': [[1 2]\n [3 4]]}\n"
    assert err == '[1]|[["a"]]!\n'
    assert target.read_text() == "raw\n"
    with pytest.raises(ValueError, match="Unsupported output stream"):
        tf.print(x, output_stream=object())


def test_assert_messages_are_tf_1_15s():
    x = tf.placeholder(tf.float32, [None], name="x")
    eq = tf.assert_equal(x, tf.constant([1.0, 2.0, 4.0]), message="msg here")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(eq, {x: [1, 2, 3]})
        assert str(e.value).startswith(
            "assertion failed: [msg here] [Condition x == y did not hold element-wise:] "
            "[x (x:0) = ] [1 2 3] [y (Const:0) = ] [1 2 4]")
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"assertion failed: \[\] \[Condition x > 0 did not hold "
                                 r"element-wise:\] \[x \(x:0\) = \] \[1 -3\]"):
            sess.run(tf.assert_positive(x), {x: [1, -3]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[-5 -4\.\.\.\]"):
            sess.run(tf.Assert(tf.reduce_all(x > 0), [x], summarize=2), {x: np.arange(-5, 5)})
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Condition x == y did not hold element-wise:\nx \\(Const_\\d+:0\\) = \n\\[1 2\\]"):
        tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3]))
    with pytest.raises(ValueError, match=r"Tensor Const_\d+:0 must have rank 2.  Received rank 1, "
                                         r"shape \(2,\)"):
        tf.assert_rank(tf.constant([1, 2]), 2)
    with pytest.raises(TypeError, match="must be of type tf.int32"):
        tf.debugging.assert_type(tf.constant([1.0]), tf.int32)


def test_check_numerics_names_what_it_found():
    x = tf.placeholder(tf.float32, [2])
    c = tf.check_numerics(x, "my msg")
    with tf.Session() as sess:
        for value, found in (([1, np.nan], "NaN"), ([np.inf, 1], "Inf"),
                             ([np.inf, np.nan], "Inf and NaN")):
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=f"my msg : Tensor had {found} values"):
                sess.run(c, {x: value})


def test_reference_kernels_and_gradients():
    x = tf.constant(RNG.randn(3, 4).astype(np.float32))
    check_against_reference(tf.Print(x, [x]))
    check_against_reference(tf.check_numerics(x, "m"))
    check_against_reference(tf.identity_n([x, x * 2])[1])
    check_gradient(lambda t: tf.Print(t * t, [t]), [RNG.randn(3, 2)])
    check_gradient(lambda t: tf.check_numerics(tf.sin(t), "m"), [RNG.randn(4)])
    check_gradient(lambda t: tf.identity_n([t, t * t])[1], [RNG.randn(3)])


def test_custom_gradient_gradient_matches_finite_differences_of_the_true_function():
    @tf.custom_gradient
    def softplus(v):
        e = tf.exp(v)
        return tf.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
    check_gradient(softplus, [RNG.randn(5)])
    v = tf.Variable(1.0)

    def makes_a_variable(t):
        return t * tf.Variable(2.0), lambda dy: dy
    with pytest.raises(TypeError, match="ResourceVariable"):
        tf.custom_gradient(makes_a_variable)(tf.constant(1.0))
    assert v is not None


def test_gradient_override_map_applies_to_ops_made_inside_it():
    @tf.RegisterGradient("TimesTen")
    def _times_ten(op, grad):
        return grad * 10.0
    g = tf.get_default_graph()
    x = tf.constant(3.0)
    with g.gradient_override_map({"Identity": "TimesTen"}):
        overridden = tf.identity(x)
    plain = tf.identity(x)
    assert run(tf.gradients(overridden, x))[0] == 10.0
    assert run(tf.gradients(plain, x))[0] == 1.0


def test_hessians_need_a_static_shape():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(NotImplementedError, match="fully defined shape"):
        tf.hessians(tf.reduce_sum(x * x), x)


def test_py_func_in_a_local_session_and_its_messages():
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="0-th value returned by pyfunc_\\d+ is double, but expects float"):
            sess.run(tf.py_func(lambda v: 1.5, [x], tf.float32), {x: [1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="returns 2 values, but expects to see 1 values"):
            sess.run(tf.py_func(lambda v: (v, v), [x], tf.float32), {x: [1.0]})
        with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError: division by zero"):
            sess.run(tf.py_func(lambda v: 1 / 0, [x], tf.float32), {x: [1.0]})
        assert sess.run(tf.py_func(lambda v: np.float64(v.sum()), [x], tf.float64),
                        {x: [1.0, 2.0]}).shape == ()


def test_make_template_refuses_new_trainable_variables_on_later_calls():
    t = tf.make_template("bad", lambda v: v * tf.Variable(1.0))
    t(tf.constant(1.0))
    with pytest.raises(ValueError, match="Trainable variable created when calling a template"):
        t(tf.constant(1.0))
    with pytest.raises(ValueError, match="name cannot be None"):
        tf.make_template(None, lambda: None)


def test_tf_print_can_write_through_tf_logging(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    with caplog.at_level(tf.logging.INFO, logger="dtf"), tf.Session() as sess:
        sess.run(tf.print("loss", tf.constant(0.5), output_stream=tf.logging.info))
        sess.run(tf.print("careful", output_stream=tf.logging.warning))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "loss 0.5"), ("WARNING", "careful")]
    assert tf.get_logger() is tf.logging.get_logger()


def test_py_func_takes_a_gradient_through_gradient_override_map():
    """TF1's usual way to differentiate a py_func: override PyFunc's gradient."""
    @tf.RegisterGradient("CubeGrad")
    def _cube_grad(op, grad):
        return [grad * 3.0 * tf.square(op.inputs[0])]
    x = tf.constant([1.0, 2.0])
    with tf.get_default_graph().gradient_override_map({"PyFunc": "CubeGrad"}):
        y = tf.py_func(lambda v: v ** 3, [x], tf.float32)
    np.testing.assert_allclose(run(tf.gradients(y, x))[0], [3.0, 12.0])
