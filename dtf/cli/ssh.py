"""Tasks on other hosts, through the system ``ssh`` client: start one detached, watch it,
stop it, read its log.

We call the ``ssh`` program rather than a Python SSH library: it honours the user's
~/.ssh/config, agent, known_hosts and jump hosts exactly as their own ``ssh`` does, and needs
nothing installed on our side. Every call runs in batch mode (a missing key fails at once
instead of prompting for a password), with a connect timeout and an overall bound. Remote
commands run under ``sh -c`` so they do not depend on the user's login shell there.
"""
from __future__ import annotations

import shlex
import subprocess
import time

from dtf.cli.config import ENV_KEYS

CONNECT_TIMEOUT_S = 10
CALL_TIMEOUT_S = 30
LOG_DIR = ".dtf/logs"  # relative to the remote workdir, as the local logs are to cluster.toml
KEY_DIR = ".dtf"
KEY_FILE = f"{KEY_DIR}/cluster.key"  # the cluster's keys there, owner-only like ours
POLL_EVERY_S = 1.0

# ours PID: whether PID is alive and is a dtf server (not a recycled pid), as state.is_our_server.
_OURS = r"""ours() {
  c=$({ tr '\0' ' ' < /proc/$1/cmdline; } 2>/dev/null || ps -o args= -p $1 2>/dev/null)
  case "$c" in *dtf*) case "$c" in *server*) return 0;; esac;; esac
  return 1
}
"""


class SshError(Exception):
    """An ssh call that failed; ``str()`` names the host and carries ssh's own message."""


def ssh_argv(settings, host: str) -> list:
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
    if settings.port:
        argv += ["-p", str(settings.port)]
    if settings.identity_file:
        # Only the named key: an agent's other keys must not stand in for it.
        argv += ["-i", settings.identity_file, "-o", "IdentitiesOnly=yes"]
    argv += list(settings.options)
    argv.append(f"{settings.user}@{host}" if settings.user else host)
    return argv


def run(settings, host: str, script: str, timeout_s=CALL_TIMEOUT_S, capture=True, stdin=None):
    """Runs the sh ``script`` on ``host``; raises SshError when ssh or the script fails.

    With ``capture=False`` the script's stdout goes straight to ours (``dtf logs``).
    ``stdin``: text the script reads on its standard input (secrets never go in argv)."""
    argv = ssh_argv(settings, host) + ["sh -c " + shlex.quote(script)]
    feed = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}
    try:
        done = subprocess.run(argv, stderr=subprocess.PIPE, text=True, **feed,
                              stdout=subprocess.PIPE if capture else None, timeout=timeout_s)
    except FileNotFoundError:
        raise SshError("there is no `ssh` client on this machine's PATH; install OpenSSH") from None
    except subprocess.TimeoutExpired:
        raise SshError(f"ssh to {host} did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        message = done.stderr.strip() or (done.stdout or "").strip() or "no message"
        raise SshError(f"ssh to {host} failed (exit code {done.returncode}): {message}")
    return done


def _cd(settings) -> str:
    """The script line entering the remote workdir (the login directory when none is set)."""
    workdir = settings.workdir
    if not workdir:
        return ""
    # "~" and "~/x" must expand on the remote side, which quoting would prevent.
    home, slash, rest = workdir.partition("/")
    target = ('"$HOME"' + (slash + shlex.quote(rest) if rest else "")) if home == "~" else shlex.quote(workdir)
    return f'cd {target} 2>/dev/null || {{ {_say(f"no directory {workdir} on")}; exit 1; }}\n'


def _say(text: str) -> str:
    """A script command printing ``text`` and the remote host name to stderr."""
    return f'echo {shlex.quote(text)} "$(hostname)" >&2'


def log_file(task) -> str:
    return f"{LOG_DIR}/{task.job}-{task.index}.log"


def log_location(settings, task) -> str:
    """Where the task's log lives, for people: 'host:workdir/.dtf/logs/JOB-N.log'."""
    return f"{task.host}:{(settings.workdir or '~').rstrip('/')}/{log_file(task)}"


def _install_keys() -> str:
    """Script lines writing the key file from stdin: created owner-only, and renamed into
    place so a task starting meanwhile never reads half a file."""
    return (f"(umask 077; mkdir -p {KEY_DIR} && cat > {KEY_FILE}.$$ "
            f"&& mv -f {KEY_FILE}.$$ {KEY_FILE}) || exit 1\n")


def start(settings, task, cluster_flags: str, env: dict, keys: str | None = None) -> "RemoteTask":
    """Starts ``task`` detached on its host (it outlives the ssh session); returns its handle.

    ``keys``: the text of the cluster's key file, copied there through the ssh channel."""
    python = shlex.quote(settings.python)
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in {**env, "PYTHONUNBUFFERED": "1"}.items())
    if keys is not None:  # "$PWD" must expand there: the task's absolute key path
        assignments += f' {ENV_KEYS}="$PWD"/{KEY_FILE}'
    script = (
        f"command -v {python} >/dev/null 2>&1 || "
        f"{{ {_say(f'python {settings.python} not found on')}; exit 127; }}\n"
        + _cd(settings)
        + (_install_keys() if keys is not None else "")
        + f"mkdir -p {LOG_DIR} || exit 1\n"
        # Appended to: a restarted task's log keeps how its last run ended.
        + f"[ -s {log_file(task)} ] && echo \"---- dtf up: task {task.name} restarted at "
        f"$(date -u +%Y-%m-%dT%H:%M:%SZ); its previous run's log is above ----\" >> {log_file(task)}\n"
        # A simple command in the background: $! is the server's own pid (nohup and env exec it).
        f"nohup env {assignments} {python} -m dtf server --cluster_spec={shlex.quote(cluster_flags)} "
        f"--job_name={shlex.quote(task.job)} --task_index={task.index} "
        f">> {log_file(task)} 2>&1 < /dev/null &\n"
        "echo $!\n")
    # The last line: a login banner or profile output may come first.
    answer = (run(settings, task.host, script, stdin=keys).stdout.strip().splitlines() or [""])[-1]
    if not answer.isdigit():
        raise SshError(f"starting it on {task.host} printed {answer!r} instead of a pid")
    return RemoteTask(settings, task, int(answer))


def stop(settings, host: str, pids: list, grace_s: float) -> dict:
    """SIGTERM the dtf servers among ``pids`` on ``host``, SIGKILL those alive after ``grace_s``.

    Returns {pid: "stopped" | "killed" | "gone"} ("gone": not running, or not a dtf server)."""
    steps = max(1, int(grace_s * 10))
    script = _OURS + f"""live=""
for p in {' '.join(str(p) for p in pids)}; do
  if ours $p; then kill -TERM $p 2>/dev/null; live="$live $p"; else echo "$p gone"; fi
done
i=0
while [ $i -lt {steps} ]; do
  left=""; for p in $live; do ours $p && left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1; i=$((i + 1))
done
for p in $live; do
  if ours $p; then kill -KILL $p 2>/dev/null; echo "$p killed"; else echo "$p stopped"; fi
done
"""
    out = run(settings, host, script, timeout_s=grace_s + CALL_TIMEOUT_S).stdout
    # Only our "PID word" lines: a login banner or profile output may precede them.
    pairs = (line.split() for line in out.splitlines())
    return {int(p[0]): p[1] for p in pairs if len(p) == 2 and p[0].isdigit()}


def print_log(settings, task, follow: bool, lines: int):
    """Prints the task's remote log to our stdout; with ``follow`` until interrupted."""
    path = log_file(task)
    start_at = str(lines) if lines else "+1"
    script = (_cd(settings)
              + f"[ -f {path} ] || {{ {_say(f'no log {path} yet on')}; exit 1; }}\n"
              + f"exec tail -n {start_at} {'-f ' if follow else ''}{path}\n")
    run(settings, task.host, script, timeout_s=None if follow else CALL_TIMEOUT_S, capture=False)


class RemoteTask:
    """A task process that ``start`` launched on another host, known by its pid there."""

    def __init__(self, settings, task, pid: int):
        self.settings, self.task, self.pid = settings, task, pid
        self._next_check = time.monotonic() + POLL_EVERY_S

    def exited(self) -> str | None:
        """None while the process runs (asked over ssh at most once a second), else why not."""
        if time.monotonic() < self._next_check:
            return None
        self._next_check = time.monotonic() + POLL_EVERY_S
        try:
            answer = run(self.settings, self.task.host, _OURS + f"ours {self.pid} && echo up || echo down")
        except SshError as e:
            return f"cannot check it: {e}"
        if answer.stdout.strip() == "up":
            return None
        return f"its process on {self.task.host} (pid {self.pid}) exited"

    def stop(self):
        """Raises SshError when it could not be stopped (its pid file then stays)."""
        stop(self.settings, self.task.host, [self.pid], 1.0)

    def tail(self, lines: int = 20) -> str:
        script = _cd(self.settings) + f"tail -n {lines} {log_file(self.task)}"
        try:
            return run(self.settings, self.task.host, script).stdout.rstrip() or "(empty log)"
        except SshError as e:
            return f"(cannot read it: {e})"
