import sys

import pytest

import dtf as tf
from dtf.kernels.cpu import jit_loading

# Tests of kernels must run the Numba loops, not the numpy that stands in while they load in
# the background (tests/unit/test_jit_loading.py covers that in processes of its own).
jit_loading.BACKGROUND = False


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts with an empty default graph (and no cached summary writers)."""
    tf.reset_default_graph()
    yield
    writer = sys.modules.get("dtf.summary.writer")
    if writer is not None:
        writer.FileWriterCache.clear()
    tf.reset_default_graph()
