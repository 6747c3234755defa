"""The op families ``import dtf`` leaves out load on first use of a public name: the generated
index matches what the families export, ``import dtf`` really leaves them out, every way in
(attribute, ``from dtf import``, dir, a graph imported without the Python call) still works,
and each family registers its gradients with its op definitions."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dtf as tf
from dtf.framework import api_index

REPO = Path(__file__).resolve().parents[2]
# TF registers no gradient for it either (see test_registry_index).
NO_GRADIENT_IN_TF = {"SparseReshape"}


def _fresh(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_api_index_is_what_the_families_export():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "api_index.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_dtf_loads_no_lazy_family():
    out = _fresh("import sys, dtf; from dtf.framework import api_index as a; "
                 "print(' '.join(m for m in a.FAMILIES if m in sys.modules))")
    assert out.split() == []


def test_lazy_names_resolve_as_attribute_from_import_and_dir():
    from dtf import cholesky_solve, segment_sum  # noqa: F401 - PEP 562 serves from-imports too

    assert tf.segment_sum is segment_sum
    for name, family in api_index.NAMES.items():
        assert getattr(tf, name) is getattr(sys.modules[family], name), name
    assert set(api_index.NAMES) <= set(dir(tf))
    with pytest.raises(AttributeError, match="no attribute 'segment_summ'"):
        tf.segment_summ  # noqa: B018


def test_lazy_name_builds_and_runs():
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.segment_sum(x * x, tf.constant([0, 0, 1]))
        g, = tf.gradients(tf.reduce_sum(y), [x])
        yv, gv = sess.run([y, g])
    np.testing.assert_allclose(yv, [5.0, 9.0])
    np.testing.assert_allclose(gv, [2.0, 4.0, 6.0])


def test_imported_graph_finds_a_lazy_familys_definition_and_gradient():
    # A GraphDef holding ops of families this process never imported: the op-definition
    # index loads them, and their gradients with them.
    build = ("import dtf as tf, sys\n"
             "x = tf.placeholder(tf.float32, [2, 2], name='x')\n"
             "y = tf.identity(tf.matrix_solve(x, tf.ones([2, 1])), name='y')\n"
             "sys.stdout.write(tf.get_default_graph().as_graph_def().SerializeToString().hex())\n")
    gdef_hex = _fresh(build).strip()
    use = ("import sys, numpy as np, dtf as tf\n"
           "gd = tf.GraphDef(); gd.ParseFromString(bytes.fromhex(sys.argv[1]))\n"
           "assert 'dtf.ops.linalg_solve_ops' not in sys.modules\n"
           "x, y = tf.import_graph_def(gd, return_elements=['x:0', 'y:0'], name='')\n"
           "g, = tf.gradients(tf.reduce_sum(y), [x])\n"
           "with tf.Session() as s:\n"
           "    print(s.run(g, {x: np.eye(2, dtype=np.float32) * 2}).tolist())\n")
    r = subprocess.run([sys.executable, "-c", use, gdef_hex], capture_output=True, text=True, cwd=REPO,
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    np.testing.assert_allclose(eval(r.stdout), [[-0.25, -0.25], [-0.25, -0.25]])  # noqa: S307 - our own print


def test_each_lazy_family_registers_its_gradients_with_its_op_definitions():
    out = _fresh(
        "import importlib, dtf\n"
        "from dtf.framework import api_index as a, op_registry as o, registry_index as r\n"
        "for fam in a.FAMILIES:\n"
        "    importlib.import_module(fam)\n"
        "    for op, mods in r.OPS.items():\n"
        "        if fam in ((mods,) if isinstance(mods, str) else mods) and op not in o._GRADIENTS:\n"
        "            print(op)\n")
    assert set(out.split()) <= NO_GRADIENT_IN_TF
