"""Dataset.window: windows of size/shift/stride with and without drop_remainder, consumed
by flat_map (batch, zip of a tuple's or a dict's windows) and interleave; parallel map
keeps the input order."""
import numpy as np

from tests.goldens.harness import case
from tests.goldens.cases_data import _drain


def _windows(tf, ds):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    # Windows joined with -1 after each, so their sizes are recorded too.
    return lambda sess: np.asarray([v for b in _drain(sess, nxt) for v in list(b) + [-1]],
                                   np.int64)


@case
def window_size_shift_stride(tf):
    r = tf.data.Dataset.range(7)
    cases = {"size": dict(size=3), "shift": dict(size=3, shift=2),
             "shift_drop": dict(size=3, shift=2, drop_remainder=True),
             "stride": dict(size=2, shift=1, stride=3),
             "stride_drop": dict(size=2, shift=3, stride=2, drop_remainder=True),
             "gap": dict(size=1, shift=3), "too_big_drop": dict(size=9, drop_remainder=True)}
    runs = {k: _windows(tf, r.window(**kw).flat_map(lambda w: w.batch(10)))
            for k, kw in cases.items()}

    def run(sess):
        out = {}
        for k, fn in runs.items():
            out[k] = fn(sess)
        return out
    return run


@case
def window_tuple_and_dict(tf):
    r = tf.data.Dataset.range(5)
    pairs = tf.data.Dataset.zip((r, r.map(lambda x: tf.cast(x, tf.float32) * 0.5)))
    tup = pairs.window(2, drop_remainder=True).flat_map(
        lambda a, b: tf.data.Dataset.zip((a, b)).batch(2))
    d = tf.data.Dataset.from_tensor_slices({"x": np.arange(5), "y": np.arange(5) * 2.0})
    dct = d.window(3, shift=1).flat_map(lambda e: tf.data.Dataset.zip(e).padded_batch(
        3, {"x": [], "y": []}))
    t_next = tf.data.make_one_shot_iterator(tup).get_next()
    d_next = tf.data.make_one_shot_iterator(dct).get_next()

    def run(sess):
        t = _drain(sess, t_next)
        d = _drain(sess, d_next)
        return {"tuple_a": np.stack([a for a, _ in t]), "tuple_b": np.stack([b for _, b in t]),
                "dict_x": np.concatenate([np.append(e["x"], -1) for e in d]),
                "dict_y": np.concatenate([np.append(e["y"], -1) for e in d])}
    return run


@case
def window_interleave_and_parallel_map(tf):
    r = tf.data.Dataset.range(7)
    inter = r.window(3, 2).interleave(lambda w: w, cycle_length=2)
    par = tf.data.Dataset.range(40).map(lambda x: x * x + 1, num_parallel_calls=4).batch(8)
    i_next = tf.data.make_one_shot_iterator(inter).get_next()
    p_next = tf.data.make_one_shot_iterator(par).get_next()
    return lambda sess: {"interleave": np.asarray(_drain(sess, i_next)),
                         "parallel": np.concatenate(_drain(sess, p_next))}
