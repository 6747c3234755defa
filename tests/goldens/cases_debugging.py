"""Graph utilities: Print, check_numerics, Assert and the assert_* family (values, gradients
and which error class each failure raises, at build or at run time), py_func."""
import numpy as np

from tests.goldens.harness import case


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # the golden records the class TF raises
        return type(e).__name__
    return "ok"


@case
def print_and_check_numerics_pass_values_and_gradients(tf):
    rng = np.random.RandomState(5)
    x = tf.placeholder(tf.float32, [3, 2])
    y = tf.Print(x * 2.0, [x, tf.constant("tag")], "x: ", summarize=2)
    z = tf.check_numerics(tf.square(y), "square")
    w = tf.debugging.check_numerics(z, "again") + tf.verify_tensor_all_finite(x, "x finite")
    loss = tf.reduce_sum(w * x)
    dx = tf.gradients(loss, x)[0]
    return {"y": y, "z": z, "w": w, "dx": dx}, {x: rng.randn(3, 2).astype(np.float32)}


@case
def check_numerics_fails_at_run_time(tf):
    x = tf.placeholder(tf.float32, [2])
    checked = tf.check_numerics(x, "bad input")
    grad = tf.gradients(tf.reduce_sum(tf.check_numerics(tf.log(x), "log")), x)[0]
    build = {"int": _error_of(lambda: tf.check_numerics(tf.constant([1]), "m"))}

    def run(sess):
        return {**build,
                "nan": _error_of(lambda: sess.run(checked, {x: [1.0, np.nan]})),
                "inf": _error_of(lambda: sess.run(checked, {x: [np.inf, 1.0]})),
                "fine": sess.run(checked, {x: [1.0, 2.0]}),
                "grad_fine": sess.run(grad, {x: [1.0, 2.0]}),
                "grad_bad": _error_of(lambda: sess.run(grad, {x: [0.0, 2.0]}))}
    return run


@case
def asserts_fail_at_run_time_with_invalid_argument(tf):
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    checks = {
        "equal": tf.assert_equal(x, y), "none_equal": tf.assert_none_equal(x, y),
        "less": tf.assert_less(x, y), "less_equal": tf.debugging.assert_less_equal(x, y),
        "greater": tf.assert_greater(x, y), "greater_equal": tf.assert_greater_equal(x, y),
        "positive": tf.assert_positive(x), "negative": tf.assert_negative(x),
        "non_negative": tf.assert_non_negative(x), "non_positive": tf.assert_non_positive(x),
        "near": tf.assert_near(x, y, rtol=0.0, atol=0.5),
        "Assert": tf.Assert(tf.reduce_all(x > -5.0), [x, "text"]),
    }
    with tf.control_dependencies([checks["positive"]]):
        guarded = tf.identity(x * 3.0)
    feeds = {"same": ([1.0, 2.0], [1.0, 2.0]), "smaller": ([1.0, 2.0], [2.0, 3.0]),
             "mixed": ([-1.0, 2.0], [1.0, 2.2]), "negative": ([-6.0, -1.0], [-6.0, -0.9])}

    def run(sess):
        out = {}
        for fname, (xv, yv) in feeds.items():
            for cname, op in checks.items():
                out[f"{fname}_{cname}"] = _error_of(lambda: sess.run(op, {x: xv, y: yv}))
            out[f"{fname}_guarded"] = _error_of(lambda: sess.run(guarded, {x: xv}))
        out["guarded_value"] = sess.run(guarded, {x: [1.0, 2.0]})
        return out
    return run


@case
def asserts_decided_while_building(tf):
    a, b = tf.constant([1, 2]), tf.constant([1, 3])
    v = tf.placeholder(tf.float32, [None, 3])
    unknown = tf.placeholder(tf.float32)
    out = {
        "equal_constants_differ": _error_of(lambda: tf.assert_equal(a, b)),
        "equal_constants_same": _error_of(lambda: tf.assert_equal(a, tf.constant([1, 2]))),
        "rank_wrong": _error_of(lambda: tf.assert_rank(v, 3)),
        "rank_right_is_no_op": tf.assert_rank(v, 2).type,
        "rank_at_least_wrong": _error_of(lambda: tf.assert_rank_at_least(v, 3)),
        "rank_in_wrong": _error_of(lambda: tf.assert_rank_in(v, [1, 3])),
        "rank_in_right": tf.assert_rank_in(v, [1, 2]).type,
        "type_wrong": _error_of(lambda: tf.assert_type(v, tf.int32)),
        "type_right": tf.assert_type(v, tf.float32).type,
        "integer_wrong": _error_of(lambda: tf.assert_integer(v)),
        "scalar_wrong": _error_of(lambda: tf.assert_scalar(v)),
        "scalar_right": tf.assert_scalar(tf.constant(1.0)).shape.ndims,
        "proper_iterable_wrong": _error_of(lambda: tf.assert_proper_iterable(a)),
        "proper_iterable_right": _error_of(lambda: tf.assert_proper_iterable([a, b])),
        "same_float_dtype": tf.assert_same_float_dtype([v, tf.constant(1.0)]).name,
        "is_numeric": (tf.is_numeric_tensor(v), tf.is_numeric_tensor(tf.constant("s"))),
    }
    dynamic_rank = tf.assert_rank(unknown, 2)
    monotone = [tf.is_non_decreasing(v), tf.is_strictly_increasing(v)]

    def run(sess):
        return {**out,
                "dynamic_rank_bad": _error_of(lambda: sess.run(dynamic_rank, {unknown: [1.0]})),
                "dynamic_rank_ok": _error_of(lambda: sess.run(dynamic_rank, {unknown: [[1.0]]})),
                "monotone_equal": sess.run(monotone, {v: [[1.0, 2.0, 2.0]]}),
                "monotone_up": sess.run(monotone, {v: [[1.0, 2.0, 3.0]]}),
                "monotone_down": sess.run(monotone, {v: [[3.0, 2.0, 3.0]]})}
    return run


@case
def py_func_values_dtypes_and_errors(tf):
    x = tf.placeholder(tf.float32, [None])
    double = tf.py_func(lambda v: v * 2, [x], tf.float32)
    pair = tf.py_func(lambda v: (v + 1, np.int64(v.size)), [x], [tf.float32, tf.int64])
    stateless = tf.py_func(lambda v: v.sum(), [x], tf.float32, stateful=False)
    numpy_fn = tf.numpy_function(lambda v: v[::-1].copy(), [x], tf.float32)
    text = tf.py_func(lambda s: s + b"!", [tf.constant("hi")], tf.string)
    wrong_dtype = tf.py_func(lambda v: 1.5, [x], tf.float32)
    wrong_count = tf.py_func(lambda v: (v, v), [x], tf.float32)
    raises_value = tf.py_func(lambda v: int("a"), [x], tf.float32)
    raises_other = tf.py_func(lambda v: 1 / 0, [x], tf.float32)
    feed = {x: [1.0, 2.0, 4.0]}
    meta = {"types": [double.op.type, stateless.op.type, numpy_fn.op.type],
            "grad": str(tf.gradients(double, x)), "shape": str(double.shape),
            "pair_is_list": isinstance(pair, list)}

    def run(sess):
        got = sess.run({"double": double, "pair": pair, "stateless": stateless,
                        "numpy_fn": numpy_fn, "text": text}, feed)
        return {**meta, "double": got["double"], "pair_0": got["pair"][0],
                "pair_1": got["pair"][1], "stateless": got["stateless"],
                "numpy_fn": got["numpy_fn"], "text": got["text"],
                "wrong_dtype": _error_of(lambda: sess.run(wrong_dtype, feed)),
                "wrong_count": _error_of(lambda: sess.run(wrong_count, feed)),
                "raises_value": _error_of(lambda: sess.run(raises_value, feed)),
                "raises_other": _error_of(lambda: sess.run(raises_other, feed))}
    return run


@case(rtol=1e-4, atol=1e-5)
def hessians_of_smooth_functions(tf):
    rng = np.random.RandomState(6)
    x = tf.placeholder(tf.float32, [3])
    m = tf.placeholder(tf.float32, [2, 2])
    w = tf.constant(rng.randn(3, 2).astype(np.float32))
    y = tf.reduce_sum(tf.tanh(tf.matmul(tf.reshape(x, [1, 3]), w))) + tf.reduce_sum(x ** 3)
    z = tf.reduce_sum(tf.sigmoid(m) * m) + tf.reduce_prod(m)
    hx, = tf.hessians(y, x)
    hm, hx2 = tf.hessians(y + z, [m, x])
    feeds = {x: rng.randn(3).astype(np.float32), m: rng.randn(2, 2).astype(np.float32)}
    return {"hx": hx, "hm": hm, "hx2": hx2}, feeds


@case(rtol=1e-4, atol=1e-5)
def custom_gradient_replaces_the_gradient(tf):
    @tf.custom_gradient
    def log1pexp(v):
        e = tf.exp(v)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.log(1 + e), grad

    @tf.custom_gradient
    def scaled_product(a, b):
        def grad(dy):
            return tf.clip_by_value(dy, -0.5, 0.5) * b, dy * 2.0
        return a * b, grad

    rng = np.random.RandomState(7)
    x = tf.placeholder(tf.float32, [4])
    a = tf.constant(rng.randn(2, 3).astype(np.float32))
    b = tf.constant(rng.randn(2, 3).astype(np.float32))
    y = log1pexp(x)
    p = scaled_product(a, b)
    dx = tf.gradients(tf.reduce_sum(y * y), x)[0]
    da, db = tf.gradients(tf.reduce_sum(p * 3.0), [a, b])
    return ({"y": y, "dx": dx, "p": p, "da": da, "db": db},
            {x: np.array([0.0, 50.0, -3.0, 1.5], np.float32)})


@case
def make_template_shares_variables(tf):
    def dense(x, units=3):
        w = tf.get_variable("w", [int(x.shape[-1]), units],
                            initializer=tf.constant_initializer(0.5))
        b = tf.get_variable("b", [units], initializer=tf.zeros_initializer())
        return tf.matmul(x, w, name="mm") + b

    layer = tf.make_template("dense", dense, units=2)
    x = tf.constant(np.random.RandomState(8).randn(2, 4).astype(np.float32))
    first, second = layer(x), layer(x * 2.0)
    other = tf.make_template("dense", dense)(x)
    with tf.variable_scope("outer"):
        now = tf.make_template("inner", dense, create_scope_now_=True)
    third, fourth = now(x), now(x)
    named = tf.make_template("u", dense, unique_name_="uniq")(x)

    def bad(v):
        return v * tf.Variable(1.0, name="not_shared")
    bad_template = tf.make_template("bad", bad)
    bad_template(x)
    try:
        bad_template(x)
        refused = "ok"
    except ValueError:
        refused = "ValueError"
    grads = tf.gradients(tf.reduce_sum(first + second), layer.trainable_variables)
    names = {"ops": [t.op.name for t in (first, second, other, third, fourth, named)],
             "variables": [v.op.name for v in tf.global_variables()],
             "template_variables": [v.op.name for v in layer.variables],
             "scope_name": layer.variable_scope_name, "refused": refused}

    def run(sess):
        values = sess.run({"first": first, "second": second, "other": other, "grads": grads})
        return {**names, "first": values["first"], "second": values["second"],
                "other": values["other"], "grad_w": values["grads"][0],
                "grad_b": values["grads"][1]}
    return run


@case
def assert_shapes_static_and_at_run_time(tf):
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [None, 4])
    c = tf.placeholder(tf.float32)
    s = tf.constant(1.0)
    fixed = tf.zeros([2, 3, 5])
    check = tf.debugging.assert_shapes([(a, ("N", "Q")), (b, ("N", "D")), (c, ("Q",)), (s, ())])
    inner = tf.debugging.assert_shapes({fixed: (Ellipsis, 3, "K"), a: ("*", 3)})
    build = {
        "static_size": _error_of(lambda: tf.debugging.assert_shapes([(fixed, (2, 4, 5))])),
        "static_shared": _error_of(lambda: tf.debugging.assert_shapes(
            [(fixed, ("A", "B", "C")), (tf.zeros([3, 3]), ("B", "A"))])),
        "static_rank": _error_of(lambda: tf.debugging.assert_shapes([(fixed, ("A", "B"))])),
        "ellipsis_late": _error_of(lambda: tf.debugging.assert_shapes([(fixed, ("A", Ellipsis))])),
        "not_iterable": _error_of(lambda: tf.debugging.assert_shapes([(fixed, 3)])),
        "static_ok": _error_of(lambda: tf.debugging.assert_shapes(
            [(fixed, (2, "B", None)), (tf.zeros([5]), (".",))])),
        "inner_type": inner.type,
    }
    rng = np.random.RandomState(14)

    def run(sess):
        def attempt(na, nb, nc):
            return _error_of(lambda: sess.run(check, {a: rng.rand(na, 3), b: rng.rand(nb, 4),
                                                      c: rng.rand(nc)}))
        return {**build, "good": attempt(2, 2, 3), "batch_differs": attempt(2, 3, 3),
                "q_differs": attempt(2, 2, 4),
                "c_rank": _error_of(lambda: sess.run(check, {a: rng.rand(2, 3), b: rng.rand(2, 4),
                                                             c: rng.rand(3, 1)})),
                "inner_ok": _error_of(lambda: sess.run(inner, {a: rng.rand(2, 3)}))}
    return run


@case
def add_check_numerics_ops_reports_the_first_bad_op(tf):
    x = tf.placeholder(tf.float32, [2])
    v = tf.Variable([1.0, 2.0], name="v")
    y = tf.log(x) * v
    z = tf.sqrt(y)
    count = tf.size(z)
    check = tf.add_check_numerics_ops()

    def run(sess):
        def outcome(feed):
            try:
                sess.run(check, {x: feed})
            except tf.errors.InvalidArgumentError as e:
                return "InvalidArgumentError: " + e.message.split(" : ")[0].splitlines()[-1]
            return "ok"
        return {"fine": outcome([1.0, 2.0]), "log_of_negative": outcome([-1.0, 2.0]),
                "sqrt_of_negative": outcome([0.5, 2.0]), "type": check.type,
                "count": sess.run(count, {x: [1.0, 2.0]})}
    return run
