"""Every golden case, run under dtf and compared with TensorFlow's recorded outputs
(tests/goldens/data, written by tests/goldens/regenerate.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import dtf as tf
from tests.goldens.harness import data_path, load_all, run_case

CASES = load_all()
_RECORDED: dict[str, dict] = {}


def recorded(module):
    if module not in _RECORDED:
        path = data_path(module)
        _RECORDED[module] = dict(np.load(path)) if os.path.exists(path) else {}
    return _RECORDED[module]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    c = CASES[name]
    want = {k.split("/", 1)[1]: v for k, v in recorded(c.module).items()
            if k.split("/", 1)[0] == name.split(".", 1)[1]}
    assert want, f"no TensorFlow output recorded for {name}: run tests/goldens/regenerate.py"
    got = run_case(tf, c)
    assert sorted(got) == sorted(want), f"{name}: dtf returned {sorted(got)}, TF {sorted(want)}"
    for key in sorted(want):
        g, w = got[key], want[key]
        where = f"{name}[{key}]"
        assert g.shape == w.shape, f"{where}: shape {g.shape}, TF {w.shape}"
        if w.dtype.kind == "U":
            assert g.dtype.kind == "U", f"{where}: dtype {g.dtype}, TF strings"
        else:
            assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, TF {w.dtype}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=c.rtol, atol=c.atol, err_msg=where)
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def test_every_recorded_value_has_a_case():
    """A case renamed or deleted must take its recording with it."""
    names = {n.split(".", 1)[1] for n in CASES}
    modules = {c.module for c in CASES.values()}
    for module in modules:
        for key in recorded(module):
            if key != "__tf_version__":
                assert key.split("/", 1)[0] in names, f"{module}: stale golden {key}"
