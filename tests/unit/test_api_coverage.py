"""docs/api_coverage.md is what scripts/api_coverage.py writes from the code now."""
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("api_coverage", REPO / "scripts" / "api_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_coverage_doc_is_up_to_date():
    # In a fresh interpreter: what `import dtf` defines, not what other tests imported since.
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "api_coverage.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_api_coverage_lists_names_by_module_and_leaves_out_machinery():
    modules = _generator().collect()
    names = {f"{path}.{name}" for path, entries in modules.items() for name, _ in entries}
    for expected in ("tf.Session", "tf.placeholder", "tf.train.MonitoredTrainingSession",
                     "tf.nn.relu", "tf.errors.InvalidArgumentError", "tf.compat.v1", "tf.float32",
                     "tf.distribute.cluster_resolver.TFConfigClusterResolver", "tf.summary.FileWriter",
                     "tf.contrib.layers.l2_regularizer"):
        assert expected in names, expected
    assert not any(path.split(".")[1:2] in (["runtime"], ["kernels"], ["wire"], ["cli"], ["ops"])
                   for path in modules)
    assert not any(name.startswith("_") for entries in modules.values() for name, _ in entries)
