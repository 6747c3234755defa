"""Everyday conveniences: tf.compat string conversions, tf.arg_max/arg_min, and tf.gfile /
tf.io.gfile on real files (results and the tf.errors class each failure raises)."""
import os
import pathlib
import shutil
import tempfile

import numpy as np

from tests.goldens.harness import case


def _outcome(fn, *args, **kwargs):
    """What a call gives: its value as text, or the name of the error class it raised."""
    try:
        value = fn(*args, **kwargs)
    except Exception as e:  # the golden records which class TF raises
        return type(e).__name__
    return f"{type(value).__name__}:{value!r}"


def _values(table):
    return lambda sess: table


@case
def compat_conversions(tf):
    c = tf.compat
    return _values({
        "as_bytes_str": _outcome(c.as_bytes, "héllo"),
        "as_bytes_bytes": _outcome(c.as_bytes, b"abc"),
        "as_bytes_bytearray": _outcome(c.as_bytes, bytearray(b"ab")),
        "as_bytes_latin1": _outcome(c.as_bytes, "é", "latin-1"),
        "as_bytes_int": _outcome(c.as_bytes, 1),
        "as_text_bytes": _outcome(c.as_text, "héllo".encode()),
        "as_text_str": _outcome(c.as_text, "x"),
        "as_text_none": _outcome(c.as_text, None),
        "as_str_bytes": _outcome(c.as_str, b"q"),
        "as_str_any_bytes": _outcome(c.as_str_any, b"q"),
        "as_str_any_int": _outcome(c.as_str_any, 12),
        "as_str_any_list": _outcome(c.as_str_any, [1, "a"]),
        "path_to_str_path": _outcome(c.path_to_str, pathlib.PurePosixPath("/a/b")),
        "path_to_str_str": _outcome(c.path_to_str, "x/y"),
        "path_to_str_int": _outcome(c.path_to_str, 3),
        "dimension_value_int": _outcome(c.dimension_value, 4),
        "dimension_value_dim": _outcome(c.dimension_value, tf.TensorShape([5, None])[0]),
        "dimension_value_none": _outcome(c.dimension_value, tf.TensorShape([5, None])[1]),
        "bytes_or_text": _outcome(lambda: c.bytes_or_text_types == (bytes, str)),
    })


@case
def arg_max_and_arg_min(tf):
    data = np.random.RandomState(4).randn(3, 5).astype(np.float32)
    x = tf.constant(data)
    fetches = {"arg_max_1": tf.arg_max(x, 1), "arg_max_0": tf.arg_max(x, 0),
               "arg_min_1": tf.arg_min(x, dimension=1),
               "arg_min_int32": tf.arg_min(x, 0, output_type=tf.int32)}
    names = {"name_max": tf.arg_max(x, 1).op.name, "name_min": tf.arg_min(x, 1).op.name,
             "named": tf.arg_max(x, 1, name="best").op.name,
             "dtype_int32": tf.arg_min(x, 0, output_type=tf.int32).dtype.name}

    def run(sess):
        return {**sess.run(fetches), **names}
    return run


def _gfile_story(g, io):
    """The same file-system story under TF and dtf; paths relative to a fresh temp dir."""
    root = tempfile.mkdtemp()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        out = {}
        out["mkdir_no_parent"] = _outcome(g.MkDir, "a/b")
        out["makedirs"] = _outcome(g.MakeDirs, "a/b/c")
        out["makedirs_again"] = _outcome(g.MakeDirs, "a/b/c")
        with g.GFile("a/f.txt", "w") as f:
            f.write("hello\nworld\n")
            f.write(b"bytes\n")
        lazy = g.GFile("missing.txt")  # opening is lazy: the error comes at the read
        out["lazy_open"] = "opened"
        out["read_missing"] = _outcome(lazy.read)
        out["write_missing_dir"] = _outcome(lambda: g.GFile("zz/y.txt", "w").write("x"))
        out["read"] = _outcome(lambda: g.GFile("a/f.txt").read())
        out["read_bytes"] = _outcome(lambda: g.GFile("a/f.txt", "rb").read())
        out["read_3"] = _outcome(lambda: g.GFile("a/f.txt").read(3))
        out["readline"] = _outcome(lambda: g.GFile("a/f.txt").readline())
        out["readlines"] = _outcome(lambda: g.GFile("a/f.txt").readlines())
        out["iterate"] = _outcome(lambda: list(g.GFile("a/f.txt")))
        out["size"] = _outcome(lambda: g.GFile("a/f.txt").size())

        def seek_then_read():
            f = g.GFile("a/f.txt")
            f.seek(6)
            return f.read(5), f.tell()
        out["seek"] = _outcome(seek_then_read)
        out["open_alias"] = _outcome(lambda: g.Open("a/f.txt", "rb").read())
        out["bad_mode"] = _outcome(g.GFile, "a/f.txt", "x")
        out["write_on_read"] = _outcome(lambda: g.GFile("a/f.txt").write("no"))
        out["read_on_write"] = _outcome(lambda: g.GFile("a/w.txt", "w").read())
        out["append"] = _outcome(lambda: (io.GFile("a/p", "w").write("ab"),
                                          io.GFile("a/p", "a").write("cd"),
                                          io.GFile("a/p").read()))
        out["exists"] = _outcome(lambda: (g.Exists("a/f.txt"), g.Exists("nope"), io.exists("a")))
        out["isdir"] = _outcome(lambda: (g.IsDirectory("a"), g.IsDirectory("a/f.txt"),
                                         io.isdir("nope")))
        out["listdir"] = _outcome(lambda: sorted(g.ListDirectory("a")))
        out["listdir_slash"] = _outcome(lambda: sorted(io.listdir("a/")))
        out["listdir_missing"] = _outcome(g.ListDirectory, "nope")
        out["listdir_file"] = _outcome(io.listdir, "a/f.txt")
        out["glob"] = _outcome(lambda: sorted(g.Glob("a/*")))
        out["glob_toplevel"] = _outcome(g.Glob, "*")
        out["glob_none"] = _outcome(io.glob, "q/*")
        out["copy"] = _outcome(g.Copy, "a/f.txt", "a/g.txt")
        out["copy_exists"] = _outcome(g.Copy, "a/f.txt", "a/g.txt")
        out["copy_overwrite"] = _outcome(io.copy, "a/f.txt", "a/g.txt", overwrite=True)
        out["copy_missing"] = _outcome(g.Copy, "nope", "a/h.txt")
        out["rename"] = _outcome(g.Rename, "a/g.txt", "a/h.txt")
        out["rename_exists"] = _outcome(g.Rename, "a/f.txt", "a/h.txt")
        out["rename_overwrite"] = _outcome(io.rename, "a/h.txt", "a/f2.txt", overwrite=True)
        out["rename_missing"] = _outcome(g.Rename, "nope", "a/x")
        st = g.Stat("a/f.txt")
        out["stat"] = _outcome(lambda: (st.length, st.is_directory, type(st.mtime_nsec).__name__,
                                        io.stat("a").is_directory))
        out["stat_missing"] = _outcome(g.Stat, "nope")
        out["remove"] = _outcome(g.Remove, "a/f2.txt")
        out["remove_missing"] = _outcome(io.remove, "a/f2.txt")
        out["remove_dir"] = _outcome(g.Remove, "a/b")
        out["walk"] = _outcome(lambda: [(d, sorted(s), sorted(f)) for d, s, f in g.Walk("a")])
        out["walk_post"] = _outcome(lambda: [(d, sorted(s), sorted(f))
                                             for d, s, f in g.Walk("a", in_order=False)])
        out["walk_io_bottom_up"] = _outcome(lambda: [d for d, _, _ in io.walk("a", topdown=False)])
        out["walk_missing"] = _outcome(lambda: list(io.walk("nope")))
        out["rmtree_missing"] = _outcome(g.DeleteRecursively, "nope")
        out["rmtree_file"] = _outcome(g.DeleteRecursively, "a/p")
        out["rmtree"] = _outcome(io.rmtree, "a")
        out["gone"] = _outcome(g.Exists, "a")
        return out
    finally:
        os.chdir(cwd)
        shutil.rmtree(root)


@case
def gfile_on_local_files(tf):
    return _values(_gfile_story(tf.gfile, tf.io.gfile))


@case(rtol=1e-6, atol=1e-8)
def test_compute_gradient_jacobians(tf):
    rng = np.random.RandomState(13)
    x = tf.placeholder(tf.float64, [2, 3])
    w = tf.constant(rng.randn(3, 2))
    y = tf.tanh(tf.matmul(x, w))
    x0, a0, b0 = rng.randn(2, 3), rng.randn(3), rng.randn(3)
    a, b = tf.constant(a0), tf.constant(b0)  # constants can be fed, one at a time
    z = a * b + tf.sin(a)

    def run(sess):
        with sess.as_default():
            theoretical, numerical = tf.test.compute_gradient(x, [2, 3], y, [2, 2],
                                                              x_init_value=x0)
            pairs = tf.test.compute_gradient([a, b], [[3], [3]], z, [3], x_init_value=[a0 * 2, b0])
            error = tf.test.compute_gradient_error(x, [2, 3], y, [2, 2], x_init_value=x0)
        return {"theoretical": theoretical, "numerical": numerical,
                "a_theoretical": pairs[0][0], "b_numerical": pairs[1][1],
                "error_small": error < 1e-6}
    return run
