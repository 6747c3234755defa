"""tf.test.TestCase, tf.test.main, tf.VERSION and the parts of tf.gfile that differ by TF
version or that TF's goldens cannot show (remote schemes)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dtf as tf


class AssertionsTest(tf.test.TestCase):
    def test_all_close_takes_tensors_arrays_and_nests(self):
        x = tf.constant([1.0, 2.0])
        self.assertAllClose(x * 2, [2.0, 4.0])
        self.assertAllClose({"a": [1.0, np.nan], "b": ([1], [2, 3])},
                            {"a": np.array([1.0 + 1e-7, np.nan]), "b": ([1], [2, 3])})
        with self.assertRaises(AssertionError):
            self.assertAllClose([1.0, 2.0], [1.0, 2.1])
        with self.assertRaisesRegex(AssertionError, "Shape mismatch"):
            self.assertAllClose([1.0, 2.0], [[1.0, 2.0]])
        with self.assertRaisesRegex(AssertionError, "mismatched keys"):
            self.assertAllClose({"a": 1}, {"b": 1})
        self.assertNotAllClose([1.0], [2.0])
        self.assertAllCloseAccordingToType(np.float16([1.0]), np.float16([1.0005]))

    def test_equality_ranges_and_sets(self):
        self.assertAllEqual(tf.constant([[1, 2]]), [[1, 2]])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [1, 3])
        self.assertAllInRange([0.0, 0.5, 1.0], 0.0, 1.0)
        with self.assertRaisesRegex(AssertionError, r"outside the range \(0.0, 1.0\]"):
            self.assertAllInRange([0.0, 0.5], 0.0, 1.0, open_lower_bound=True)
        self.assertAllInSet([1, 2, 2], {1, 2})
        with self.assertRaises(AssertionError):
            self.assertAllInSet([1, 3], {1, 2})
        self.assertAllGreater([2, 3], 1)
        self.assertAllLessEqual([2, 3], 3)
        with self.assertRaises(AssertionError):
            self.assertAllLess([2, 3], 3)
        self.assertNear(1.0, 1.05, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.01, 2.0], 0.02)
        self.assertNDArrayNear(np.ones(3), np.ones(3) + 1e-4, 1e-3)
        self.assertShapeEqual(np.zeros((2, 3)), tf.zeros([2, 3]))
        self.assertDTypeEqual(np.float32([1]), np.float32)
        self.assertDeviceEqual("/job:a/task:0/device:CPU:0", "/job:a/task:0/cpu:0")
        self.assertStartsWith("dtf rocks", "dtf")

    def test_op_errors_match_by_regex_or_predicate(self):
        x = tf.placeholder(tf.float32, [2])
        with self.assertRaisesOpError("must feed a value|You must feed"):
            self.evaluate(x * 2)
        with self.assertRaisesWithPredicateMatch(ValueError, lambda e: "boom" in str(e)):
            raise ValueError("boom")


class SessionsTest(tf.test.TestCase):
    def test_every_test_starts_in_a_fresh_graph_with_tf_seeds(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])
        self.assertEqual(tf.get_default_graph().seed, 87654321)
        self.assertEqual(np.random.get_state()[1][0], np.random.RandomState(87654321).get_state()[1][0])

    def test_cached_session_is_reused_and_session_is_new(self):
        v = tf.Variable(3.0)
        with self.cached_session() as first:
            first.run(v.initializer)
            self.assertIs(tf.get_default_session(), first)
        with self.cached_session() as again:
            self.assertIs(again, first)
            self.assertEqual(self.evaluate(v), 3.0)   # state kept in the cached session
        with self.test_session() as old_name:
            self.assertIs(old_name, first)
        with self.session() as fresh:
            self.assertIsNot(fresh, first)
            with self.assertRaises(tf.errors.FailedPreconditionError):
                fresh.run(v)

    def test_session_on_an_explicit_graph(self):
        g = tf.Graph()
        with g.as_default():
            c = tf.constant(5) * 2
        with self.session(graph=g) as sess:
            self.assertIs(tf.get_default_graph(), g)
            self.assertEqual(sess.run(c), 10)
        with self.cached_session():
            pass
        with self.assertRaisesRegex(ValueError, "different than the one"):
            with self.cached_session(graph=g):
                pass

    def test_temp_dirs_are_real_and_distinct(self):
        import os
        a, b = self.get_temp_dir(), self.get_temp_dir()
        self.assertTrue(os.path.isdir(a) and os.path.isdir(b) and a != b)
        self.assertTrue(a.startswith(tf.test.get_temp_dir()))


def test_tf_test_main_runs_the_programs_tests_and_exits_with_their_status(tmp_path):
    program = tmp_path / "my_test.py"
    program.write_text(textwrap.dedent('''
        import dtf as tf
        tf.app.flags.DEFINE_integer("expected", 4, "what 2 + 2 is")
        FLAGS = tf.app.flags.FLAGS

        class AddTest(tf.test.TestCase):
            def testAdd(self):
                with self.cached_session():
                    self.assertAllEqual(self.evaluate(tf.constant(2) + 2), FLAGS.expected)

        if __name__ == "__main__":
            tf.test.main()
    '''))
    ok = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "Ran 1 test" in ok.stderr and "OK" in ok.stderr
    bad = subprocess.run([sys.executable, str(program), "--expected=5", "-v"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert "testAdd" in bad.stderr and "FAILED (failures=1)" in bad.stderr


def test_version_names_the_tf_api_dtf_follows():
    assert tf.VERSION == tf.__version__ == tf.version.VERSION == "1.15.0"
    assert tf.GIT_VERSION.startswith("v1.15.0-dtf-")


def test_gfile_refuses_remote_schemes_and_reads_file_urls(tmp_path):
    with pytest.raises(tf.errors.UnimplementedError, match="File system scheme 'gs' not implemented"):
        tf.gfile.Exists("gs://bucket/x")
    (tmp_path / "f").write_text("x")
    assert tf.io.gfile.GFile(f"file://{tmp_path}/f").read() == "x"


def test_mkdir_of_an_existing_directory_is_already_exists_as_in_tf_1_15(tmp_path):
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.MkDir(str(tmp_path))


def test_tf_dtypes_namespace():
    assert tf.dtypes.as_dtype("float") is tf.float32 and tf.dtypes.int64 is tf.int64
    with tf.Session() as sess:
        assert sess.run(tf.dtypes.cast(tf.constant([1.7]), "int32")).tolist() == [1]


class GradientCheckerTest(tf.test.TestCase):
    def test_compute_gradient_error_is_small_for_a_correct_gradient(self):
        x = tf.placeholder(tf.float64, [3])
        y = tf.reduce_sum(tf.exp(x) * x)
        with self.cached_session():
            self.assertLess(tf.test.compute_gradient_error(x, [3], y, []), 1e-5)  # O(delta^2)

    def test_it_needs_a_default_session(self):
        x = tf.placeholder(tf.float64, [1])
        with self.assertRaisesRegex(ValueError, "needs a default session"):
            tf.test.compute_gradient(x, [1], x * 2, [1])


class CheckedThreadTest(tf.test.TestCase):
    def test_a_failing_thread_fails_the_test_at_join(self):
        seen = []
        ok = self.checkedThread(seen.append, args=[1])
        bad = self.checkedThread(lambda: 1 / 0)
        ok.start()
        bad.start()
        ok.join()
        with self.assertRaisesRegex(AssertionError, "Error in checkedThread: division by zero"):
            bad.join()
        self.assertEqual(seen, [1])
