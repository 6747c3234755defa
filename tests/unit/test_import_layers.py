"""The layer order of the dtf package, and a check that imports only point down it.

``LAYERS`` is the one place the order is written (README "Layout" and docs/architecture.md
describe it). A module belongs to the layer of the longest prefix that names it; it may
import modules of its own layer and of the layers before it, never of a later one.

Every import counts: module-level ones and those inside functions alike, because a lazy
import is still a dependency (it only hides a cycle until run time). The few that point
up on purpose are in ``ALLOWED``, each with the reason; an entry that no longer matches an
import fails the test too, so the list only shrinks. Imports under ``if TYPE_CHECKING:``
do not run and are skipped.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dtf"

# Lowest first. Each entry: (layer, module prefixes).
LAYERS = [
    ("base", ["dtf.framework", "dtf.logging", "dtf.version", "dtf.progress"]),
    # Variables' containers and checkpoint files: what stateful kernels and the Saver share.
    ("state", ["dtf.state"]),
    # Framing, sockets and the same-host lane: knows nothing of graphs beyond errors.
    ("wire", ["dtf.wire"]),
    # Op definitions (shape inference, gradients) and the Python constructors.
    ("ops", ["dtf.ops"]),
    # Libraries that are both op constructors and what their kernels call.
    ("summary", ["dtf.summary"]),
    ("io", ["dtf.io", "dtf.gfile"]),
    ("data", ["dtf.data"]),
    # Kernel registry, reference semantics, CPU/CUDA kernels, fused-code generation.
    ("kernels", ["dtf.kernels"]),
    # Pure functions of a graph and a cluster.
    ("placement", ["dtf.placement", "dtf.partition"]),
    # Executor, fusion planning, master, worker, rendezvous, the task's service.
    ("runtime", ["dtf.runtime"]),
    ("client", ["dtf.client"]),
    ("train", ["dtf.train", "dtf.distribute", "dtf.saved_model"]),
    # Model-building libraries on top of ops and train.
    ("models", ["dtf.layers", "dtf.losses", "dtf.metrics", "dtf.contrib", "dtf.feature_column",
                "dtf.estimator"]),
    # The public facade: ``import dtf as tf`` and its tf.xxx modules.
    ("api", ["dtf"]),
    ("cli", ["dtf.cli", "dtf.__main__"]),
]

# (importing module, imported module or package) -> why it may point up. Keep it short;
# the imported name matches a module and everything under it.
ALLOWED = {
    # Tensor's operators (x + y, x[i]) and conversions build ops, imported at call time
    # (TF instead has math_ops register them on Tensor; here they stay plain methods).
    ("dtf.framework.ops", "dtf.ops"): "Tensor operators and conversions build ops at call time",
    ("dtf.framework.indexed_slices", "dtf.ops"): "IndexedSlices' dense conversion builds ops",
    ("dtf.framework.importer", "dtf.ops"): "import_graph_def builds the ops of the imported graph",
    ("dtf.framework.importer", "dtf.data.graph_import"): "TF's dataset nodes become dtf Datasets",
    ("dtf.framework.tensor_util", "dtf.ops.constant_op"): "make_tensor_proto converts as tf.constant does",
    # Tensor.eval() and Operation.run() use the default session, as in TF.
    ("dtf.framework.ops", "dtf.client"): "Tensor.eval/Operation.run use the default session",
    ("dtf.ops.sparse_ops", "dtf.client"): "SparseTensor.eval uses the default session",
    ("dtf.ops.variables", "dtf.client"): "Variable.load/eval use the default session",
    ("dtf.ops.variables", "dtf.train.meta_graph"): "Variable.to_proto/from_proto use the meta-graph codec",
    ("dtf.ops.reader_ops", "dtf.io.records"): "TFRecordReader takes tf.io.TFRecordOptions",
    # Kernels that run a function body (If/While, a dataset's map or filter function)
    # build an executor plan for it, as TF's kernels call the function library runtime.
    ("dtf.kernels.cpu.control_flow", "dtf.runtime.functional"): "If/While bodies run as executor plans",
    ("dtf.data.function", "dtf.runtime.executor"): "dataset functions run as executor plans",
    ("dtf.data.pipeline", "dtf.runtime.executor"): "dataset functions run on the executor's float rules",
    # A session to a dtf:// target finds the cluster's keys in the enclosing cluster.toml.
    ("dtf.client.cluster_keys", "dtf.cli.config"): "the cluster.toml parser lives with the dtf command",
}


def _allowed(module: str, target: str) -> bool:
    return any(module == m and (target == t or target.startswith(t + "."))
               for m, t in ALLOWED)


def _layer_of(module: str):
    best = None
    for rank, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[2]:
                    best = (rank, name, len(prefix))
    return best


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    """A module file or a package (namespace packages, without __init__.py, included)."""
    rel = pathlib.Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel).is_dir()


def _type_checking_nodes(tree):
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(path: pathlib.Path):
    """(imported dtf module, line) for every import in the file, resolved to the deepest
    module that exists (``from dtf.ops import math_ops`` is dtf.ops.math_ops)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if _is_module(sub) else target), node.lineno


def violations():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        own = _layer_of(module)
        assert own is not None, f"{module} is in no layer: add its package to LAYERS"
        for target, line in imports_of(path):
            if target != "dtf" and not target.startswith("dtf."):
                continue
            theirs = _layer_of(target)
            assert theirs is not None, f"{module}:{line} imports {target}, which is in no layer"
            if theirs[0] > own[0]:
                found.setdefault((module, target), []).append(
                    f"{path.relative_to(ROOT)}:{line}: {module} ({own[1]}) imports {target} ({theirs[1]})")
    return found


def test_imports_point_down_the_layers():
    found = violations()
    bad = [line for key, lines in sorted(found.items()) if not _allowed(*key) for line in lines]
    assert not bad, "imports that point up the layers (see LAYERS):\n" + "\n".join(bad)


def test_every_allowed_upward_import_still_exists():
    found = violations()
    stale = sorted((m, t) for m, t in ALLOWED
                   if not any(m == fm and (ft == t or ft.startswith(t + ".")) for fm, ft in found))
    assert not stale, f"ALLOWED entries that match no import any more (remove them): {stale}"


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_every_layer_holds_a_module(layer):
    prefixes = dict(LAYERS)[layer]
    assert any(_is_module(p) for p in prefixes), f"layer {layer} names no existing module"


def test_the_check_sees_lazy_and_relative_imports(tmp_path):
    """The parser counts imports inside functions and resolves relative ones."""
    pkg = tmp_path / "dtf" / "kernels"
    pkg.mkdir(parents=True)
    src = pkg / "k.py"
    src.write_text("from . import registry\n\ndef f():\n    from dtf.runtime import executor\n")
    global ROOT
    saved = ROOT
    ROOT = tmp_path
    try:
        (pkg / "registry.py").write_text("")
        (tmp_path / "dtf" / "runtime").mkdir()
        (tmp_path / "dtf" / "runtime" / "executor.py").write_text("")
        assert sorted(imports_of(src)) == [("dtf.kernels.registry", 1), ("dtf.runtime.executor", 4)]
    finally:
        ROOT = saved
