"""The single-process examples run and learn."""
import os
import sys

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
sys.path.insert(0, EXAMPLES)

import cnn_digits  # noqa: E402
import mlp_digits  # noqa: E402


def test_mlp_reaches_95_percent_on_held_out_digits():
    assert mlp_digits.main(steps=1500) >= 0.95


def test_cnn_loss_falls():
    losses = cnn_digits.main(steps=120)
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])


def test_frozen_graph_serves_from_a_fresh_process(tmp_path):
    import dtf as tf
    import freeze_and_serve

    with tf.Graph().as_default():
        accuracy = freeze_and_serve.main(steps=800, out=str(tmp_path / "frozen.pb"))
    assert accuracy >= 0.95 and (tmp_path / "frozen.pb").is_file()
