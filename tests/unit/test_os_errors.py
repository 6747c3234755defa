"""OS errors while saving checkpoints or writing summaries come out as TF's tf.errors
class for the errno, naming the file and carrying the OS's message."""
import errno
import shutil
import subprocess
import sys
import textwrap

import pytest

import dtf as tf
from dtf.framework import os_errors


@pytest.mark.parametrize("code,cls", [(errno.ENOSPC, tf.errors.ResourceExhaustedError),
                                      (errno.EROFS, tf.errors.PermissionDeniedError),
                                      (errno.EACCES, tf.errors.PermissionDeniedError),
                                      (errno.ENOENT, tf.errors.NotFoundError),
                                      (errno.EIO, tf.errors.UnknownError)])
def test_errno_maps_to_tfs_class_with_path_and_os_message(code, cls):
    err = os_errors.from_os_error(OSError(code, "the OS says", "/ckpt/model.ckpt.index"))
    assert type(err) is cls and err.message == "/ckpt/model.ckpt.index; the OS says"


def _unshare_works():
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rm", "true"], capture_output=True).returncode == 0


# A full disk and a read-only directory, for real: small tmpfs mounts in a private mount
# namespace (no privileges needed where user namespaces are allowed).
SCRIPT = textwrap.dedent("""\
    import os, subprocess, sys
    import numpy as np
    import dtf as tf
    full, ro = sys.argv[1], sys.argv[2]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro], check=True)
    v = tf.Variable(np.zeros(1 << 18, np.float32), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        try:
            tf.train.Saver().save(sess, os.path.join(full, "model.ckpt"))
        except Exception as e:
            print("SAVE", type(e).__name__, getattr(e, "message", e))
    try:
        tf.summary.FileWriter(os.path.join(ro, "logs"))
    except Exception as e:
        print("WRITER", type(e).__name__, getattr(e, "message", e))
    """)


@pytest.mark.skipif(not _unshare_works(), reason="needs unprivileged user and mount namespaces")
def test_full_disk_and_read_only_directory(tmp_path):
    full, ro = tmp_path / "full", tmp_path / "ro"
    full.mkdir()
    ro.mkdir()
    r = subprocess.run(["unshare", "-rm", sys.executable, "-c", SCRIPT, str(full), str(ro)],
                       capture_output=True, text=True, timeout=60)
    out = r.stdout
    assert f"SAVE ResourceExhaustedError" in out and "No space left on device" in out, r.stdout + r.stderr
    assert str(full) in out.split("SAVE", 1)[1]
    assert f"WRITER PermissionDeniedError {ro}/logs; Read-only file system" in out, r.stdout + r.stderr
