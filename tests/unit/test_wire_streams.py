"""Streamed tensors: large numeric tensors leave a message as Part messages sent ahead of
it and are copied into place as each part arrives (codec.encode(streams=...),
codec.part_messages, codec.PartialStreams, codec.decode(streams=...))."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dtf.wire import codec

BIG = codec.STREAM_MIN_BYTES // 4 + 1000  # float32 elements just over the threshold


def _send(header, streams_out=None):
    """Encodes like a sender; returns (message frames, part messages as lists of bytes)."""
    streams: list = [] if streams_out is None else streams_out
    frames = codec.encode(header, streams=streams)
    parts = [[bytes(f) for f in p] for p in codec.part_messages(streams)]
    return [bytes(f) for f in frames], parts


def _receive(frames, parts, max_bytes=None):
    partial = codec.PartialStreams(max_bytes)
    for head, data in parts:
        partial.add(json.loads(head), data)
    return codec.decode(frames, streams=partial), partial


def test_large_tensors_stream_small_ones_stay_framed():
    big = np.arange(BIG, dtype=np.float32).reshape(-1, 8)[:, ::-1]  # not C-contiguous
    small = np.arange(10, dtype=np.int64)
    frames, parts = _send({"type": "Tensor", "id": 0, "tensors": [big, small]})
    header = json.loads(frames[0])
    assert "@r" in header["tensors"][0] and "@t" in header["tensors"][1]
    assert len(parts) == -(-big.nbytes // codec.CHUNK_BYTES)
    assert all(len(data) <= codec.CHUNK_BYTES for _, data in parts)
    msg, partial = _receive(frames, parts)
    np.testing.assert_array_equal(msg["tensors"][0], big)
    np.testing.assert_array_equal(msg["tensors"][1], small)
    assert not partial  # handed over


def test_string_tensors_are_never_streamed():
    strings = np.array([b"x" * (codec.STREAM_MIN_BYTES // 4)] * 5, dtype=object)
    frames, parts = _send({"s": strings})
    assert parts == []
    assert list(codec.decode(frames)["s"]) == list(strings)


def test_a_streamed_reference_without_its_parts_is_refused():
    frames, parts = _send({"t": np.zeros(BIG, np.float32)})
    with pytest.raises(codec.WireError, match="missing"):
        codec.decode(frames)
    with pytest.raises(codec.WireError, match="missing or incomplete"):
        _receive(frames, parts[:-1])


def test_parts_out_of_order_or_without_their_start_are_refused():
    frames, parts = _send({"t": np.zeros(2 * BIG, np.float32)})
    partial = codec.PartialStreams()
    with pytest.raises(codec.WireError, match="without its start"):
        partial.add(json.loads(parts[1][0]), parts[1][1])
    partial.add(json.loads(parts[0][0]), parts[0][1])
    with pytest.raises(codec.WireError, match="out of order"):
        partial.add(json.loads(parts[2][0]), parts[2][1])


@pytest.mark.parametrize("head", [
    {"stream": "1", "offset": 0, "total": 10}, {"stream": 1, "offset": 0, "total": 0},
    {"stream": 1, "offset": None, "total": 10}, {"stream": 1, "offset": 0, "total": 1.5}, {},
])
def test_malformed_part_headers_are_refused(head):
    with pytest.raises(codec.WireError, match="malformed Part"):
        codec.PartialStreams().add(head, b"\x00" * 4)


def test_a_part_past_the_declared_total_is_refused():
    partial = codec.PartialStreams()
    with pytest.raises(codec.WireError, match="out of order"):
        partial.add({"stream": 1, "offset": 0, "total": 4}, b"\x00" * 8)


def test_a_stream_over_the_limit_is_not_stored_and_its_message_is_too_large():
    frames, parts = _send({"t": np.zeros(BIG, np.float32)})
    partial = codec.PartialStreams(max_bytes=1 << 20)
    for head, data in parts:
        partial.add(json.loads(head), data)
    assert partial.held_bytes() == 0
    with pytest.raises(codec.StreamTooLarge, match="limit"):
        codec.decode(frames, streams=partial)


def test_a_stream_whose_size_disagrees_with_its_reference_is_refused():
    frames, parts = _send({"t": np.zeros(BIG, np.float32)})
    header = json.loads(frames[0])
    header["t"]["shape"] = [BIG + 1]
    with pytest.raises(codec.WireError, match="expected"):
        _receive([json.dumps(header).encode()], parts)


def test_after_an_unreadable_part_the_message_it_belongs_to_is_too_large():
    frames, _ = _send({"t": np.zeros(BIG, np.float32)})
    partial = codec.PartialStreams(max_bytes=1 << 20)
    partial.refuse_rest(codec.CHUNK_BYTES)  # what a server does with a part over its limit
    with pytest.raises(codec.StreamTooLarge, match="limit"):
        codec.decode(frames, streams=partial)


def test_a_receive_buffer_is_reused_only_once_no_array_refers_to_it():
    spares = codec._SpareBuffers()
    buf = np.empty(100, np.uint8)
    first = id(buf)
    spares.keep(buf)
    view = buf.view(np.float32).reshape(5, 5)
    del buf
    assert id(spares.take(100)) != first  # a view still lives: a fresh buffer
    del view
    assert id(spares.take(100)) == first


def test_spare_buffers_are_bounded_and_expire(monkeypatch):
    spares = codec._SpareBuffers()
    monkeypatch.setattr(codec._SpareBuffers, "MAX_BYTES", 250)
    for _ in range(3):
        spares.keep(np.empty(100, np.uint8))
    assert len(spares._buffers) == 2
    spares.keep(np.empty(300, np.uint8))  # over the bound on its own: not kept
    assert all(len(b) == 100 for b, _ in spares._buffers)
    monkeypatch.setattr(codec._SpareBuffers, "KEEP_S", 0.0)
    spares.take(7)
    assert spares._buffers == []


def test_a_tensor_still_held_keeps_its_values_when_the_next_stream_arrives():
    frames1, parts1 = _send({"t": np.full(BIG, 1.0, np.float32)})
    first, _ = _receive(frames1, parts1)
    frames2, parts2 = _send({"t": np.full(BIG, 2.0, np.float32)})
    second, _ = _receive(frames2, parts2)
    assert (first["t"] == 1.0).all() and (second["t"] == 2.0).all()
    second_buffer = id(second["t"].base)
    del second
    frames3, parts3 = _send({"t": np.full(BIG, 3.0, np.float32)})
    third, _ = _receive(frames3, parts3)
    assert id(third["t"].base) == second_buffer  # free again, so reused
    assert (first["t"] == 1.0).all() and (third["t"] == 3.0).all()


def test_headers_encode_as_compact_json_would():
    header = {"a": float("nan"), "b": [1.5, -0.0, 1e300, float("-inf")], "s": "\u00e9\u2028\"",
              "n": None, "t": True, "nested": {"k": [1, {"x": "y"}]}}
    assert codec.encode(header)[0] == json.dumps(header, separators=(",", ":")).encode()


def test_threads_encode_and_decode_at_once_without_mixing_their_messages():
    import threading

    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(200):
                arrays = [rng.standard_normal(rng.integers(1, 50)).astype(np.float32) for _ in range(3)]
                frames = [bytes(f) for f in codec.encode({"seed": seed, "t": arrays})]
                msg = codec.decode(frames)
                assert msg["seed"] == seed
                for a, b in zip(arrays, msg["t"]):
                    np.testing.assert_array_equal(a, b)
        except Exception as e:  # noqa: BLE001 - collected for the assert below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_large_string_tensor_goes_as_frames_of_at_most_4_mib():
    big = np.array([b"a" * (3 << 20), b"", b"b" * (3 << 20), "\u00e9"], dtype=object)
    frames = codec.encode({"s": big})
    assert len(frames) == 3 and all(len(f) <= codec.CHUNK_BYTES for f in frames[1:])
    out = codec.decode([bytes(f) for f in frames])["s"]
    assert list(out) == [b"a" * (3 << 20), b"", b"b" * (3 << 20), "\u00e9".encode()]
    with pytest.raises(codec.WireError, match="lengths"):
        codec.decode([bytes(f) for f in frames[:2]] + [bytes(frames[2])[:-1]])


def test_streams_of_all_senders_share_the_tasks_budget_for_messages_in_flight():
    from dtf.wire import limits

    budget = limits.InflightBudget(3 * BIG * 4 // 2)  # room for one stream, not two
    first, second = codec.PartialStreams(None, budget), codec.PartialStreams(None, budget)
    frames_a, parts_a = _send({"x": np.ones(BIG, np.float32)})
    frames_b, parts_b = _send({"x": np.zeros(BIG, np.float32)})
    first.add(json.loads(parts_a[0][0]), parts_a[0][1])
    second.add(json.loads(parts_b[0][0]), parts_b[0][1])  # refused: the first holds the budget
    for head, data in parts_a[1:]:
        first.add(json.loads(head), data)
    assert codec.decode(frames_a, streams=first)["x"].sum() == BIG
    assert budget.held == 0  # given back once taken
    with pytest.raises(codec.StreamTooLarge):
        codec.decode(frames_b, streams=second)
    third = codec.PartialStreams(None, budget)
    third.add(json.loads(parts_b[0][0]), parts_b[0][1])
    assert budget.held == BIG * 4
    third.close()  # its message never came
    assert budget.held == 0


def test_a_header_over_the_limit_is_refused_by_its_sender():
    with pytest.raises(codec.HeaderTooLarge, match="header of .* exceeds the limit"):
        codec.encode({"type": "X", "pad": "x" * codec.MAX_HEADER_BYTES})
