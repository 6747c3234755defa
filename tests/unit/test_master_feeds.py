"""The master's check of fed dtypes, with its cache of dtypes that passed (no processes)."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import node_def_of
from dtf.runtime.master import MasterSession


def _session():
    g = tf.Graph()
    with g.as_default():
        tf.placeholder(tf.float32, [2], name="x")
        tf.placeholder(tf.int64, [], name="n")
    return MasterSession(None, "s", [node_def_of(op) for op in g._nodes_in_order], {})


def _refused(s, feeds):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        s.check_feeds(feeds)
    return e.value.message


def test_a_float64_feed_is_refused_before_anything_passed():
    # numpy reads None as float64: a cache miss must not look like a float64 that passed.
    assert "to be float but double is provided" in _refused(_session(), {"x:0": np.ones(2)})


def test_a_dtype_that_passed_once_passes_again_and_another_is_still_refused():
    s = _session()
    ok = {"x:0": np.ones(2, np.float32), "n:0": np.asarray(3, np.int64)}
    s.check_feeds(ok)
    s.check_feeds(ok)
    msg = _refused(s, {"x:0": np.ones(2, np.int64), "n:0": np.asarray(3, np.int64)})
    assert "Expects arg[1] to be float but int64 is provided (the value fed for x:0)" in msg
    assert "to be float but double" in _refused(s, {"x:0": [1.0, 2.0]})  # not an array


def test_a_step_with_one_bad_feed_caches_none_of_its_feeds():
    s = _session()
    _refused(s, {"x:0": np.ones(2, np.float32), "n:0": np.asarray(3, np.int32)})
    assert s._feed_np_dtypes == {}
