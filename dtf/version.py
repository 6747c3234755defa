"""tf.version: the TensorFlow version whose API and semantics dtf follows, TF 1.15.

Programs check ``tf.__version__``/``tf.VERSION`` to pick TF1 code paths, so these say
1.15.0; GIT_VERSION names dtf's own release. GRAPH_DEF_VERSION is TF 1.15's.
"""
VERSION = "1.15.0"
DTF_VERSION = "0.1.0"  # dtf's own release (pyproject.toml)
GIT_VERSION = f"v{VERSION}-dtf-{DTF_VERSION}"
COMPILER_VERSION = "numba"
GRAPH_DEF_VERSION = 134
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
