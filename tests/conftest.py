import pytest

import dtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts with an empty default graph."""
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()
