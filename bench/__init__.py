"""Side-by-side benchmarks of dtf and (when installed) TensorFlow: ``python -m bench``.

Nothing here is imported by dtf, and nothing at package level imports dtf or TensorFlow:
the same workload code runs under either interpreter (see ``bench/probe.py``).
"""
