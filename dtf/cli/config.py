"""cluster.toml: the jobs of a cluster and how to start and reach their tasks.

Only the standard library is imported here, so every command can load its config before
paying for numpy or zmq. Every problem with the file becomes one ``ConfigError`` whose
text names the file (and the line, where one is known) and says what to write instead.
"""
from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

DEFAULT_NAME = "cluster.toml"
_SECTIONS = ("jobs", "ssh", "env", "paths")
_SSH_KEYS = ("user", "port", "identity_file", "python", "workdir", "options")
_JOB_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"}
_EXAMPLE = '[jobs]\nps = ["127.0.0.1:2222"]\nworker = ["127.0.0.1:2223", "127.0.0.1:2224"]'


class ConfigError(Exception):
    """A cluster.toml that cannot be used; ``str()`` is the message for the user."""

    def __init__(self, path, message, line=None):
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"Bad cluster config {where}: {message}")


@dataclass(frozen=True)
class Task:
    job: str
    index: int
    address: str

    @property
    def name(self) -> str:
        """'worker:0': how the CLI names a task (and its log and pid files)."""
        return f"{self.job}:{self.index}"

    @property
    def host(self) -> str:
        return self.address.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    @property
    def device_name(self) -> str:
        return f"/job:{self.job}/replica:0/task:{self.index}"


@dataclass(frozen=True)
class SshSettings:
    """How to reach one host; unset fields fall back to ssh's own defaults."""

    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    python: str = "python3"
    workdir: str | None = None
    options: tuple = ()


@dataclass
class ClusterConfig:
    path: Path
    jobs: dict  # job -> [address, ...]
    env: dict = field(default_factory=dict)
    ssh_defaults: dict = field(default_factory=dict)
    ssh_hosts: dict = field(default_factory=dict)
    state_dir: Path = None
    log_dir: Path = None

    def tasks(self) -> list:
        return [Task(job, i, a) for job in sorted(self.jobs) for i, a in enumerate(self.jobs[job])]

    def task(self, spec: str) -> Task:
        """'worker:1' (or 'worker' when the job has one task) -> its Task."""
        job, _, index = spec.partition(":")
        if job not in self.jobs:
            raise ConfigError(self.path, f"no job {job!r} (jobs: {', '.join(sorted(self.jobs))})")
        if not index and len(self.jobs[job]) == 1:
            index = "0"
        if not index.isdigit() or int(index) >= len(self.jobs[job]):
            raise ConfigError(self.path, f"no task {spec!r}: job {job!r} has tasks "
                              f"0..{len(self.jobs[job]) - 1}; name one as {job}:N")
        return Task(job, int(index), self.jobs[job][int(index)])

    def cluster_dict(self) -> dict:
        """{job: [address, ...]}: what ClusterSpec and TF_CONFIG take."""
        return {job: list(addresses) for job, addresses in self.jobs.items()}

    def ssh_for(self, host: str) -> SshSettings:
        merged = {**self.ssh_defaults, **self.ssh_hosts.get(host, {})}
        merged["options"] = tuple(merged.get("options", ()))
        if merged.get("identity_file"):  # "~" and paths relative to this file, as in [paths]
            merged["identity_file"] = str(self.path.parent / os.path.expanduser(merged["identity_file"]))
        return SshSettings(**merged)


def is_local_host(host: str) -> bool:
    """Whether tasks on ``host`` run as local processes (rather than over SSH)."""
    return host in _LOCAL_HOSTS or host in (socket.gethostname(), socket.getfqdn())


def config_path(option: str | None) -> Path:
    return Path(option) if option else Path.cwd() / DEFAULT_NAME


def load(path) -> ClusterConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, "the file does not exist. Create it (or pass -c/--config PATH); "
                          f"a minimal cluster.toml is:\n{_EXAMPLE}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(path, f"cannot read it ({e})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, f"not valid TOML: {e}", _toml_error_line(e)) from None
    return _parse(path.resolve(), text, data)


def _toml_error_line(e) -> int | None:
    m = re.search(r"line (\d+)", str(e))
    return int(m.group(1)) if m else None


def _line_of(text: str, needle: str) -> int | None:
    """The first line mentioning ``needle`` (TOML gives no positions for values)."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return None


def _parse(path: Path, text: str, data: dict) -> ClusterConfig:
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise ConfigError(path, f"unknown section or key {unknown[0]!r}; the known sections are "
                          f"{', '.join('[' + s + ']' for s in _SECTIONS)}", _line_of(text, unknown[0]))
    jobs = _parse_jobs(path, text, data.get("jobs"))
    ssh = data.get("ssh", {})
    _expect_table(path, text, ssh, "ssh")
    hosts = ssh.get("hosts", {})
    _expect_table(path, text, hosts, "ssh.hosts")
    defaults = _parse_ssh(path, text, {k: v for k, v in ssh.items() if k != "hosts"}, "[ssh]")
    host_settings = {}
    for host, settings in hosts.items():
        _expect_table(path, text, settings, f'ssh.hosts."{host}"')
        host_settings[host] = _parse_ssh(path, text, settings, f'[ssh.hosts."{host}"]')
    env = _parse_env(path, text, data.get("env", {}))
    state_dir, log_dir = _parse_paths(path, text, data.get("paths", {}))
    return ClusterConfig(path, jobs, env, defaults, host_settings, state_dir, log_dir)


def _expect_table(path, text, value, name):
    if not isinstance(value, dict):
        raise ConfigError(path, f"[{name}] must be a table, not {type(value).__name__}",
                          _line_of(text, name.split(".")[-1]))


def _parse_jobs(path, text, jobs) -> dict:
    if jobs is None:
        raise ConfigError(path, f"no [jobs] section. List each job's tasks, e.g.\n{_EXAMPLE}")
    _expect_table(path, text, jobs, "jobs")
    if not jobs:
        raise ConfigError(path, f"[jobs] lists no jobs. List each job's tasks, e.g.\n{_EXAMPLE}",
                          _line_of(text, "[jobs]"))
    seen = {}
    out = {}
    for job, addresses in jobs.items():
        line = _line_of(text, job)
        if not _JOB_NAME.match(job):
            raise ConfigError(path, f"job name {job!r} must start with a letter and hold only "
                              "letters, digits, '_' and '-'", line)
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise ConfigError(path, f"job {job!r} must be a list of \"host:port\" strings, e.g. "
                              f'{job} = ["127.0.0.1:2222"]', line)
        if not addresses:
            raise ConfigError(path, f"job {job!r} has no tasks; give it at least one \"host:port\"", line)
        for index, address in enumerate(addresses):
            _check_address(path, text, job, index, address)
            key = _normalized(address)
            if key in seen:
                raise ConfigError(path, f"address {address!r} is used twice ({seen[key]} and "
                                  f"{job}:{index}); every task needs its own host:port",
                                  _line_of(text, address))
            seen[key] = f"{job}:{index}"
        out[job] = list(addresses)
    return out


def _check_address(path, text, job, index, address):
    host, sep, port = address.rpartition(":")
    where = f"task {job}:{index} has address {address!r}"
    line = _line_of(text, address)
    if not sep or not host:
        raise ConfigError(path, f"{where}, which has no port; write it as \"host:port\"", line)
    if not port.isdigit():
        raise ConfigError(path, f"{where}: the port {port!r} is not a number", line)
    if not 1 <= int(port) <= 65535:
        raise ConfigError(path, f"{where}: the port {port} is out of range 1..65535", line)


def _normalized(address: str) -> str:
    host, _, port = address.rpartition(":")
    return f"{'127.0.0.1' if host in _LOCAL_HOSTS else host}:{int(port)}"


def _parse_ssh(path, text, settings, where) -> dict:
    unknown = sorted(set(settings) - set(_SSH_KEYS))
    if unknown:
        raise ConfigError(path, f"unknown key {unknown[0]!r} in {where}; the known keys are "
                          f"{', '.join(_SSH_KEYS)}", _line_of(text, unknown[0]))
    for key, value in settings.items():
        ok = (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535
              if key == "port" else
              isinstance(value, list) and all(isinstance(v, str) for v in value)
              if key == "options" else isinstance(value, str))
        if not ok:
            kind = {"port": "a port number 1..65535", "options": "a list of strings"}.get(key, "a string")
            raise ConfigError(path, f"{key} in {where} must be {kind}, not {value!r}",
                              _line_of(text, key))
    return dict(settings)


def _parse_env(path, text, env) -> dict:
    _expect_table(path, text, env, "env")
    out = {}
    for key, value in env.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(path, f"[env] {key} must be a string or a number, not {value!r}",
                              _line_of(text, key))
        out[key] = str(value)
    return out


def _parse_paths(path, text, paths):
    _expect_table(path, text, paths, "paths")
    unknown = sorted(set(paths) - {"state_dir", "log_dir"})
    if unknown:
        raise ConfigError(path, f"unknown key {unknown[0]!r} in [paths]; the known keys are "
                          "state_dir, log_dir", _line_of(text, unknown[0]))
    for key, value in paths.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(path, f"[paths] {key} must be a non-empty string", _line_of(text, key))
    base = path.parent
    state_dir = base / os.path.expanduser(paths.get("state_dir", ".dtf"))
    log_dir = base / os.path.expanduser(paths["log_dir"]) if "log_dir" in paths else state_dir / "logs"
    return state_dir, log_dir
