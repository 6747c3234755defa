"""Control flow: tf.cond, tf.case, tf.switch_case and tf.while_loop, values and gradients."""
import numpy as np

from tests.goldens.harness import case


@case
def cond_values_and_gradients_both_branches(tf):
    rng = np.random.RandomState(1)
    x = tf.placeholder(tf.float32, [3])
    w = tf.constant(rng.randn(3).astype(np.float32))
    out = {}
    for name, taken in (("t", True), ("f", False)):
        y = tf.cond(tf.constant(taken), lambda: tf.sin(x) * w, lambda: tf.exp(x) + w * x * x)
        dx, dw = tf.gradients(tf.reduce_sum(y * y), [x, w])
        out.update({f"y_{name}": y, f"dx_{name}": dx, f"dw_{name}": dw})
    return out, {x: rng.randn(3).astype(np.float32)}


@case
def cond_nested_structures(tf):
    p = tf.placeholder(tf.bool, [])
    x = tf.constant([1.0, 2.0])
    r = tf.cond(p, lambda: {"a": (x * 2.0, tf.constant(1)), "b": [x[0]]},
                lambda: {"a": (x - 1.0, tf.constant(2)), "b": [x[1]]})
    q = tf.cond(tf.logical_not(p), lambda: tf.cond(p, lambda: x, lambda: x * 3.0), lambda: x * 5.0)
    return {"a0": r["a"][0], "a1": r["a"][1], "b": r["b"][0], "nested": q}, {p: False}


@case
def cond_runs_only_the_taken_branchs_assigns(tf):
    v = tf.Variable(0.0, name="v")
    u = tf.Variable(0.0, name="u")
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        tf.assign_add(u, 100.0)  # not wired to the output
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            return tf.identity(v.read_value())

    y = tf.cond(p, true_fn, lambda: tf.assign_add(v, 10.0))

    def run(sess):
        a = sess.run(y, {p: True})
        b = sess.run(y, {p: False})
        c = sess.run(y, {p: True})
        return {"a": a, "b": b, "c": c, "v": sess.run(v), "u": sess.run(u)}
    return run


@case
def case_and_switch_case(tf):
    x = tf.placeholder(tf.int32, [])
    c = tf.case([(tf.less(x, 3), lambda: tf.constant(1.5)), (tf.less(x, 6), lambda: tf.constant(2.5))],
                default=lambda: tf.constant(-1.0))
    s = tf.switch_case(x, [lambda: tf.constant(10), lambda: tf.constant(20)])

    def run(sess):
        return {"case": [sess.run(c, {x: v}) for v in (1, 4, 9)],
                "switch": [sess.run(s, {x: v}) for v in (0, 1, 7)]}
    return run


@case
def while_loop_values_and_gradients(tf):
    rng = np.random.RandomState(2)
    x = tf.placeholder(tf.float32, [4])
    w = tf.constant(rng.randn(4).astype(np.float32) * 0.5)
    n = tf.placeholder(tf.int32, [])

    def body(i, h, acc):
        h = tf.tanh(h * w + x)
        return i + 1, h, acc + tf.reduce_sum(h)

    i, h, acc = tf.while_loop(lambda i, h, acc: i < n, body, [tf.constant(0), x, tf.constant(0.0)])
    dx, dw = tf.gradients(acc + tf.reduce_sum(h * h), [x, w])
    return ({"i": i, "h": h, "acc": acc, "dx": dx, "dw": dw},
            {x: rng.randn(4).astype(np.float32), n: 5})


@case
def while_loop_nested_with_cond_and_max_iterations(tf):
    x = tf.constant([0.5, -0.25])

    def outer(i, y):
        inner = tf.while_loop(lambda j, z: j < 2, lambda j, z: (j + 1, z * 1.5 + 0.1), [tf.constant(0), y])[1]
        return i + 1, tf.cond(tf.reduce_sum(inner) > 0.0, lambda: tf.sin(inner), lambda: inner * 2.0)

    i, y = tf.while_loop(lambda i, y: i < 100, outer, [tf.constant(0), x], maximum_iterations=3)
    dx = tf.gradients(tf.reduce_sum(y), x)[0]
    return {"i": i, "y": y, "dx": dx}


@case
def while_loop_updates_a_variable(tf):
    v = tf.Variable(1.0, name="v")

    def body(i, acc):
        with tf.control_dependencies([tf.assign(v, v * 2.0)]):
            return i + 1, acc + v.read_value()

    out = tf.while_loop(lambda i, acc: i < 4, body, [tf.constant(0), tf.constant(0.0)])

    def run(sess):
        # (TF's sum of reads depends on how it overlaps iterations: only v is compared)
        return {"i": sess.run(out)[0], "v": sess.run(v)}
    return run


@case
def tensor_array_in_a_loop_values_and_gradients(tf):
    rng = np.random.RandomState(3)
    x = tf.placeholder(tf.float32, [5, 3])
    n = tf.shape(x)[0]
    inp = tf.TensorArray(tf.float32, size=n).unstack(x)
    out = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

    def body(i, h, o):
        h = tf.tanh(h + inp.read(i))
        return i + 1, h, o.write(i, h * 2.0)

    _, h, out = tf.while_loop(lambda i, h, o: i < n, body, [tf.constant(0), tf.zeros([3]), out])
    stacked = out.stack()
    dx = tf.gradients(tf.reduce_sum(stacked * stacked) + tf.reduce_sum(h), x)[0]
    ta = tf.TensorArray(tf.float32, size=3).scatter([2, 0, 1], x[:3])
    return ({"stacked": stacked, "size": out.size(), "dx": dx, "gather": out.gather([4, 1]),
             "concat": out.concat(), "scattered": ta.stack(), "read": ta.read(1)},
            {x: rng.randn(5, 3).astype(np.float32)})


@case
def map_fn_scan_fold_values_and_gradients(tf):
    rng = np.random.RandomState(4)
    x = tf.constant(rng.randn(4, 2).astype(np.float32))
    w = tf.constant(rng.randn(2).astype(np.float32))
    m = tf.map_fn(lambda r: tf.sin(r * w), x)
    pair = tf.map_fn(lambda r: (r[0] * 2.0, tf.cast(r[1] > 0.0, tf.int32)), x, dtype=(tf.float32, tf.int32))
    s = tf.scan(lambda a, r: tf.tanh(a * w + r), x)
    sr = tf.scan(lambda a, r: a + r, x, initializer=tf.ones([2]), reverse=True)
    fl = tf.foldl(lambda a, r: a * w + r, x)
    fr = tf.foldr(lambda a, r: a * 0.5 + tf.reduce_sum(r), x, initializer=tf.constant(1.0))
    total = tf.reduce_sum(m) + tf.reduce_sum(s * s) + tf.reduce_sum(sr) + tf.reduce_sum(fl) + fr
    dx, dw = tf.gradients(total, [x, w])
    return {"m": m, "p0": pair[0], "p1": pair[1], "s": s, "sr": sr, "fl": fl, "fr": fr,
            "dx": dx, "dw": dw}
