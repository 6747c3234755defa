"""Small numeric tensors of one message share a frame (a pack): each lies at an aligned
offset (``"at"``) of it, and decodes as a view of that frame."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dtf.wire import codec


def _encode(header):
    frames = codec.encode(header)
    return [bytes(f) for f in frames]


def test_small_tensors_travel_in_one_frame_at_aligned_offsets():
    tensors = [np.arange(10, dtype=np.float32), np.ones((128, 10), np.float32),
               np.array(7, np.int64), np.array([True, False, True]), np.arange(6, dtype=np.float16),
               np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]]  # not C-contiguous
    frames = _encode({"type": "Tensor", "id": 0, "tensors": tensors})
    assert len(frames) == 2  # the header and one pack
    refs = json.loads(frames[0])["tensors"]
    assert {r["@t"] for r in refs} == {1}
    offsets = [r["at"] for r in refs]
    assert offsets == sorted(offsets) and all(o % codec.PACK_ALIGN == 0 for o in offsets)
    out = codec.decode(frames)["tensors"]
    for got, want in zip(out, tensors):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_large_and_empty_and_string_tensors_keep_frames_of_their_own():
    big = np.arange(codec.PACK_MAX_BYTES // 4, dtype=np.float32)  # exactly the limit: not packed
    tensors = [np.arange(3, dtype=np.float64), big, np.zeros((0, 4), np.float32),
               np.array([b"ab", b"c"], dtype=object), np.arange(5, dtype=np.int64)]
    frames = _encode({"tensors": tensors})
    refs = json.loads(frames[0])["tensors"]
    assert refs[0]["@t"] == refs[4]["@t"] and "at" in refs[0] and "at" in refs[4]
    assert len({refs[1]["@t"], refs[2]["@t"], refs[3]["@t"], refs[0]["@t"]}) == 4
    assert not any("at" in refs[i] for i in (1, 2, 3))
    assert len(frames[refs[1]["@t"]]) == big.nbytes
    out = codec.decode(frames)["tensors"]
    np.testing.assert_array_equal(out[1], big)
    assert out[2].shape == (0, 4) and list(out[3]) == [b"ab", b"c"]
    np.testing.assert_array_equal(out[4], tensors[4])


def test_a_pack_never_exceeds_a_chunk():
    each = codec.PACK_MAX_BYTES - 4096
    count = 2 * codec.CHUNK_BYTES // each + 3
    tensors = [np.full(each // 8, i, np.float64) for i in range(count)]
    frames = _encode({"tensors": tensors})
    assert 3 <= len(frames) - 1 < count
    assert all(len(f) <= codec.CHUNK_BYTES for f in frames[1:])
    out = codec.decode(frames)["tensors"]
    assert [int(t[0]) for t in out] == list(range(count))


def test_numpy_scalars_and_nested_tensors_are_packed_too():
    msg = {"feeds": {"a:0": np.float32(2.5), "b:0": np.arange(4, dtype=np.uint8)},
           "nested": [{"x": np.int64(9)}]}
    frames = _encode(msg)
    assert len(frames) == 2
    out = codec.decode(frames)
    assert out["feeds"]["a:0"] == np.float32(2.5) and out["feeds"]["a:0"].dtype == np.float32
    np.testing.assert_array_equal(out["feeds"]["b:0"], np.arange(4, dtype=np.uint8))
    assert out["nested"][0]["x"] == 9


def _packed_message(ref_changes):
    frames = _encode({"t": np.arange(4, dtype=np.float32), "u": np.arange(3, dtype=np.int64)})
    header = json.loads(frames[0])
    header["u"].update(ref_changes)
    return [json.dumps(header).encode()] + frames[1:]


@pytest.mark.parametrize("changes, words", [
    ({"at": -16}, "bad tensor offset"),
    ({"at": 1.5}, "bad tensor offset"),
    ({"at": "16"}, "bad tensor offset"),
    ({"at": 2**70}, "needs 24 bytes"),
    ({"at": 32}, "needs 24 bytes"),
    ({"shape": [4]}, "needs 32 bytes"),
    ({"dtype": "string", "lens": [1, 1, 1]}, "bad tensor offset"),
    ({"n": 2}, "missing"),
])
def test_a_bad_offset_is_refused_with_what_was_wrong(changes, words):
    with pytest.raises(codec.WireError, match=words):
        codec.decode(_packed_message(changes))


def test_a_packed_tensor_may_end_before_its_frame_does():
    # The last tensor of a pack ends at the frame's end; one before it ends earlier.
    frames = _encode({"t": [np.arange(3, dtype=np.int8), np.arange(2, dtype=np.int64)]})
    refs = json.loads(frames[0])["t"]
    assert refs[1]["at"] == codec.PACK_ALIGN and len(frames[1]) == codec.PACK_ALIGN + 16
    out = codec.decode(frames)["t"]
    assert out[0].tolist() == [0, 1, 2] and out[1].tolist() == [0, 1]
