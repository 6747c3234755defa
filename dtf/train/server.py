"""tf.train: server."""
from __future__ import annotations

__all__: list = []
