"""Cluster keys: ZeroMQ CURVE encryption plus ZAP authentication.

A cluster has one CURVE key pair. Every task serves with it, and a peer may talk to a task
only when it proves it holds the same pair (its public key is the cluster's, and CURVE's
handshake proves it holds the secret). Without keys, clusters run in plain mode, as the
seed programs expect.

Keys reach a process through the environment: ``DTF_CLUSTER_KEYS`` names a JSON file
``{"public": "<z85>", "secret": "<z85>"}`` readable by its owner only. ``dtf up`` writes
one into the cluster's state directory and ``dtf run`` hands it to its scripts, so
``tf.train.Server`` and ``tf.Session`` in a script pick it up with no code change.
"""
from __future__ import annotations

import json
import os
import stat
import threading
from dataclasses import dataclass

import zmq

ENV_KEYS = "DTF_CLUSTER_KEYS"
ENV_MAX_MESSAGE = "DTF_MAX_MESSAGE_BYTES"
DEFAULT_MAX_MESSAGE_BYTES = 4 << 30


def max_message_bytes() -> int:
    """The largest message a task accepts (and a client sends); configurable."""
    return int(os.environ.get(ENV_MAX_MESSAGE, DEFAULT_MAX_MESSAGE_BYTES))


class KeyFileError(ValueError):
    """A cluster key file that is missing, unreadable, malformed or too open."""


@dataclass(frozen=True)
class ClusterKeys:
    public: bytes
    secret: bytes

    @classmethod
    def generate(cls) -> "ClusterKeys":
        public, secret = zmq.curve_keypair()
        return cls(public, secret)

    @classmethod
    def load(cls, path) -> "ClusterKeys":
        try:
            with open(path, encoding="utf-8") as f:
                info = os.fstat(f.fileno())  # the file read, not whatever the path names later
                data = json.load(f)
        except OSError as e:
            raise KeyFileError(f"cluster key file {path}: {e.strerror}") from None
        except ValueError as e:
            raise KeyFileError(f"cluster key file {path} is not valid JSON: {e}") from None
        mode = info.st_mode
        if info.st_uid not in (os.geteuid(), 0):  # as ssh: another user could have planted it
            raise KeyFileError(f"cluster key file {path} is owned by uid {info.st_uid}, not by this "
                               f"user (uid {os.geteuid()}): refused, as another user could have written it")
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise KeyFileError(f"cluster key file {path} is readable by others "
                               f"(mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}")
        try:
            keys = cls(data["public"].encode(), data["secret"].encode())
        except (KeyError, AttributeError, TypeError):
            raise KeyFileError(f"cluster key file {path} must hold \"public\" and \"secret\"") from None
        if len(keys.public) != 40 or len(keys.secret) != 40:
            raise KeyFileError(f"cluster key file {path}: keys must be 40-character Z85 strings")
        return keys

    def save(self, path):
        """Writes the pair readable by the owner only (created 0600, never widened)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"public": self.public.decode(), "secret": self.secret.decode()}, f)
        os.chmod(path, 0o600)

    @property
    def domain(self) -> str:
        """ZAP domain of this cluster (several clusters may share one process)."""
        return "dtf-" + self.public.decode()[:12]

    def configure_server(self, sock):
        _authenticator().allow(self.domain, self.public)
        sock.zap_domain = self.domain.encode()
        sock.curve_secretkey = self.secret
        sock.curve_publickey = self.public
        sock.curve_server = True

    def configure_client(self, sock):
        sock.curve_serverkey = self.public
        sock.curve_publickey = self.public
        sock.curve_secretkey = self.secret


def from_env() -> ClusterKeys | None:
    path = os.environ.get(ENV_KEYS)
    return ClusterKeys.load(path) if path else None


class _Authenticator:
    """One ZAP handler per process: a client passes when its public key is its domain's
    cluster key."""

    def __init__(self):
        from zmq.auth.thread import ThreadAuthenticator

        self._allowed: dict = {}
        self._auth = ThreadAuthenticator(zmq.Context.instance(), log=_quiet_logger())
        self._auth.start()
        self._auth.configure_curve_callback("*", self)

    def allow(self, domain, public):
        self._allowed[domain] = public
        self._auth.configure_curve_callback(domain, self)

    def callback(self, domain, key):
        return self._allowed.get(domain) == key


_auth = None
_auth_lock = threading.Lock()


def _authenticator() -> _Authenticator:
    global _auth
    with _auth_lock:
        if _auth is None:
            _auth = _Authenticator()
        return _auth


def _quiet_logger():
    import logging

    log = logging.getLogger("dtf.zap")
    log.setLevel(logging.WARNING)
    return log
