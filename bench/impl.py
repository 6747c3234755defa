"""Which ``tf`` module a process works with: dtf, or TensorFlow's TF1 surface."""
from __future__ import annotations

import os


def load(impl: str):
    """``import dtf as tf`` or ``import tensorflow.compat.v1 as tf`` in graph mode."""
    if impl == "dtf":
        import dtf as tf

        return tf
    if impl == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import logging

        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        return tf
    raise ValueError(f"unknown implementation {impl!r}; use dtf or tf")


def version(impl: str) -> str:
    if impl == "dtf":
        import dtf

        return getattr(dtf, "__version__", "dev")
    import tensorflow

    return tensorflow.__version__
