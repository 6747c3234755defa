"""The ``dtf`` command line: start, inspect and stop a cluster, run job scripts on it."""
