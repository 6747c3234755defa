"""tf.test: TestCase with TF 1.15's assertions and sessions, main, and helpers.

Each test starts in a fresh default graph with TF's test seed (87654321) for the graph,
numpy and ``random``, as TF's TestCase.setUp does. ``self.session()`` opens a new session
on a graph, ``self.cached_session()``/``self.test_session()`` reuse one per test, and
``self.evaluate(t)`` runs tensors in the default (or the cached) session.
"""
from __future__ import annotations

import contextlib
import math
import random
import re
import sys
import tempfile
import threading
import unittest

import numpy as np

from dtf.framework import errors, ops

__all__ = ["TestCase", "main", "get_temp_dir", "gpu_device_name", "is_gpu_available",
           "is_built_with_cuda", "create_local_cluster", "compute_gradient",
           "compute_gradient_error"]

DEFAULT_GRAPH_SEED = 87654321  # TF's random_seed.DEFAULT_GRAPH_SEED

_temp_dir = None


def get_temp_dir() -> str:
    """A temporary directory shared by this process's tests."""
    global _temp_dir
    if _temp_dir is None:
        _temp_dir = tempfile.mkdtemp(prefix="dtf_test_")
    return _temp_dir


def main(argv=None):
    """Runs the tests of ``__main__`` after taking out the flags the program defined."""
    from dtf import flags
    rest = flags.FLAGS(sys.argv if argv is None else argv, known_only=True)
    return unittest.main(argv=rest)


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Whether dtf can run kernels on a GPU in this process."""
    if min_cuda_compute_capability is not None:
        raise NotImplementedError("is_gpu_available: min_cuda_compute_capability is not "
                                  "supported by dtf")
    from dtf.runtime import devices
    return devices.gpu_count() > 0


def gpu_device_name() -> str:
    """'/device:GPU:0' when a GPU is available, else ''."""
    from dtf.runtime import devices
    names = devices.gpu_names()
    return names[0] if names else ""


def is_built_with_cuda() -> bool:
    """True: dtf carries CUDA kernels (compiled by Numba when a GPU is present)."""
    return True


def create_local_cluster(num_workers, num_ps, protocol="grpc", worker_config=None,
                         ps_config=None):
    """Starts ``num_workers`` worker and ``num_ps`` ps servers in this process on free
    127.0.0.1 ports; returns (workers, ps_servers) as TF does."""
    from dtf.train.cluster_spec import ClusterSpec
    from dtf.train.server import Server, free_port

    spec = ClusterSpec({"worker": [f"localhost:{free_port()}" for _ in range(num_workers)],
                        "ps": [f"localhost:{free_port()}" for _ in range(num_ps)]})
    workers = [Server(spec, job_name="worker", task_index=i, protocol=protocol,
                      config=worker_config, start=True) for i in range(num_workers)]
    ps_servers = [Server(spec, job_name="ps", task_index=i, protocol=protocol,
                         config=ps_config, start=True) for i in range(num_ps)]
    return workers, ps_servers


def _default_session():
    from dtf.client.session import get_default_session
    sess = get_default_session()
    if sess is None:
        raise ValueError("compute_gradient needs a default session: call it inside "
                         "`with tf.Session():` or `with self.cached_session():`")
    return sess


def _jacobians(sess, x, x_shape, y, y_shape, x_data, delta, feeds):
    """(theoretical, numerical) Jacobians of y by x, shaped [x.size, y.size]: one gradient
    per y element (fed a one-hot dy), one central difference per x element."""
    from dtf.ops.array_ops import placeholder
    from dtf.ops.gradients import gradients
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    np_type = x.dtype.as_numpy_dtype
    dy = placeholder(y.dtype, y_shape)
    dx = gradients(y, x, grad_ys=dy)[0]
    theoretical = np.zeros((x_size, y_size), dtype=np_type)
    numerical = np.zeros((x_size, y_size), dtype=np_type)
    one_hot = np.zeros(y_shape, dtype=y.dtype.as_numpy_dtype)
    for col in range(y_size):
        one_hot.flat[col] = 1
        if dx is not None:
            theoretical[:, col] = np.asarray(
                sess.run(dx, {**feeds, x: x_data, dy: one_hot})).reshape(-1)
        one_hot.flat[col] = 0
    flat = np.array(x_data, dtype=np_type).reshape(-1)
    for row in range(x_size):
        original = flat[row]
        flat[row] = original + delta
        y_pos = sess.run(y, {**feeds, x: flat.reshape(x_shape)})
        flat[row] = original - delta
        y_neg = sess.run(y, {**feeds, x: flat.reshape(x_shape)})
        flat[row] = original
        numerical[row, :] = (np.asarray(y_pos) - np.asarray(y_neg)).reshape(-1) / (2 * delta)
    return theoretical, numerical


def compute_gradient(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None,
                     extra_feed_dict=None):
    """TF 1.x's gradient checker, run in the default session: the theoretical and the
    numerical Jacobian of ``y`` by ``x`` (a pair per x when ``x`` is a list), each
    [x size, y size]. ``x_init_value`` defaults to uniform [0, 1) values."""
    sess = _default_session()
    for init in init_targets or []:
        sess.run(init)
    feeds = dict(extra_feed_dict or {})
    if isinstance(x, (list, tuple)):  # each x on its own: the others are not fed, as in TF
        values = x_init_value or [None] * len(x)
        return [_jacobians(sess, xi, shape, y, y_shape, _initial(xi, shape, v), delta, feeds)
                for xi, shape, v in zip(x, x_shape, values)]
    return _jacobians(sess, x, x_shape, y, y_shape, _initial(x, x_shape, x_init_value),
                      delta, feeds)


def _initial(x, x_shape, value):
    if value is not None:
        value = np.asarray(value)
        if value.shape != tuple(x_shape):
            raise ValueError(f"x_init_value has the wrong shape: {value.shape} vs {tuple(x_shape)}")
        return value
    return np.random.random_sample(x_shape).astype(x.dtype.as_numpy_dtype)


def compute_gradient_error(x, x_shape, y, y_shape, x_init_value=None, delta=1e-3,
                           init_targets=None, extra_feed_dict=None):
    """The largest |theoretical - numerical| over compute_gradient's Jacobians."""
    grads = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets,
                             extra_feed_dict)
    pairs = grads if isinstance(grads, list) else [grads]
    return max(float(np.max(np.fabs(t - n))) if t.size else 0.0 for t, n in pairs)


class _NotCollected:
    """A method that test loaders do not take for a test: on the class it is not callable
    (unittest and pytest skip names starting with "test" that are not), on an instance it
    is the bound method. TestCase.test_session is one; TF's counts as a test run."""

    def __init__(self, fn):
        self._fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, owner=None):
        return self if obj is None else self._fn.__get__(obj, owner)


class _CheckedThread:
    """A thread whose exception fails the test at join(); tearDown fails a test that
    never joined it."""

    def __init__(self, testcase, target, args=None, kwargs=None):
        self._testcase, self._target = testcase, target
        self._args, self._kwargs = tuple(args or ()), dict(kwargs or {})
        self._thread = threading.Thread(target=self._protected_run)
        self._exception = None
        self._joined = False

    def _protected_run(self):
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:  # noqa: BLE001 - reported by join()
            self._exception = e

    def start(self):
        self._thread.start()

    def join(self):
        self._thread.join()
        self._joined = True
        if self._exception is not None:
            self._testcase.fail(f"Error in checkedThread: {self._exception}")

    def is_alive(self):
        return self._thread.is_alive()

    def check_termination(self):
        if not self._joined:
            self._testcase.fail("A checked thread was not joined.")
        if self.is_alive():
            raise RuntimeError("Thread was not joined with main thread, and is still running "
                               "when the test finished.")


class TestCase(unittest.TestCase):
    """unittest.TestCase with TF's graph, session and array assertions."""

    def __init__(self, methodName="runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._cached_session = None
        self._cached_graph = None
        self._threads = []

    def checkedThread(self, target, args=None, kwargs=None):  # noqa: N802 - TF's name
        """A thread running ``target``; its exception fails the test when joined."""
        thread = _CheckedThread(self, target, args, kwargs)
        self._threads.append(thread)
        return thread

    def setUp(self):
        self._clear_cached_session()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        ops.reset_default_graph()
        from dtf.ops.random_ops import set_random_seed
        set_random_seed(DEFAULT_GRAPH_SEED)

    def tearDown(self):
        for thread in self._threads:
            thread.check_termination()
        self._clear_cached_session()

    def _clear_cached_session(self):
        if getattr(self, "_cached_session", None) is not None:
            self._cached_session.close()
        self._cached_session = None

    def get_temp_dir(self) -> str:
        """A fresh temporary directory for this test."""
        return tempfile.mkdtemp(dir=get_temp_dir())

    # -- sessions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _as_default(self, sess, use_gpu, force_gpu):
        """Makes ``sess`` and its graph the defaults; pins ops to the CPU unless a GPU
        may (use_gpu) or must (force_gpu) be used, as TF's TestCase does."""
        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                with sess.graph.device(gpu_device_name() or "/device:GPU:0"):
                    yield sess
            elif not use_gpu:
                with sess.graph.device("/device:CPU:0"):
                    yield sess
            else:
                yield sess

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new Session on ``graph`` (the default graph when None), made the default."""
        from dtf.client.session import Session
        with Session(graph=graph or ops.get_default_graph(), config=config) as sess:
            with self._as_default(sess, use_gpu, force_gpu):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The session this test already opened (one is opened on first use)."""
        sess = self._get_cached_session(graph, config, strict=True)
        with self._as_default(sess, use_gpu, force_gpu):
            yield sess

    @_NotCollected
    @contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """TF 1.x's older name: the cached session, or a new one for an explicit graph."""
        if graph is None:
            sess = self._get_cached_session(graph, config, strict=False)
            with self._as_default(sess, use_gpu, force_gpu):
                yield sess
        else:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess

    def _get_cached_session(self, graph, config, strict):
        from dtf.client.session import Session
        if self._cached_session is None:
            self._cached_graph = graph or ops.get_default_graph()
            self._cached_session = Session(graph=self._cached_graph, config=config)
        elif strict and graph is not None and graph is not self._cached_graph:
            raise ValueError("The graph used to get the cached session is different than "
                             "the one that was used to create the session. Maybe create a "
                             "new session with self.session()")
        return self._cached_session

    def evaluate(self, tensors):
        """The values of ``tensors`` (any nest) from the default or the cached session."""
        from dtf.client.session import get_default_session
        sess = get_default_session()
        if sess is None:
            with self.test_session() as sess:
                return sess.run(tensors)
        return sess.run(tensors)

    # -- array assertions ------------------------------------------------------------------
    def _as_ndarray(self, a):
        if isinstance(a, (ops.Tensor, ops.Operation)) or hasattr(a, "_as_graph_element"):
            a = self.evaluate(a)
        return a if isinstance(a, np.ndarray) else np.array(a)

    def _assert_array_close(self, a, b, rtol, atol, msg, path):
        a, b = self._as_ndarray(a), self._as_ndarray(b)
        where = f" at {path}" if path else ""
        self.assertEqual(a.shape, b.shape, f"Shape mismatch{where}: expected {a.shape}, got "
                                           f"{b.shape}. {msg or ''}")
        if np.float16 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, 1e-3), max(atol, 1e-3)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"Mismatch{where}. {msg or ''}")

    def _assert_close_nest(self, a, b, rtol, atol, msg, path):
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                raise AssertionError(f"{path or 'value'}: a dict compared with {type(b)}. {msg or ''}")
            self.assertEqual(set(a), set(b), f"mismatched keys at {path or 'top'}. {msg or ''}")
            for key in a:
                self._assert_close_nest(a[key], b[key], rtol, atol, msg, f"{path}[{key!r}]")
            return
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            try:
                arr_a, arr_b = np.array(a), np.array(b)
                if arr_a.dtype != object and arr_b.dtype != object:
                    return self._assert_array_close(arr_a, arr_b, rtol, atol, msg, path)
            except ValueError:  # ragged: compare item by item
                pass
            self.assertEqual(len(a), len(b), f"Length mismatch at {path or 'top'}: {len(a)} "
                                             f"vs {len(b)}. {msg or ''}")
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_close_nest(x, y, rtol, atol, msg, f"{path}[{i}]")
            return
        self._assert_array_close(a, b, rtol, atol, msg, path)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        """Arrays (or nests of them: dicts, lists, tuples) agree elementwise within
        ``atol + rtol * |b|``; NaNs match NaNs."""
        self._assert_close_nest(a, b, rtol, atol, msg, "")

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,  # noqa: N802
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3,
                                      bfloat16_rtol=1e-2, bfloat16_atol=1e-2, msg=None):
        """assertAllClose with the tolerance widened for float32 and float16 values."""
        a, b = self._as_ndarray(a), self._as_ndarray(b)
        if np.float32 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in (a.dtype, b.dtype):
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, **kwargs):  # noqa: N802
        """Fails when assertAllClose(a, b) would pass."""
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        """Same shape and equal elements (NaN equals NaN)."""
        a, b = self._as_ndarray(a), self._as_ndarray(b)
        self.assertEqual(a.shape, b.shape,
                         f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg or ''}")
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def _assert_all_compare(self, a, ok, what, target):
        a = self._as_ndarray(a)
        if not np.all(ok(a)):
            raise AssertionError(f"{a!r} is not {what} {target!r} everywhere")

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self._assert_all_compare(a, lambda x: x > comparison_target, ">", comparison_target)

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self._assert_all_compare(a, lambda x: x < comparison_target, "<", comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self._assert_all_compare(a, lambda x: x >= comparison_target, ">=", comparison_target)

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self._assert_all_compare(a, lambda x: x <= comparison_target, "<=", comparison_target)

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,  # noqa: N802
                         open_upper_bound=False):
        """Every element lies in the (open or closed) interval; NaN never does."""
        target = self._as_ndarray(target)
        if not (np.issubdtype(target.dtype, np.floating) or np.issubdtype(target.dtype, np.integer)):
            raise AssertionError(f"The value of {target!r} does not have an ordered numeric type, "
                                 "instead it has type: " + str(target.dtype))
        low = target > lower_bound if open_lower_bound else target >= lower_bound
        high = target < upper_bound if open_upper_bound else target <= upper_bound
        bad = np.flatnonzero(~(low & high))
        if bad.size:
            interval = (("(" if open_lower_bound else "[") + f"{lower_bound}, {upper_bound}"
                        + (")" if open_upper_bound else "]"))
            raise AssertionError(f"{bad.size} of the {target.size} element(s) are outside the "
                                 f"range {interval}. Subscript(s) and value(s) of the offending "
                                 f"elements:\n{[(int(i), target.flat[i]) for i in bad[:10]]}")

    def assertAllInSet(self, target, expected_set):  # noqa: N802
        """Every element is one of ``expected_set``."""
        target = self._as_ndarray(target)
        diff = np.setdiff1d(target.flatten(), list(expected_set))
        if diff.size:
            raise AssertionError(f"{diff} unexpected values {expected_set}.")

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        target = self._as_ndarray(target)
        arrays = target if isinstance(target, list) else [target]
        for arr in arrays:
            self.assertEqual(arr.dtype, np.dtype(expected_dtype))

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        """|f1 - f2| <= err."""
        self.assertTrue(f1 == f2 or math.fabs(f1 - f2) <= err,
                        f"{f1:f} != {f2:f} +/- {err:f}{' (' + msg + ')' if msg else ''}")

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        """Elementwise assertNear of two equally long lists."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertNDArrayNear(self, ndarray1, ndarray2, err, msg=None):  # noqa: N802
        """The L2 norm of the difference is below ``err``."""
        self.assertTrue(np.linalg.norm(np.asarray(ndarray1) - np.asarray(ndarray2)) < err,
                        msg=msg)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        """A numpy array's shape equals a tensor's static shape."""
        self.assertAllEqual(np_array.shape, tf_tensor.get_shape().as_list(), msg=msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        """Two device strings name the same device once canonicalized."""
        from dtf.framework.device_spec import DeviceSpec
        d1 = DeviceSpec.from_string(device1 or "").to_string()
        d2 = DeviceSpec.from_string(device2 or "").to_string()
        self.assertEqual(d1, d2, f"Devices {d1} and {d2} are not equal. {msg or ''}")

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802
        if not actual.startswith(expected_start):
            raise AssertionError(f"{actual!r} does not start with {expected_start!r} "
                                 f"{msg or ''}")

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        """The block raises ``exception_type`` whose message matches the regex (or for
        which the predicate holds)."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                return re.search(expected_err_re_or_predicate, str(e)) is not None
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e
        else:
            raise AssertionError(f"{exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        """The block raises a tf.errors.OpError matching the regex or predicate."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)
