"""TensorFlow goldens: small programs written once against the TF1 API, run under real
TensorFlow by ``regenerate.py`` (outputs saved in ``data/``) and under dtf by
``tests/unit/test_goldens.py``, which compares the two.

A case module (``cases_*.py``) defines functions decorated with :func:`harness.case`; each
takes the ``tf`` module (``dtf`` or ``tensorflow.compat.v1``) and builds its graph in a fresh
default graph. See ``harness.py`` for what a case may return.
"""
