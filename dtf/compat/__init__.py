"""tf.compat.v1: dtf's surface is TF1's, so v1 is dtf itself (``tf.compat.v1.placeholder``)."""
import sys as _sys


def __getattr__(name):
    if name == "v1":
        return _sys.modules["dtf"]
    raise AttributeError(f"module 'dtf.compat' has no attribute {name!r}")
