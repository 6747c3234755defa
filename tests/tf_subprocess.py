"""Runs a snippet under real TensorFlow in a separate process, for tests checking that TF
reads what dtf writes. The interpreter comes from ``DTF_TEST_TF_PYTHON`` (a Python with
TensorFlow installed); tests using this skip when it is not set."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import os, sys, json
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
"""


def tf_python() -> str:
    python = os.environ.get("DTF_TEST_TF_PYTHON")
    if not python:
        pytest.skip("set DTF_TEST_TF_PYTHON to a Python with TensorFlow to run this check")
    return python


def run_tf(code: str, *args, timeout=300) -> str:
    """stdout of ``code`` (after the prelude) run by TF's Python with ``args`` as sys.argv[1:]."""
    proc = subprocess.run([tf_python(), "-c", PRELUDE + textwrap.dedent(code), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise AssertionError(f"TensorFlow snippet failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout
