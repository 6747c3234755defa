"""examples/kubernetes/tfjob.yaml: the manifest parses, uses the image examples/Dockerfile
builds, and every pod, given the TF_CONFIG a Kubeflow training operator sets, finds the
cluster and the task the manifest means."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys

import pytest

yaml = pytest.importorskip("yaml")  # in the [test] extra

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = os.path.join(ROOT, "examples", "kubernetes", "tfjob.yaml")
DOCKERFILE = os.path.join(ROOT, "examples", "Dockerfile")


def _example():
    sys.path.insert(0, os.path.join(ROOT, "examples"))  # it imports between_graph_async
    try:
        spec = importlib.util.spec_from_file_location(
            "managed_between_graph", os.path.join(ROOT, "examples", "managed_between_graph.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(os.path.join(ROOT, "examples"))


def operator_tf_config(job: dict, replica_type: str, index: int) -> str:
    """The TF_CONFIG the training operator gives a pod: every replica at
    NAME-TYPE-I.NAMESPACE.svc:PORT (its headless service; TYPE in lower case, PORT the
    container port named tfjob-port) and this pod's task."""
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    cluster = {}
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        ports = [p["containerPort"] for c in spec["template"]["spec"]["containers"]
                 if c["name"] == "tensorflow" for p in c.get("ports", []) if p["name"] == "tfjob-port"]
        port = ports[0] if ports else 2222
        cluster[rtype.lower()] = [f"{name}-{rtype.lower()}-{i}.{namespace}.svc:{port}"
                                  for i in range(spec["replicas"])]
    return json.dumps({"cluster": cluster, "task": {"type": replica_type.lower(), "index": index},
                       "environment": "cloud"})


@pytest.fixture
def job():
    with open(MANIFEST) as f:
        return yaml.safe_load(f)


@pytest.fixture
def clean_env():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _containers(job):
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        for container in spec["template"]["spec"]["containers"]:
            yield rtype, spec, container


def test_manifest_is_a_tfjob_using_the_readme_image(job):
    assert job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "TFJob"
    tag = re.search(r"docker build -f examples/Dockerfile -t (\S+) \.", open(DOCKERFILE).read()).group(1)
    assert tag in open(os.path.join(ROOT, "README.md")).read()
    assert set(job["spec"]["tfReplicaSpecs"]) == {"PS", "Worker"}
    for rtype, spec, container in _containers(job):
        assert container["name"] == "tensorflow", rtype
        assert container["image"] == tag, rtype
        script = container["command"][1]
        assert os.path.isfile(os.path.join(ROOT, script)), script  # the image has examples/ at its workdir
        env = {e["name"]: e["value"] for e in container["env"]}
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
        assert os.path.dirname(env["DTF_CLUSTER_KEYS"]) == mounts["cluster-key"], rtype
        assert volumes["cluster-key"]["secret"]["defaultMode"] == 0o400, rtype  # owner-only, as dtf requires


@pytest.mark.parametrize("replica_type,index", [("PS", 0), ("Worker", 0), ("Worker", 1)])
def test_each_pod_finds_its_cluster_from_tf_config(job, clean_env, replica_type, index):
    example = _example()
    container = job["spec"]["tfReplicaSpecs"][replica_type]["template"]["spec"]["containers"][0]
    flags = example.parse_flags(container["command"][2:])
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        del os.environ[key]
    os.environ["TF_CONFIG"] = operator_tf_config(job, replica_type, index)
    cluster, job_name, task_index = example.resolve_task(flags)
    assert cluster.as_dict() == {
        "ps": ["dtf-async-ps-0.default.svc:2222"],
        "worker": ["dtf-async-worker-0.default.svc:2222", "dtf-async-worker-1.default.svc:2222"]}
    assert (job_name, task_index) == (replica_type.lower(), index)
    assert flags.checkpoint_dir.startswith("/checkpoints/")
