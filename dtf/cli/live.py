"""The progress collector of ``dtf run`` and what it shows: a rich live table on a terminal,
plain log lines otherwise. Replicas feed it through ``dtf.progress.report``."""
from __future__ import annotations

import hmac
import json
import math
import secrets
import time
from collections import deque

from rich.table import Table

_RATE_WINDOW_S = 5.0
_PLAIN_EVERY_S = 2.0
_MAX_REPORT_BYTES = 64 * 1024  # a report is a few hundred bytes; ZeroMQ drops larger ones


class Collector:
    """A ZeroMQ PULL socket on a free localhost port. Any local process can connect to it,
    so each run has a secret token that only its replicas get (``env()``, in their
    environment): reports without it are dropped."""

    def __init__(self):
        import zmq

        self._zmq = zmq
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PULL)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.MAXMSGSIZE, _MAX_REPORT_BYTES)
        port = self._sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self._token = secrets.token_hex(16)
        self.dropped = 0  # reports refused: unreadable or without this run's token

    def env(self) -> dict:
        """The environment a replica needs to report here."""
        from dtf import progress

        return {progress.ENV: self.endpoint, progress.TOKEN_ENV: self._token}

    def receive(self, timeout_ms: int) -> list:
        """The messages that arrive within ``timeout_ms`` (malformed ones dropped)."""
        messages = []
        if self._sock.poll(timeout_ms):
            while True:
                try:
                    data = self._sock.recv(self._zmq.NOBLOCK)
                except self._zmq.Again:
                    break
                try:
                    message = json.loads(data)
                except (ValueError, RecursionError):
                    message = None
                token = message.pop("token", None) if isinstance(message, dict) else None
                if isinstance(token, str) and hmac.compare_digest(token, self._token):
                    messages.append(message)
                else:
                    self.dropped += 1
        return messages

    def close(self):
        self._sock.close(0)
        self._ctx.term()


def _number(value) -> bool:
    """A finite int or float (JSON's true/false are not steps or times)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Rate:
    """Units per second over the last few seconds of (time, value) samples."""

    def __init__(self):
        self._samples = deque()

    def add(self, t: float, value: float):
        self._samples.append((t, value))
        while len(self._samples) > 2 and t - self._samples[0][0] > _RATE_WINDOW_S:
            self._samples.popleft()

    def per_s(self):
        if len(self._samples) < 2:
            return None
        (t0, v0), (t1, v1) = self._samples[0], self._samples[-1]
        return (v1 - v0) / (t1 - t0) if t1 > t0 else None


class Progress:
    """What the replicas reported so far: global step, rates, the last checkpoint."""

    def __init__(self, replicas):
        self.replicas = list(replicas)
        self.global_step = None
        self.last_step = None
        self.checkpoint = None
        self.evaluation = None  # (task, global step, {metric: value}) of the latest eval
        self._global_rate = _Rate()
        self._rates = {name: _Rate() for name in self.replicas}
        self._local = {}
        self._state = {name: "running" for name in self.replicas}
        self._last_plain = (0.0, None)

    def update(self, message: dict) -> list:
        """Takes one report; returns plain lines worth printing at once (checkpoints).
        Fields of the wrong type are ignored, never fatal: one bad report must not end
        ``dtf run`` (and orphan its replicas)."""
        t = message.get("time")
        t = t if _number(t) else time.time()
        task = str(message.get("task", "?"))[:100]
        kind = message.get("kind")
        step = message.get("global_step")
        step = step if _number(step) else None
        if step is not None:
            self.global_step = max(step, self.global_step or step)
            self._global_rate.add(t, self.global_step)
        if kind == "step":
            if _number(message.get("last_step")):
                self.last_step = message["last_step"]
            local = message.get("local_step", step)
            if _number(local) and (task in self._rates or len(self._rates) < 1024):
                self._local[task] = local
                self._rates.setdefault(task, _Rate()).add(t, local)
        elif kind == "trace":
            path = str(message.get("path"))[:1000]
            return [f"[trace] {task} traced global step {step} into {path}"]
        elif kind == "eval":
            metrics = message.get("metrics")
            metrics = {str(k)[:60]: v for k, v in metrics.items() if _number(v)} if isinstance(
                metrics, dict) else {}
            self.evaluation = (task, step, metrics)
            return [f"[eval] {task} at global step {step}: {format_metrics(metrics)}"]
        elif kind == "checkpoint":
            path = str(message.get("path"))[:1000]
            self.checkpoint = (task, path, step)
            return [f"[checkpoint] {task} wrote {path} at global step {step}"]
        return []

    def finished(self, name: str, code):
        """``code``: the replica's exit code, or "stopped" (because another one failed)."""
        if self._state.get(name, "running") == "stopped":
            return
        self._state[name] = code if isinstance(code, str) else "done" if code == 0 else f"failed ({code})"

    def _step_text(self) -> str:
        if self.global_step is None:
            return "-"
        return f"{self.global_step:g}" + (f" / {self.last_step:g}" if self.last_step else "")

    def _rate_text(self, rate) -> str:
        value = rate.per_s()
        return "-" if value is None else f"{value:.1f}"

    def table(self, width: int = 80) -> Table:
        """The live table for a terminal ``width`` wide: its title on one line, and the
        checkpoint's path shortened in its middle so that the caption fits too."""
        title = f"global step {self._step_text()}   {self._rate_text(self._global_rate)} steps/s"
        caption = None
        if self.checkpoint:
            task, path, step = self.checkpoint
            rest = f" (global step {step}, by {task})"
            room = width - len("last checkpoint: ") - len(rest)
            caption = f"last checkpoint: {ellipsize_middle(str(path), room)}{rest}"
        if self.evaluation:
            task, step, metrics = self.evaluation
            line = f"last eval (global step {step}): {format_metrics(metrics)}"
            caption = (caption + "\n" if caption else "") + line[:max(width, 20)]
        table = Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                      min_width=min(width, max(len(title), len(caption or ""))))
        for column in ("replica", "state", "step", "steps/s"):
            table.add_column(column)
        for name in self._rates:
            local = self._local.get(name)
            table.add_row(name, self._state.get(name, "running"), "-" if local is None else f"{local:g}",
                          self._rate_text(self._rates[name]))
        return table

    def plain_line(self, now: float, force: bool = False):
        """A progress line every few seconds while the step moves (None otherwise)."""
        last_time, last_step = self._last_plain
        if self.global_step is None or self.global_step == last_step:
            return None
        if not force and now - last_time < _PLAIN_EVERY_S:
            return None
        self._last_plain = (now, self.global_step)
        return f"[progress] global step {self._step_text()}, {self._rate_text(self._global_rate)} steps/s"


def format_metrics(metrics: dict) -> str:
    """'accuracy 0.912, loss 0.231': the eval metrics, loss first, the rest by name."""
    keys = sorted(metrics, key=lambda k: (k != "loss", k))
    return ", ".join(f"{k} {metrics[k]:.4g}" for k in keys) or "(no metrics)"


def ellipsize_middle(text: str, width: int) -> str:
    """``text`` with its middle replaced by '…' to fit ``width`` (its end, the file name,
    matters most, then its start)."""
    width = max(width, 12)
    if len(text) <= width:
        return text
    tail = (width - 1) * 2 // 3
    return text[:width - 1 - tail] + "…" + text[len(text) - tail:]
