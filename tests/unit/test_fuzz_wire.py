"""Fuzzing the wire decoder: random, truncated, oversized and mutated messages only ever
raise codec.WireError, finish quickly and allocate in proportion to what was received.

The properties (``check_*``) and strategies are shared with scripts/fuzz_long.py, which
runs them for minutes instead of the few hundred examples CI runs here.
"""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtf.framework import dtypes
from dtf.wire import codec

CI = settings(max_examples=150, deadline=2000, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Allowance for Python objects built from a header: a JSON byte can become a ~100-byte
# object, but nothing may be sized from a declared shape or length.
ALLOC_PER_BYTE = 128
ALLOC_SLACK = 256 << 10

_DTYPE_NAMES = sorted(d.name for d in dtypes.ALL) + ["complex64", "", "float32 ", "object"]
_frame = st.binary(max_size=256)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
_dim = st.one_of(st.integers(-3, 8), st.sampled_from([0, 2**31, 2**62, 2**63, 10**30]),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3), st.none())
_tensor_ref = st.fixed_dictionaries(
    {"@t": st.one_of(st.integers(-2, 6), _scalar),
     "dtype": st.one_of(st.sampled_from(_DTYPE_NAMES), _scalar, st.lists(st.integers(), max_size=2)),
     "shape": st.one_of(st.lists(_dim, max_size=40), _scalar)},
    optional={"lens": st.one_of(st.lists(st.one_of(st.integers(-2, 300), _scalar), max_size=6), _scalar),
              "at": st.one_of(st.integers(-20, 300), st.sampled_from([2**31, 2**63, 10**30]), _scalar)})
_streamed_ref = st.fixed_dictionaries(
    {"@r": st.one_of(st.integers(-2, 6), _scalar),
     "dtype": st.one_of(st.sampled_from(_DTYPE_NAMES), _scalar), "shape": st.one_of(st.lists(_dim, max_size=4), _scalar)})
_special = st.one_of(_tensor_ref, _streamed_ref,
                     st.fixed_dictionaries({"@d": st.one_of(st.sampled_from(_DTYPE_NAMES), _scalar)}),
                     st.fixed_dictionaries({"@b": st.one_of(st.text(max_size=12), _scalar)}))
json_values = st.recursive(
    st.one_of(_scalar, _special),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=30)
headers = st.one_of(st.dictionaries(st.text(max_size=6), json_values, max_size=6), json_values)


def _json_frame(value) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def _valid_message(rng_seed: int) -> list:
    """An encoded message with tensors of every dtype plus nested plain values."""
    rng = np.random.RandomState(rng_seed)
    msg = {"type": "RunGraph", "id": 7, "feeds": {}, "nested": [{"d": dtypes.int64, "b": b"\x00\x01"}]}
    for name in ("float32", "float64", "int8", "int32", "int64", "uint8", "bool", "float16"):
        shape = tuple(rng.randint(0, 4, size=rng.randint(0, 3)))
        msg["feeds"][name] = np.asarray(rng.rand(*shape) * 100).astype(name)
    msg["feeds"]["s"] = np.array([b"ab", b"", b"xyz"], dtype=object)
    return [bytes(f) for f in codec.encode(msg)]


def check_decode(frames):
    """decode returns a dict or raises WireError; peak allocation follows the input size."""
    size = sum(len(f) for f in frames)
    tracemalloc.start()
    try:
        try:
            out = codec.decode(frames)
        except codec.WireError:
            out = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is None or isinstance(out, dict)
    assert peak <= ALLOC_PER_BYTE * size + ALLOC_SLACK, (peak, size)
    assert codec.peek_id(frames) is None or isinstance(codec.peek_id(frames), int)


def check_mutated(seed: int, data):
    """A valid message with one frame cut, dropped, or a header field replaced."""
    frames = _valid_message(seed)
    action = data.draw(st.sampled_from(["cut", "drop", "swap", "field", "extra"]))
    i = data.draw(st.integers(0, len(frames) - 1))
    if action == "cut":
        frames[i] = frames[i][:data.draw(st.integers(0, max(0, len(frames[i]) - 1)))]
    elif action == "drop":
        del frames[i]
    elif action == "swap":
        j = data.draw(st.integers(0, len(frames) - 1))
        frames[i], frames[j] = frames[j], frames[i]
    elif action == "extra":
        frames.append(data.draw(_frame))
    else:
        header = json.loads(frames[0])
        name = data.draw(st.sampled_from(sorted(header["feeds"])))
        key = data.draw(st.sampled_from(["@t", "dtype", "shape", "lens", "at"]))
        header["feeds"][name][key] = data.draw(json_values)
        frames[0] = _json_frame(header)
    check_decode(frames)


@CI
@given(st.lists(_frame, max_size=5))
def test_random_frames(frames):
    check_decode(frames)


@CI
@given(headers, st.lists(_frame, max_size=4))
def test_random_headers_with_tensor_refs(header, frames):
    check_decode([_json_frame(header)] + frames)


@CI
@given(st.integers(0, 2**16), st.data())
def test_mutated_valid_messages(seed, data):
    check_mutated(seed, data)


@pytest.mark.parametrize("header", [
    b"[" * 100_000, b'{"a":' * 50_000, b'{"a":' + b"[" * 3000 + b"]" * 3000 + b"}",
    json.dumps(json.loads("{}"), indent=0).encode()[:1], b"\xff\xfe", b"1" * 10_000,
    b'{"x": {"@t": 1, "dtype": "float32", "shape": [0, 1e400]}}',
])
def test_pathological_headers(header):
    check_decode([header, b""])


@pytest.mark.parametrize("depth", [63, 65, 500])
def test_deep_nesting_is_refused_not_recursed(depth):
    header = b'{"v":' + b'{"k":[' * depth + b'{"leaf":1}' + b"]}" * depth + b"}"
    check_decode([header])


@pytest.mark.parametrize("shape,frame", [
    ([2**40, 2**40], b"\x00" * 16), ([0, 2**62, 2**62], b""), ([0, 10**30], b""),
    ([1] * 33, b"\x00" * 4), ([-1], b""), ([4], b"\x00" * 15),
])
def test_declared_shapes_never_size_an_allocation(shape, frame):
    check_decode([_json_frame({"x": {"@t": 1, "dtype": "float32", "shape": shape}}), frame])
    check_decode([_json_frame({"x": {"@t": 1, "dtype": "string", "shape": shape, "lens": []}}), frame])


def test_header_over_the_limit_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(codec, "MAX_HEADER_BYTES", 1000)
    with pytest.raises(codec.WireError, match="exceeds the limit"):
        codec.decode([b" " * 1001 + b"{}"])
    with pytest.raises(codec.WireError, match="exceeds the limit"):
        codec.decode([b"{}", b"\x00" * 5000], max_message_bytes=4096)


def test_a_valid_message_round_trips():
    frames = _valid_message(3)
    msg = codec.decode(frames)
    assert msg["nested"][0]["d"] == dtypes.int64 and msg["nested"][0]["b"] == b"\x00\x01"
    assert list(msg["feeds"]["s"]) == [b"ab", b"", b"xyz"]
    assert msg["feeds"]["float32"].dtype == np.float32


@pytest.mark.parametrize("hooked", [False, True])
def test_whitespace_around_a_header_is_json_and_trailing_text_is_refused(hooked):
    """The decoder skips json.loads' whitespace handling for speed; what JSON allows around
    a value (and what it refuses after one) must not change with it."""
    body = '{"type":"Ping","d":{"@d":"int32"}}' if hooked else '{"type":"Ping","id":3}'
    for text in (body, " \n" + body, body + " \r\n\t", "\t" + body + " "):
        msg = codec.decode([text.encode()])
        assert msg["type"] == "Ping"
        if hooked:
            assert msg["d"] == dtypes.int32
    for text in (body + " x", body + "{}", body + "]", " " + body + " 1", "", " ", "x" + body):
        with pytest.raises(codec.WireError, match="not valid JSON"):
            codec.decode([text.encode()])
