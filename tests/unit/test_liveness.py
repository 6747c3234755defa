"""A silent peer is dead only when its port refuses connections (dtf.runtime.liveness)."""
import socket

import pytest

from dtf.framework import errors
from dtf.runtime import liveness


def _listening():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)  # never accepts: the kernel still completes handshakes, as for a stopped process
    return s, f"127.0.0.1:{s.getsockname()[1]}"


def _silent(address):
    return errors.UnavailableError(None, None, f"Task /job:ps/replica:0/task:0 at {address} is not answering")


def test_a_port_that_refuses_means_dead():
    s, address = _listening()
    s.close()
    assert not liveness.port_accepts(address)
    with pytest.raises(errors.UnavailableError, match="is not answering$"):
        liveness.SilentPeer().judge(address, _silent(address))


def test_a_listening_port_means_hung_until_the_limit(monkeypatch):
    s, address = _listening()
    try:
        assert liveness.port_accepts(address)
        silence = liveness.SilentPeer()
        silence.judge(address, _silent(address))  # hung: the caller waits on
        silence.answered()
        monkeypatch.setenv(liveness.HUNG_LIMIT_ENV, "1")  # below one ping timeout: over at once
        with pytest.raises(errors.UnavailableError, match="although its port accepts connections"):
            silence.judge(address, _silent(address))
    finally:
        s.close()


def test_a_bad_limit_is_named(monkeypatch):
    monkeypatch.setenv(liveness.HUNG_LIMIT_ENV, "soon")
    with pytest.raises(ValueError, match=liveness.HUNG_LIMIT_ENV):
        liveness.hung_limit_s()
