"""`dtf run --estimator` on a chief, a ps, a worker (two trainers) and an evaluator: the
CSV DNNClassifier example through the real CLI, each role with its TF_CONFIG, the steps and
the evaluator's metrics shown live, and the model trained to max_steps."""
import os
import re
import textwrap
from pathlib import Path

import pytest

import dtf as tf
from dtf.train.server import free_port
from tests.cluster.test_cli import _kill, _recorded_pids, dtf

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def estimator_cluster(tmp_path):
    ports = [free_port() for _ in range(4)]
    (tmp_path / "cluster.toml").write_text(textwrap.dedent(f"""\
        [jobs]
        chief = ["127.0.0.1:{ports[0]}"]
        ps = ["127.0.0.1:{ports[1]}"]
        worker = ["127.0.0.1:{ports[2]}"]
        evaluator = ["127.0.0.1:{ports[3]}"]
        """))
    try:
        yield tmp_path
    finally:
        pids = _recorded_pids(tmp_path)
        dtf("down", "--grace", "3", cwd=tmp_path, timeout=30)
        for pid in pids:
            _kill(pid)


def test_train_and_evaluate_under_dtf_run(estimator_cluster):
    model_dir = estimator_cluster / "model"
    max_steps = 300
    r = dtf("run", "--estimator", str(REPO / "examples" / "estimator_csv.py"), "--",
            "--model_dir", str(model_dir), "--max_steps", str(max_steps),
            cwd=estimator_cluster, timeout=400, env={"PYTHONPATH": str(REPO)})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "3 replica(s)" in out, out[-3000:]
    # the evaluator never served: dtf up started chief, ps and worker only
    assert not (estimator_cluster / ".dtf" / "evaluator-0.pid").exists()
    evals = [(int(step), float(acc)) for step, acc in re.findall(
        r"\[eval\] evaluator:0 at global step (\d+): loss [\d.e+-]+, accuracy ([\d.]+)", out)]
    assert evals and evals[-1][0] >= max_steps, out[-3000:]
    assert evals[-1][1] > 0.75
    assert "[evaluator:0] evaluator done" in out
    assert tf.train.load_variable(str(model_dir), "global_step") >= max_steps
    assert os.listdir(model_dir / "eval")
