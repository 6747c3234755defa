"""tf.io: TF 1.x's I/O namespace (so far its file API, tf.io.gfile)."""
from dtf.io import gfile  # noqa: F401
