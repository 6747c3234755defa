"""One registration per op: the generated index that loads op families and kernels on first
use matches what the code registers, ``import dtf`` loads no kernel family, and every op
definition has a kernel to run and a gradient (or says it has none)."""
import subprocess
import sys
from pathlib import Path

import pytest

import dtf as tf
from dtf.framework import op_registry
from dtf.kernels import registry
from dtf.kernels.reference import REFERENCE

REPO = Path(__file__).resolve().parents[2]

# TF 1.15 registers no gradient for these (nn_grad.py): tf.gradients through one raises
# LookupError there, and here.
NO_GRADIENT_IN_TF = {"SoftsignGrad", "LRNGrad"}
# sparse_grad.py has none for SparseReshape either: tf.sparse.reshape passes the values
# through an Identity, so gradients never need one.
NO_GRADIENT_IN_TF.add("SparseReshape")


def test_registry_index_is_what_the_code_registers():
    # A fresh interpreter imports every module (the CUDA ones in Numba's simulator).
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "registry_index.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_dtf_loads_no_kernel_family():
    code = ("import sys, dtf; print(' '.join(m for m in sys.modules if m.startswith("
            "('dtf.kernels.cpu.', 'dtf.kernels.cuda.', 'dtf.data.', 'dtf.summary.'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    # jit_loading is the compile-cache bookkeeping the runtime starts with, not a family.
    assert loaded <= {"dtf.kernels.cpu.jit_loading"}, sorted(loaded)


def test_every_op_has_a_kernel_and_a_gradient_or_none_on_purpose():
    op_registry.load_all_ops()
    kernels = registry.registered_kernels("CPU")
    cpu = {op for op, dev in kernels if dev == "CPU"}
    ops = op_registry.registered_ops()
    assert len(ops) > 300
    no_kernel = [op for op in ops if op not in cpu and op not in REFERENCE]
    assert not no_kernel, f"op definitions with neither a numpy reference nor a CPU kernel: {no_kernel}"
    no_grad = {op for op in ops if not op_registry.has_gradient_entry(op)}
    assert no_grad == NO_GRADIENT_IN_TF, (
        f"register a gradient (or NotDifferentiable, as TF does) for {sorted(no_grad - NO_GRADIENT_IN_TF)}")


@pytest.mark.parametrize("fn", ["softsign", "lrn"])
def test_gradient_through_an_op_tf_gives_none_raises_as_in_tf(fn):
    with tf.Graph().as_default():
        x = tf.constant([[[[0.5, -1.0, 2.0]]]])
        d, = tf.gradients(tf.reduce_sum(getattr(tf.nn, fn)(x)), [x])
        with pytest.raises(LookupError, match="No gradient defined"):
            tf.gradients(d, [x])


def test_lookups_load_only_the_family_they_need_and_misses_stay_loud():
    assert registry.lookup("Cumsum", "CPU", "float32").label == "numpy reference"
    assert "Cumsum" in REFERENCE and "NoSuchOp" not in REFERENCE
    with pytest.raises(tf.errors.NotFoundError, match="no kernel registered for it at all"):
        registry.lookup("NoSuchOp", "CPU", "float32")
    with pytest.raises(KeyError, match="did you mean"):
        op_registry.get_op_def("IteratorGetNxt")
    # An op family that `import dtf` leaves out registers its definition on first use.
    assert op_registry.get_op_def("IteratorGetNext").module == "dtf.data.iterator_ops"


def test_host_flag_is_for_cpu_kernels():
    with pytest.raises(ValueError, match="host=True is for CPU kernels"):
        registry.register_kernel("Cumsum", "GPU", host=True)
