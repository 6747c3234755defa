"""examples/layers_digits.py (tf.layers with batch norm and dropout) runs and learns."""
import os
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)

import layers_digits  # noqa: E402


def test_layers_cnn_reaches_90_percent_on_held_out_digits():
    import dtf as tf

    tf.reset_default_graph()
    assert layers_digits.main(steps=150) >= 0.9
