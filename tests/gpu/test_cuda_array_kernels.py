"""Slicing, gathering, tiling and padding CUDA kernels (and their gradient ops) against
the numpy reference, on tiny tensors; integer inputs already in host memory stay there."""
import numpy as np
import pytest

from dtf.framework import errors
from .kernel_check import BOOL, F32, F64, I32, I64, check, gpu, rand, rng, run_raw

pytestmark = pytest.mark.gpu

MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _ss(**masks):
    return {"T": F32, "Index": I32, **dict.fromkeys(MASKS, 0), **masks}


# (begin, end, strides, masks) of x[...] on a [3, 4, 5] tensor
STRIDED = [
    ([0, 1, 0], [3, 4, 5], [1, 1, 2], {}),                                       # x[0:3, 1:4, 0:5:2]
    ([2, 0, 0], [0, 0, 0], [-1, 1, 1], {"end_mask": 0b111, "begin_mask": 0b110}),  # x[2::-1]
    ([1, -1], [2, 0], [1, 1], {"shrink_axis_mask": 0b01, "end_mask": 0b10}),   # x[1, -1:]
    ([0, 0, 2], [0, 0, 3], [1, 1, 1], {"ellipsis_mask": 0b001, "new_axis_mask": 0b010,
                                       "shrink_axis_mask": 0b100}),           # x[..., None, 2]
    ([1, 2, 3], [2, 3, 4], [1, 1, 1], {"shrink_axis_mask": 0b111}),           # x[1, 2, 3]
    ([3, 0, 0], [0, 4, 5], [-2, 3, 1], {}),                                   # x[3:0:-2, 0:4:3]
]


@pytest.mark.parametrize("begin,end,strides,masks", STRIDED)
def test_strided_slice_and_grad(begin, end, strides, masks):
    x = rand(3, 4, 5)
    spec = [np.int32(v) for v in (begin, end, strides)]
    y = check("StridedSlice", _ss(**masks), x, *spec)
    check("StridedSliceGrad", _ss(**masks), np.int32(x.shape), *spec, rand(*y.shape))


def test_strided_slice_errors_and_host_ints():
    with pytest.raises(ValueError, match="out of bounds"):
        gpu("StridedSlice", _ss(shrink_axis_mask=1), rand(3), np.int32([3]), np.int32([4]), np.int32([1]))
    shape = np.int32([7, 8, 9])
    out = run_raw("StridedSlice", _ss(shrink_axis_mask=1, T=I32), shape, np.int32([1]), np.int32([2]),
                  np.int32([1]))
    assert isinstance(out, np.ndarray) and int(out) == 8  # a shape stays in host memory


def test_slice():
    x = rand(3, 4, 5)
    check("Slice", {"T": F32}, x, np.int32([1, 0, 2]), np.int32([2, -1, 3]))
    check("Slice", {"T": I64}, x.astype(np.int64), np.int32([0, 3, 0]), np.int32([3, 1, 0]), device=(0,))
    with pytest.raises(ValueError, match="within"):
        gpu("Slice", {"T": F32}, x, np.int32([2, 0, 0]), np.int32([2, 1, 1]))


def test_reverse_broadcast_tile():
    x = rand(2, 3, 4)
    check("ReverseV2", {"T": F32}, x, np.int32([0, -1]))
    check("ReverseV2", {"T": F32}, x, np.int32([]))
    check("BroadcastTo", {"T": F32}, rand(3, 1), np.int32([2, 3, 4]))
    check("Tile", {"T": F32}, rand(2, 3), np.int32([2, 1]))
    check("Tile", {"T": F64}, rand(2, 1, 2, dtype=np.float64), np.int32([1, 3, 2]))
    check("Tile", {"T": BOOL}, np.array([True, False]), np.int32([2]), device=(0,))
    with pytest.raises(ValueError, match="multiples argument"):
        gpu("Tile", {"T": F32}, x, np.int32([2, 1]))


def test_split_split_v_unpack():
    x = rand(4, 6)
    check("Split", {"T": F32, "num_split": 3}, np.int32(1), x)
    check("Split", {"T": F32, "num_split": 2}, np.int32(0), x)
    check("SplitV", {"T": F32, "num_split": 3}, x, np.int32([1, -1, 2]), np.int32(-1))
    check("Unpack", {"T": F32, "num": 6, "axis": 1}, x)
    check("Unpack", {"T": I32, "num": 4, "axis": 0}, np.arange(8, dtype=np.int32).reshape(4, 2), device=(0,))
    with pytest.raises(ValueError, match="evenly divide"):
        gpu("Split", {"T": F32, "num_split": 4}, np.int32(1), x)
    with pytest.raises(ValueError, match="must equal 3"):
        gpu("Unpack", {"T": F32, "num": 3, "axis": 0}, x)


def test_gather_and_its_gradient():
    params = rand(4, 3, 2)
    check("GatherV2", {"Tparams": F32}, params, np.int32([3, 0, 3]), np.int32(0), out_dtype=F32)
    check("GatherV2", {"Tparams": F32}, params, np.int64([[1, 0], [2, 2]]), np.int32(1), out_dtype=F32)
    check("GatherV2", {"Tparams": F32}, params, np.int32(1), np.int32(-1), out_dtype=F32)
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 4 is not in \[0, 4\)"):
        gpu("GatherV2", {"Tparams": F32}, params, np.int32([0, 4]), np.int32(0), out_dtype=F32)
    ids = np.int32([[0, 2], [-1, 2]])
    check("UnsortedSegmentSum", {"T": F32}, rand(2, 2, 3), ids, np.int32(4))
    check("UnsortedSegmentSum", {"T": I32}, np.int32([[1, 2], [3, 4]]), np.int32([1, 1]), np.int32(2),
          device=(0,))
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        gpu("UnsortedSegmentSum", {"T": F32}, rand(2), np.int32([0, 3]), np.int32(3))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    idx = np.int32([[0, 3], [2, -1]])
    check("OneHot", {"T": F32, "axis": axis}, idx, np.int32(3), np.float32(5), np.float32(-1))
    check("OneHot", {"T": I64, "axis": axis}, np.int64([1, 0]), np.int32(2), np.int64(1), np.int64(0))


def test_pad_family():
    x = rand(2, 3)
    p = np.int32([[1, 2], [0, 1]])
    check("Pad", {"T": F32}, x, p)
    check("PadV2", {"T": F32}, x, p, np.float32(7))
    check("Pad", {"T": F32}, rand(0, 2), p)
    check("Pad", {"T": I32}, np.int32([[1, 2]]), p, device=(0,))
    with pytest.raises(ValueError, match="first dimension of paddings"):
        gpu("Pad", {"T": F32}, x, np.int32([[1, 1]]))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad_and_grad(mode):
    x = rand(3, 4)
    p = np.int32([[2, 1], [1, 2]])
    y = check("MirrorPad", {"T": F32, "mode": mode}, x, p)
    check("MirrorPadGrad", {"T": F32, "mode": mode}, rand(*y.shape), p)
    with pytest.raises(ValueError, match="no greater than"):
        gpu("MirrorPad", {"T": F32, "mode": mode}, x, np.int32([[4, 0], [0, 0]]))


def test_where_answers_in_host_memory():
    cond = rng.uniform(size=(3, 4)) > 0.5
    check("Where", {"T": BOOL}, cond, device=(0,))
    assert isinstance(run_raw("Where", {"T": F32}, rand(2, 2)), np.ndarray)
