"""The new array, segment, sort, linalg and nn ops run on a remote task process: their
attrs (index dtypes, num_partitions, shapes with unknown dims, booleans) cross the wire,
and their results and gradients come back as in one process."""
import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


def _build():
    rng = np.random.RandomState(0)
    a = tf.constant((rng.randn(3, 3) + 3 * np.eye(3)).astype(np.float32))
    parts = tf.dynamic_partition(a, [1, 0, 1], 2)
    y, idx, count = tf.unique_with_counts(tf.constant([4, 1, 4, 9]), out_idx=tf.int64)
    e = tf.ensure_shape(tf.placeholder_with_default(a, [None, 3]), [3, None])
    outs = {
        "gather_nd": tf.gather_nd(a, [[0, 1], [2, 2]]),
        "seg": tf.segment_max(a, [0, 0, 1]),
        "useg": tf.unsorted_segment_prod(a, [1, -1, 1], 2),
        "parts1": parts[1], "unique": y, "idx": idx, "count": count,
        "inv": tf.matrix_inverse(a, adjoint=True),
        "band": tf.matrix_band_part(a, 0, 1),
        "sorted": tf.sort(a, direction="DESCENDING"),
        "lrn": tf.nn.lrn(tf.reshape(a, [1, 1, 3, 3]), depth_radius=1, alpha=0.5),
        "ensure": e,
        "eig": tf.linalg.eigvalsh(a + tf.transpose(a)),
    }
    loss = sum(tf.reduce_sum(v) for k, v in outs.items() if v.dtype == tf.float32)
    outs["grad"], = tf.gradients(loss, [a])
    return outs


def test_new_ops_on_a_remote_task(make_cluster):
    cl = make_cluster(worker=1).start_all()
    tf.reset_default_graph()
    with tf.device("/job:worker/task:0"):
        remote = _build()
    with tf.Session(cl.target("worker", 0)) as sess:
        got = sess.run(remote)
    tf.reset_default_graph()
    local = _build()
    with tf.Session() as sess:
        want = sess.run(local)
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
