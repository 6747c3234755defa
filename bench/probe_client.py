"""The driver's end of a probe process (bench/probe.py): start, request a round, close."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import tempfile
import threading

from bench.cluster import REPO, quiet_env, stop_process
from bench.probe import RESULT


class ProbeClient:
    def __init__(self, impl, python, start_timeout_s=180.0, checkout=REPO):
        """``checkout``: the tree whose bench and dtf the probe runs (another build of dtf
        for bench.compare)."""
        self.impl = impl
        self._log = tempfile.NamedTemporaryFile("w+", prefix=f"bench-probe-{impl}-", suffix=".log",
                                                delete=False)
        env = quiet_env() if checkout == REPO else dict(quiet_env(), PYTHONPATH=checkout)
        self._proc = subprocess.Popen([python, "-m", "bench.probe", f"--impl={impl}"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, cwd=checkout, env=env, text=True)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._next(start_timeout_s)
        self.version = ready.get("version", "?")

    def _read(self):
        for line in self._proc.stdout:
            if line.startswith(RESULT):
                self._lines.put(json.loads(line[len(RESULT):]))
        self._lines.put(None)

    def _next(self, timeout_s):
        try:
            msg = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            msg = None
        if msg is None:
            raise RuntimeError(f"{self.impl} probe gave no answer in {timeout_s:.0f} s: "
                               f"{self._log_tail()}")
        return msg

    def _log_tail(self, n=1500):
        with open(self._log.name, errors="replace") as f:
            return f.read()[-n:]

    def request(self, cmd: dict, timeout_s=600.0) -> dict:
        try:
            self._proc.stdin.write(json.dumps(cmd) + "\n")
            self._proc.stdin.flush()
            return self._next(timeout_s)
        except (RuntimeError, OSError) as e:
            return {"ok": False, "error": str(e)}

    def close(self):
        try:
            self._proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self._proc.stdin.close()
            self._proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            pass
        stop_process(self._proc)
        self._log.close()
        os.unlink(self._log.name)
