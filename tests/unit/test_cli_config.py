"""cluster.toml parsing: the good file, the optional sections, and every error path."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dtf.cli import config

GOOD = """
[jobs]
ps = ["127.0.0.1:2222"]
worker = ["127.0.0.1:2223", "localhost:2224"]

[ssh]
user = "me"
python = "/opt/venv/bin/python"

[ssh.hosts."10.0.0.5"]
port = 2200
identity_file = "~/.ssh/id_ed25519"
workdir = "/srv/job"

[env]
OMP_NUM_THREADS = 1
DTF_LOG = "info"

[paths]
state_dir = "run/state"
"""


def write(tmp_path, text) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return path


def test_good_file(tmp_path):
    cfg = config.load(write(tmp_path, GOOD))
    assert cfg.jobs == {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "localhost:2224"]}
    assert [t.name for t in cfg.tasks()] == ["ps:0", "worker:0", "worker:1"]
    assert cfg.task("worker:1").address == "localhost:2224"
    assert cfg.task("ps").port == 2222
    assert cfg.env == {"OMP_NUM_THREADS": "1", "DTF_LOG": "info"}
    assert cfg.state_dir == tmp_path.resolve() / "run/state"
    assert cfg.log_dir == cfg.state_dir / "logs"
    remote = cfg.ssh_for("10.0.0.5")
    assert (remote.user, remote.port, remote.python, remote.workdir) == \
        ("me", 2200, "/opt/venv/bin/python", "/srv/job")
    assert cfg.ssh_for("other").port is None


def test_defaults(tmp_path):
    cfg = config.load(write(tmp_path, '[jobs]\nworker = ["127.0.0.1:2222"]\n'))
    assert cfg.state_dir == tmp_path.resolve() / ".dtf"
    assert cfg.env == {} and cfg.ssh_for("127.0.0.1").python == "python3"
    assert config.is_local_host("localhost") and not config.is_local_host("10.1.2.3")


@pytest.mark.parametrize("text, words, line", [
    ('[jobs]\nworker = ["127.0.0.1:2222" "x"]\n', ["not valid TOML"], 2),
    ('[jobs]\nworker = "127.0.0.1:2222"\n', ["must be a list", "worker"], 2),
    ('[jobs]\nworker = [2222]\n', ["must be a list"], 2),
    ('[jobs]\nworker = ["127.0.0.1"]\n', ["no port"], 2),
    ('[jobs]\nworker = ["127.0.0.1:http"]\n', ["not a number"], 2),
    ('[jobs]\nworker = ["127.0.0.1:70000"]\n', ["out of range"], 2),
    ('[jobs]\nworker = ["127.0.0.1:0"]\n', ["out of range"], 2),
    ('[jobs]\nps = ["127.0.0.1:2222"]\nworker = ["localhost:2222"]\n', ["used twice", "ps:0"], 3),
    ('[jobs]\n', ["lists no jobs"], 1),
    ('[env]\nA = "1"\n', ["no [jobs] section"], None),
    ('[jobs]\nworker = []\n', ["has no tasks"], 2),
    ('[jobs]\n"bad/job" = ["127.0.0.1:2222"]\n', ["job name"], 2),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[job]\n', ["unknown section", "'job'"], 1),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[ssh]\nprot = 22\n', ["unknown key 'prot'"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[ssh]\nport = "22"\n', ["port number"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[env]\nA = [1]\n', ["[env] A"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[paths]\nlogs = "x"\n', ["unknown key 'logs'"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[security]\nmode = "tls"\n', ["[security] mode", "'tls'"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[security]\nkeys = 1\n', ["[security] keys"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[security]\nallow_plain_remote = "yes"\n',
     ["allow_plain_remote must be true or false"], 4),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[security]\nkey = "k"\n', ["unknown key 'key'", "mode"], 4),
    ('security = "plain"\n[jobs]\nworker = ["127.0.0.1:2222"]\n', ["[security] must be a table"], 1),
    ('[jobs]\nworker = ["127.0.0.1:2222"]\n[env]\nDTF_CLUSTER_KEYS = "k"\n',
     ["must not set DTF_CLUSTER_KEYS", "[security] keys"], 4),
])
def test_bad_files(tmp_path, text, words, line):
    path = write(tmp_path, text)
    with pytest.raises(config.ConfigError) as e:
        config.load(path)
    message = str(e.value)
    assert str(path) in message
    for w in words:
        assert w in message
    if line is not None:
        assert f"line {line}" in message


def test_security_defaults_to_curve_with_keys_in_the_state_dir(tmp_path):
    cfg = config.load(write(tmp_path, GOOD))
    assert cfg.security.curve and not cfg.security.allow_plain_remote
    assert cfg.key_path == cfg.state_dir / "cluster.key"


def test_security_section(tmp_path):
    cfg = config.load(write(tmp_path, '[jobs]\nworker = ["198.51.100.7:2222"]\n[security]\n'
                                      'mode = "plain"\nkeys = "secret/k.key"\nallow_plain_remote = true\n'))
    assert cfg.security == config.SecuritySettings("plain", tmp_path.resolve() / "secret/k.key", True)
    assert not cfg.security.curve and cfg.key_path == tmp_path.resolve() / "secret/k.key"


def test_plain_remote_allowed_explicitly_starts_nothing_here(tmp_path, monkeypatch):
    """Only the check: allow_plain_remote = true passes it (and plain mode drops keys)."""
    from dtf.cli import keys

    monkeypatch.setenv(config.ENV_KEYS, str(tmp_path / "inherited.key"))
    cfg = config.load(write(tmp_path, '[jobs]\nworker = ["198.51.100.7:2222"]\n[security]\n'
                                      'mode = "plain"\nallow_plain_remote = true\n'))
    assert keys.prepare_launch(cfg) is None
    assert config.ENV_KEYS not in os.environ and not cfg.state_dir.exists()


def test_curve_keys_are_created_once_owner_only(tmp_path, monkeypatch):
    from dtf.cli import keys
    from dtf.wire.security import ClusterKeys

    # Set, then removed: prepare_launch exports the variable, and monkeypatch only puts
    # back what it recorded (a later test's client would otherwise use these keys).
    monkeypatch.setenv(config.ENV_KEYS, "")
    monkeypatch.delenv(config.ENV_KEYS)
    cfg = config.load(write(tmp_path, '[jobs]\nworker = ["127.0.0.1:2222"]\n'))
    assert keys.prepare_client(cfg) is None  # nothing created by a command that only asks
    path = keys.prepare_launch(cfg)
    assert path == cfg.key_path and os.environ[config.ENV_KEYS] == str(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cfg.state_dir.stat().st_mode) == 0o700
    first = ClusterKeys.load(path)
    assert keys.prepare_launch(cfg) == path and ClusterKeys.load(path) == first
    assert keys.prepare_client(cfg) == path
    assert sorted(p.name for p in cfg.state_dir.iterdir()) == ["cluster.key"]


def test_loopback():
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        assert config.is_loopback(host), host
    for host in ("0.0.0.0", "198.51.100.7", "example.org", "10.0.0.5"):
        assert not config.is_loopback(host), host


def test_missing_file(tmp_path):
    with pytest.raises(config.ConfigError, match="does not exist"):
        config.load(tmp_path / "nope.toml")


def test_unknown_task(tmp_path):
    cfg = config.load(write(tmp_path, '[jobs]\nworker = ["127.0.0.1:2222", "127.0.0.1:2223"]\n'))
    with pytest.raises(config.TaskNameError, match="tasks 0..1"):
        cfg.task("worker:5")
    with pytest.raises(config.TaskNameError, match="no job 'ps'"):
        cfg.task("ps:0")


@pytest.mark.parametrize("command", [["status"], ["up"], ["down"], ["logs", "worker:0"],
                                     ["server", "--job", "worker", "--task", "0"]])
def test_cli_reports_bad_file_without_traceback(tmp_path, command):
    path = write(tmp_path, '[jobs]\nworker = ["127.0.0.1:99999"]\n')
    r = subprocess.run([sys.executable, "-m", "dtf", *command, "-c", str(path)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr + r.stdout
    assert str(path) in r.stderr and "out of range" in r.stderr and "line 2" in r.stderr


def test_cli_missing_default_file(tmp_path):
    r = subprocess.run([sys.executable, "-m", "dtf", "status"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cluster.toml" in r.stderr and "does not exist" in r.stderr
