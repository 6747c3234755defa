"""Slurm: hostlist expansion, SlurmClusterResolver against TF's answers, and the [slurm]
cluster.toml (task counts resolved from SLURM_JOB_NODELIST, tasks started by srun)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

import dtf as tf
from dtf.cli import config, launch, slurm
from dtf.distribute import slurm_cluster_resolver
from dtf.distribute.slurm_hostlist import expand_hostlist, expand_tasks_per_node, place_tasks

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fixtures", "tf", "slurm_resolver.py")


def _fixture_module():
    spec = importlib.util.spec_from_file_location("slurm_resolver_cases", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def clean_env():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_resolver_answers_as_tensorflow_did(clean_env):
    cases = _fixture_module()
    with open(cases.ORACLE) as f:
        oracle = json.load(f)
    # JSON round trip: tuples and lists compare alike.
    got = json.loads(json.dumps(cases.run_all(slurm_cluster_resolver)))
    for name in oracle:
        assert got[name] == oracle[name], name


def test_resolver_is_the_tf_name():
    assert tf.distribute.cluster_resolver.SlurmClusterResolver is slurm_cluster_resolver.SlurmClusterResolver
    assert issubclass(tf.distribute.cluster_resolver.SlurmClusterResolver,
                      tf.distribute.cluster_resolver.ClusterResolver)


def test_resolver_without_gpus_still_resolves_every_task(clean_env):
    # TF divides by zero here (range step 0); dtf's tasks run on CPUs.
    for key in [k for k in os.environ if k.startswith("SLURM_") or k == "CUDA_VISIBLE_DEVICES"]:
        del os.environ[key]
    os.environ.update(SLURM_PROCID="2", SLURM_STEP_NODELIST="c[1-2]", SLURM_STEP_TASKS_PER_NODE="2,1",
                      SLURM_STEP_NUM_TASKS="3")
    r = tf.distribute.cluster_resolver.SlurmClusterResolver({"ps": 1, "worker": 2}, gpus_per_node=0)
    assert r.cluster_spec().as_dict() == {"ps": ["c1:8888"], "worker": ["c1:8889", "c2:8888"]}
    assert r.get_task_info() == ("worker", 1)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
    assert r.num_accelerators() == {"GPU": 0}
    assert r.master() == "grpc://c2:8888"
    with pytest.raises(ValueError, match="jobs must be a dict"):
        tf.distribute.cluster_resolver.SlurmClusterResolver(["worker"], gpus_per_node=0)
    with pytest.raises(ValueError, match="port_base must be a non-negative integer"):
        tf.distribute.cluster_resolver.SlurmClusterResolver({"worker": 3}, port_base="88", gpus_per_node=0)


@pytest.mark.parametrize("hostlist,hosts", [
    ("node[01-03,7]", ["node01", "node02", "node03", "node7"]),
    ("n[1-2],m5,o[3-4,6,7-9]", ["n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"]),
    ("x[9-11]", ["x9", "x10", "x11"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),  # two bracket groups: every combination
    ("a-1,b.2", ["a-1", "b.2"]),
    ("single", ["single"]),
])
def test_expand_hostlist(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("hostlist,message", [
    ("", "names no host"),
    ("n[1-2", "'\\[' without '\\]'"),
    ("n1-2]", "'\\]' without '\\['"),
    ("n[[1]]", "nested"),
    ("n[3-1]", "runs backwards"),
    ("n[a-b]", "neither a number nor a range"),
    ("n1,,n2", "empty name"),
])
def test_expand_hostlist_errors_name_the_list(hostlist, message):
    with pytest.raises(ValueError, match=message):
        expand_hostlist(hostlist)


def test_expand_tasks_per_node():
    assert expand_tasks_per_node("3(x2),2,1") == [3, 3, 2, 1]
    with pytest.raises(ValueError, match="'2x' is not N or N\\(xR\\)"):
        expand_tasks_per_node("1,2x")


def test_place_tasks_is_the_resolver_layout_and_refuses_too_many():
    assert place_tasks({"worker": 2, "ps": 1}, {"b": 2, "a": 2}, 2222) == {
        "ps": ["a:2222"], "worker": ["a:2223", "b:2222"]}
    with pytest.raises(ValueError, match="want 5 tasks but the nodes hold 4"):
        place_tasks({"worker": 5}, {"a": 2, "b": 2}, 2222)


def _write(tmp_path, text):
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return path


def test_counts_take_their_addresses_from_the_allocation(tmp_path, clean_env):
    os.environ["SLURM_JOB_NODELIST"] = "gpu[07-08]"
    cfg = config.load(_write(tmp_path, "[jobs]\nps = 1\nworker = 3\n\n[slurm]\nport_base = 3000\n"))
    # Evenly spread: 4 tasks on 2 nodes, 2 each; jobs sorted by name fill them in turn.
    assert cfg.jobs == {"ps": ["gpu07:3000"], "worker": ["gpu07:3001", "gpu08:3000", "gpu08:3001"]}
    assert cfg.slurm == slurm.SlurmSettings(port_base=3000)
    cfg = config.load(_write(tmp_path, "[jobs]\nworker = 2\n\n[slurm]\ntasks_per_node = 2\n"
                             'srun_options = ["--partition=cpu"]\n'))
    assert cfg.jobs == {"worker": ["gpu07:8888", "gpu07:8889"]}
    assert cfg.slurm.srun_options == ("--partition=cpu",)
    # Counts alone imply Slurm (its defaults).
    assert config.load(_write(tmp_path, "[jobs]\nworker = 1\n")).slurm == slurm.SlurmSettings()
    # Addresses with [slurm]: the tasks are started by srun on the named nodes.
    cfg = config.load(_write(tmp_path, '[jobs]\nworker = ["gpu08:2222"]\n[slurm]\n'))
    assert cfg.jobs == {"worker": ["gpu08:2222"]} and cfg.slurm is not None


@pytest.mark.parametrize("text,message", [
    ("[jobs]\nworker = 2\n", "SLURM_JOB_NODELIST is not set"),
    ("[jobs]\nworker = 2\nps = [\"h:1\"]\n", "like the other jobs"),
    ("[jobs]\nworker = 0\n", "like the other jobs"),
    ("[jobs]\nworker = 1\n[slurm]\nport_base = 80\n", "port_base must be a whole number 1024..65535"),
    ("[jobs]\nworker = 1\n[slurm]\nnodes = 2\n", "unknown key 'nodes' in \\[slurm\\]"),
    ("[jobs]\nworker = 1\n[slurm]\nsrun_options = \"-p x\"\n", "srun_options must be a list of strings"),
])
def test_bad_slurm_configs_are_named(tmp_path, clean_env, text, message):
    os.environ.pop("SLURM_JOB_NODELIST", None)
    if "NODELIST" not in message:
        os.environ["SLURM_JOB_NODELIST"] = "n1"
    with pytest.raises(config.ConfigError, match=message):
        config.load(_write(tmp_path, text))


def test_too_many_tasks_for_the_allocation_is_named(tmp_path, clean_env):
    os.environ["SLURM_JOB_NODELIST"] = "n[1-2]"
    with pytest.raises(config.ConfigError, match="want 5 tasks but the nodes hold 4"):
        config.load(_write(tmp_path, "[jobs]\nworker = 5\n[slurm]\ntasks_per_node = 2\n"))


def test_srun_command_and_launch_checks(tmp_path, clean_env):
    os.environ["SLURM_JOB_NODELIST"] = "n[1-2]"
    os.environ.pop("SLURM_JOB_ID", None)
    cfg = config.load(_write(tmp_path, '[jobs]\nps = 1\nworker = 1\n[slurm]\nsrun = "/bin/true"\n'
                             'srun_options = ["--partition=cpu"]\n'))
    task = cfg.task("worker:0")
    command = slurm.srun_command(cfg, task)
    assert command[:7] == ["/bin/true", "--nodes=1", "--ntasks=1", "--nodelist=n2", "--overlap",
                           "--job-name=dtf-worker-0", "--kill-on-bad-exit=1"]
    assert command[7] == "--partition=cpu"
    assert command[8:] == launch.server_command(cfg, task)  # `dtf server` on the node
    assert "not inside a Slurm allocation" in slurm.check_launch(cfg)
    os.environ["SLURM_JOB_ID"] = "7"
    assert slurm.check_launch(cfg) is None
    cfg = config.load(_write(tmp_path, '[jobs]\nworker = ["n3:2222"]\n[slurm]\nsrun = "/bin/true"\n'))
    assert "worker:0 (n3:2222)" in slurm.check_launch(cfg)
