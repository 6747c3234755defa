"""tf.train: training_util."""
from __future__ import annotations

__all__: list = []
