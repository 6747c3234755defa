"""Records TensorFlow's outputs for every golden case into tests/goldens/data/.

Needs TensorFlow (``pip install tensorflow-cpu`` in a separate environment; dtf never
depends on it). Run from the repository root:

    /path/to/tf-venv/bin/python -m tests.goldens.regenerate [module ...]

With module names (``cases_dtypes``) only those files are rewritten. A case that fails
under TensorFlow is reported and left out, so its test fails until the case is fixed.
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# tf.compat.v1.layers exists only with Keras 2 (the tf_keras package beside TensorFlow);
# without it the layers' cases fail and everything else records as usual.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402


def main(argv):
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)
    from tests.goldens.harness import data_path, load_all, run_case

    cases = load_all()
    wanted = set(argv) or {c.module for c in cases.values()}
    by_module: dict[str, dict] = {}
    failed = 0
    for c in cases.values():
        if c.module not in wanted:
            continue
        try:
            values = run_case(tf, c)
        except Exception as e:  # report every failing case, not only the first
            failed += 1
            print(f"FAILED {c.name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        out = by_module.setdefault(c.module, {})
        for key, value in values.items():
            out[f"{c.name.split('.', 1)[1]}/{key}"] = value
    for module, arrays in sorted(by_module.items()):
        np.savez_compressed(data_path(module), __tf_version__=np.asarray(tf.VERSION), **arrays)
        print(f"{data_path(module)}: {len(arrays)} values (TensorFlow {tf.VERSION})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
