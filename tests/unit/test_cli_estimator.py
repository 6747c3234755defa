"""`dtf run --estimator`'s parts: an evaluator task in cluster.toml (outside the training
cluster, as in TF), the TF_CONFIG each role gets, and eval metrics in the live view."""
import json

import pytest

from dtf.cli import config
from dtf.cli.live import Progress
from dtf.cli.run import _estimator_targets, _tf_config

ESTIMATOR = """
[jobs]
chief = ["127.0.0.1:2222"]
ps = ["127.0.0.1:2223"]
worker = ["127.0.0.1:2224"]
evaluator = ["127.0.0.1:2225"]
"""


def _load(tmp_path, text):
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return config.load(path)


def test_evaluator_is_run_but_not_served(tmp_path):
    cfg = _load(tmp_path, ESTIMATOR)
    assert [t.name for t in cfg.tasks()] == ["chief:0", "ps:0", "worker:0"]
    assert "evaluator" not in cfg.cluster_dict()
    assert cfg.task("evaluator").address == "127.0.0.1:2225"
    targets = _estimator_targets(cfg)
    assert [t.name for t in targets] == ["chief:0", "evaluator:0", "worker:0"]
    roles = {t.name: json.loads(_tf_config(cfg, t)) for t in targets}
    assert roles["evaluator:0"]["task"] == {"type": "evaluator", "index": 0}
    assert roles["chief:0"]["cluster"] == {"chief": ["127.0.0.1:2222"], "ps": ["127.0.0.1:2223"],
                                           "worker": ["127.0.0.1:2224"]}


def test_two_evaluators_are_refused(tmp_path):
    with pytest.raises(config.ConfigError, match="at most one evaluator"):
        _load(tmp_path, '[jobs]\nchief = ["127.0.0.1:2222"]\n'
                        'evaluator = ["127.0.0.1:2223", "127.0.0.1:2224"]\n')


def test_estimator_run_needs_a_chief(tmp_path, capsys):
    import typer

    cfg = _load(tmp_path, '[jobs]\nps = ["127.0.0.1:2222"]\nworker = ["127.0.0.1:2223"]\n')
    with pytest.raises(typer.Exit):
        _estimator_targets(cfg)
    assert "no chief job" in capsys.readouterr().err


def test_eval_reports_show_as_lines_and_under_the_table():
    progress = Progress(["chief:0", "evaluator:0"])
    lines = progress.update({"kind": "eval", "task": "evaluator:0", "time": 1.0,
                             "global_step": 300, "metrics": {"accuracy": 0.9125, "loss": 0.25,
                                                             "bad": "x"}})
    assert lines == ["[eval] evaluator:0 at global step 300: loss 0.25, accuracy 0.9125"]
    progress.update({"kind": "eval", "task": "evaluator:0", "metrics": ["not", "a", "dict"]})
    assert progress.evaluation[2] == {}
    table = progress.table(120)
    assert "last eval" in str(table.caption)
