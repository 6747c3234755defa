"""tf.distribute: cluster resolvers (``tf.distribute.cluster_resolver``)."""
from dtf.distribute import cluster_resolver  # noqa: F401

__all__ = ["cluster_resolver"]
