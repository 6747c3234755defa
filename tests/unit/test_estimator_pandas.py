"""tf.estimator.inputs.pandas_input_fn (TF 1.15): rows of a DataFrame as (features, target)
batches; the test needs pandas, which dtf does not depend on."""
import numpy as np
import pytest

import dtf as tf
from dtf.estimator import pandas_io

pd = pandas_io.pd
needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")


def run_input_fn(input_fn, limit=None):
    with tf.Graph().as_default():
        out = input_fn()
        batches = []
        with tf.Session() as sess:
            while limit is None or len(batches) < limit:
                try:
                    batches.append(sess.run(out))
                except tf.errors.OutOfRangeError:
                    break
        return batches


def frame():
    index = np.arange(100, 105)
    x = pd.DataFrame({"b": np.arange(5.0), "a": np.arange(5) * 10,
                      "city": ["paris", "rome", "oslo", "lima", "kyiv"]}, index=index)
    return x, pd.Series(np.arange(5) - 7, index=index)


@needs_pandas
def test_pandas_input_fn_rows_epochs_and_target():
    x, y = frame()
    batches = run_input_fn(tf.estimator.inputs.pandas_input_fn(
        x, y, batch_size=2, num_epochs=2, shuffle=False))
    assert list(batches[0][0]) == ["b", "a", "city"]   # the frame's columns, index dropped
    assert [list(f["a"]) for f, _ in batches] == [[0, 10], [20, 30], [40, 0], [10, 20],
                                                  [30, 40]]
    assert [list(t) for _, t in batches][2] == [-3, -7]
    assert list(batches[1][0]["city"]) == [b"oslo", b"lima"]
    assert batches[0][0]["b"].dtype == np.float64 and batches[0][1].dtype == np.int64
    assert "target" not in x   # the caller's frame is left alone


@needs_pandas
def test_pandas_input_fn_frame_target_features_only_and_endless():
    x, _ = frame()
    y = pd.DataFrame({"a": np.arange(5), "t2": -np.arange(5)}, index=x.index)
    (features, target), = run_input_fn(tf.compat.v1.estimator.inputs.pandas_input_fn(
        x, y, batch_size=5, shuffle=False))
    # a target column named like a feature is renamed inside, not in the returned dict
    assert sorted(target) == ["a", "t2"] and list(target["t2"]) == [0, -1, -2, -3, -4]
    assert list(features) == ["b", "a", "city"] and list(features["a"]) == [0, 10, 20, 30, 40]
    only_x = run_input_fn(tf.estimator.inputs.pandas_input_fn(
        x, batch_size=3, shuffle=False))
    assert isinstance(only_x[0], dict) and list(only_x[1]["a"]) == [30, 40]
    endless = run_input_fn(tf.estimator.inputs.pandas_input_fn(
        x, batch_size=3, num_epochs=None, shuffle=True), limit=10)
    assert all(len(b["a"]) == 3 for b in endless)   # dequeue_many: whole batches only
    assert set(np.concatenate([b["a"] for b in endless])) == {0, 10, 20, 30, 40}
    shuffled = run_input_fn(tf.estimator.inputs.pandas_input_fn(
        pd.DataFrame({"v": np.arange(60)}), batch_size=7, shuffle=True, queue_capacity=None))
    assert sorted(np.concatenate([b["v"] for b in shuffled])) == list(range(60))


@needs_pandas
def test_pandas_input_fn_errors():
    x, y = frame()
    fn = tf.estimator.inputs.pandas_input_fn
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set"):
        fn(x, y)
    with pytest.raises(TypeError, match="target_column must be a string type"):
        fn(x, y, shuffle=False, target_column=3)
    with pytest.raises(ValueError, match="Cannot use name a for target column"):
        fn(x, y, shuffle=False, target_column="a")
    with pytest.raises(ValueError, match="Index for x and y are mismatched"):
        fn(x, pd.Series(np.arange(5)), shuffle=False)
    with pytest.raises(NotImplementedError, match="num_threads"):
        fn(x, y, shuffle=False, num_threads=2)


def test_pandas_input_fn_without_pandas_raises_tfs_error(monkeypatch):
    # pandas is optional: without it the name exists and calling it raises TF's TypeError
    # (where pandas is installed, the import's outcome is switched off to check the same).
    monkeypatch.setattr(pandas_io, "HAS_PANDAS", False)
    with pytest.raises(TypeError, match="pandas_input_fn should not be called without pandas"):
        tf.estimator.inputs.pandas_input_fn(None, shuffle=False)
