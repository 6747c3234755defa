"""A private, one-node Slurm for the tests: slurmctld and slurmd from the distribution's
packages, configured in a temporary directory for this machine's hostname.

The node is this machine (``NodeName=<hostname> NodeAddr=127.0.0.1 CPUs=2``) in one
partition. Authentication is ``auth/none`` with ``cred/none`` (Slurm 22.05 has both; no
munge daemon is needed), the controller and slurmd listen on free ports, and all state,
spool, pid and log files live in the temporary directory, so nothing of the machine's own
Slurm set-up (if any) is read or changed. Both daemons run in the foreground (-D) as
children of the test, and ``close()`` cancels every job of this private cluster and stops
them by PID. Where the packages are missing, we are not root (slurmd must be, to start
tasks as the submitting user), or the daemons do not come up, ``start()`` skips the test
with the reason.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from dtf.train.server import free_port

DAEMONS = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("srun", "salloc", "sinfo", "scancel")

_CONF = """\
ClusterName=dtftest{suffix}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def missing() -> str | None:
    """Why a private Slurm cannot run here (None when it can)."""
    absent = [d for d in DAEMONS if not os.access(d, os.X_OK)]
    absent += [c for c in CLIENTS if shutil.which(c) is None]
    if absent:
        return (f"needs Slurm (slurmctld, slurmd, slurm-client); missing {', '.join(absent)}: "
                "install the packages (.ci/run does where it can)")
    if os.geteuid() != 0:
        return "a private slurmd must run as root to start tasks"
    return None


class Slurm:
    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.node = socket.gethostname().split(".")[0]
        self.procs = []

    @property
    def env(self) -> dict:
        """The environment of a client of this Slurm: no SLURM_* from outside, our config."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.dir / "slurm.conf")
        return env

    def start(self, timeout: float = 30.0):
        why = missing()
        if why:
            pytest.skip(why)
        try:
            socket.gethostbyname(self.node)
        except OSError:
            pytest.skip(f"this machine's hostname {self.node!r} does not resolve")
        for sub in ("state", "spool"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "slurm.conf").write_text(_CONF.format(
            suffix=os.getpid(), node=self.node, dir=self.dir, ctld_port=free_port(),
            slurmd_port=free_port()))
        conf = str(self.dir / "slurm.conf")
        for argv, log in (([DAEMONS[0], "-D", "-i", "-f", conf], "slurmctld.out"),
                          ([DAEMONS[1], "-D", "-f", conf, "-N", self.node], "slurmd.out")):
            with open(self.dir / log, "wb") as out:
                self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL, env=self.env,
                                                   start_new_session=True))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True,
                                   text=True, timeout=10).stdout.strip()
            if state == "idle":
                return self
            time.sleep(0.3)
        tail = self.log_tail()
        self.close()
        pytest.skip(f"the private Slurm did not come up within {timeout:g} s:\n{tail}")

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for name in ("slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"):
            path = self.dir / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}\n" + "\n".join(text))
        return "\n".join(out)

    def run(self, argv, timeout: float, **kwargs):
        return subprocess.run(argv, env=kwargs.pop("env", self.env), capture_output=True,
                              text=True, timeout=timeout, **kwargs)

    def close(self):
        if any(p.poll() is None for p in self.procs):
            # Every job of this private cluster (SLURM_CONF names our controller), so that no
            # slurmstepd outlives the test.
            subprocess.run(["scancel", "--quiet", "--user", "root"], env=self.env,
                           capture_output=True, timeout=15)
        for proc in reversed(self.procs):  # slurmd first, then the controller
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        self.procs = []
