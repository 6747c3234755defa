"""GPU tests run on Numba's CUDA simulator unless a real GPU is asked for
(DTF_TEST_REAL_GPU=1).

The simulator must be chosen before numba.cuda is first imported in this process. dtf
never imports it at ``import dtf``, so setting the variable here, at collection, is early
enough; if something imported numba.cuda without it before, these tests skip.
"""
import os
import sys

import pytest

REAL_GPU = os.environ.get("DTF_TEST_REAL_GPU") == "1"

if not REAL_GPU:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "numba.core.config" in sys.modules:  # numba read its settings before this ran
        sys.modules["numba.core.config"].reload_config()


def _unusable_reason():
    mod = sys.modules.get("numba.cuda")
    if REAL_GPU or mod is None:
        return None
    if not mod.to_device.__module__.startswith("numba.cuda.simulator"):
        return "numba.cuda was imported without NUMBA_ENABLE_CUDASIM=1 earlier in this process"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _unusable_reason()
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.gpu)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
