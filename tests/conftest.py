import sys

import pytest

import dtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts with an empty default graph (and no cached summary writers)."""
    tf.reset_default_graph()
    yield
    writer = sys.modules.get("dtf.summary.writer")
    if writer is not None:
        writer.FileWriterCache.clear()
    tf.reset_default_graph()
