"""Core ops every other family builds on: a check that the golden harness itself works."""
import numpy as np

from tests.goldens.harness import case


@case
def matmul_and_its_gradients(tf):
    rng = np.random.RandomState(0)
    a = tf.constant(rng.randn(3, 4).astype(np.float32))
    b = tf.placeholder(tf.float32, [4, 2])
    y = tf.nn.relu(tf.matmul(a, b))
    da, db = tf.gradients(tf.reduce_sum(y * y), [a, b])
    return {"y": y, "da": da, "db": db}, {b: rng.randn(4, 2).astype(np.float32)}


@case
def variable_assign_runs(tf):
    v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    inc = tf.assign_add(v, tf.ones([4]))

    def run(sess):
        sess.run(inc)
        sess.run(inc)
        return {"v": sess.run(v), "name": v.op.name, "dtype": v.dtype.base_dtype.name}
    return run
