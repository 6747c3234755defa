"""The math, nn, conv and structural CUDA kernels against the numpy reference, forward and
gradient ops, on tiny tensors (the simulator runs each GPU thread in Python). Slicing,
gathering and padding kernels: test_cuda_array_kernels.py.
"""
import numpy as np
import pytest

from dtf.framework import dtypes, errors
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from .kernel_check import BOOL, F32, F64, I32, I64, check, cuda_device, gpu, rand, rng, run_raw

pytestmark = pytest.mark.gpu



# -- elementwise ------------------------------------------------------------------------------------
POSITIVE_ONLY = {"Sqrt", "Rsqrt", "Log", "Log1p", "Reciprocal"}
UNIT_INTERVAL = {"Asin", "Acos"}
# Ties, NaN and infinities: for the rounding and classifying ops.
SPECIAL = {"Floor", "Ceil", "Round", "IsNan", "IsInf", "IsFinite"}
SPECIAL_VALUES = np.float32([[-2.5, -1.5, -0.5, 0.5, 1.5], [2.5, np.nan, np.inf, -np.inf, 1e30],
                             [-0.2, 0.7, -3.7, 4.0, 0]])


def _unary_input(op):
    if op in SPECIAL:
        return SPECIAL_VALUES
    if op in UNIT_INTERVAL:
        return rand(4, 5, low=-0.9, high=0.9)
    return rand(4, 5, low=0.1, high=2.0) if op in POSITIVE_ONLY else rand(4, 5, low=-2, high=2)


def _unary_ops():
    from dtf.kernels.cuda.elementwise import UNARY

    return sorted(op for op, (_, dts, _) in UNARY.items() if "float32" in dts)


def _binary_float_ops():
    from dtf.kernels.cuda.elementwise import BINARY

    return sorted(op for op, (_, dts, _) in BINARY.items() if "float32" in dts)


@pytest.mark.parametrize("op", _unary_ops())
def test_unary(op):
    check(op, {"T": F32, "alpha": 0.3}, _unary_input(op))


@pytest.mark.parametrize("op", ["Neg", "Abs", "Square", "Relu"])
def test_unary_int(op):
    check(op, {"T": I32}, rng.integers(-5, 5, (3, 4)).astype(np.int32))


@pytest.mark.parametrize("op", _binary_float_ops())
@pytest.mark.parametrize("y_shape", [(4, 5), (5,), (4, 1)])
def test_binary_broadcast(op, y_shape):
    x = rand(4, 5, low=0.5, high=2.0) if op == "Pow" else rand(4, 5)
    y = rand(*y_shape, low=0.5, high=2.0)
    check(op, {"T": F32, "alpha": 0.3}, x, y, rtol=1e-5, atol=1e-5)


def test_binary_float64_and_int():
    check("Mul", {"T": F64}, rand(2, 3, dtype=np.float64), rand(3, dtype=np.float64))
    check("Sub", {"T": I32}, np.arange(6, dtype=np.int32).reshape(2, 3), np.int32([1, 2, 3]))
    check("Less", {"T": I32}, np.arange(6, dtype=np.int32).reshape(2, 3), np.int32([1, 5, 3]))
    check("LogicalAnd", {"T": dtypes.bool}, np.array([True, False, True]), np.array([True, True, False]))


def test_floor_division_signs_and_xdivy():
    x = np.float32([[-7, 7, -7, 7, 0, 2.5]])
    y = np.float32([2, -2, -2, 2, 3, 0.5])
    for op in ("FloorDiv", "FloorMod", "TruncateDiv", "Xdivy"):
        check(op, {"T": F32}, x, y)
    check("FloorMod", {"T": F64}, x.astype(np.float64), y.astype(np.float64))


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod", "TruncateDiv"])
def test_integer_division_runs_on_host(op):
    x, y = np.int32([-7, 7, -7, 7]), np.int32([2, -2, -2, 2])
    check(op, {"T": I32}, x, y)
    assert isinstance(run_raw(op, {"T": I32}, x, y, device=(0, 1)), np.ndarray)
    with pytest.raises(ValueError, match="Integer division by zero"):
        gpu(op, {"T": I32}, x, np.int32([1, 0, 1, 1]))


def test_logical_ops():
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    check("LogicalNot", {"T": BOOL}, a)
    check("LogicalXor", {"T": BOOL}, a, b)
    check("LogicalOr", {"T": BOOL}, a, b[:1])


def test_select_v2_broadcasts():
    c = np.array([[True], [False], [True]])
    check("SelectV2", {"T": F32}, c, rand(3, 4), rand(4))
    check("SelectV2", {"T": I32}, np.array(False), np.int32([1, 2]), np.int32([[3], [4]]), device=(0, 1, 2))


def test_select_row_vector_and_errors():
    x, y = rand(3, 2, 2), rand(3, 2, 2)
    check("Select", {"T": F32}, np.array([True, False, True]), x, y)
    check("Select", {"T": F32}, rand(3, 2, 2) > 0, x, y)
    with pytest.raises(ValueError, match="condition has 2 elements"):
        gpu("Select", {"T": F32}, np.array([True, False]), x, y)
    with pytest.raises(ValueError, match="must have the same shape"):
        gpu("Select", {"T": F32}, rand(3, 2) > 0, rand(3, 2), rand(3, 1))


def test_incompatible_shapes():
    with pytest.raises(ValueError, match="Incompatible shapes"):
        gpu("Add", {"T": F32}, rand(4, 5), rand(3))


def test_cast_add_n_fill_likes():
    x = rand(3, 4, low=-3, high=3)
    check("Cast", {"SrcT": F32, "DstT": I32}, x, out_dtype=I32)
    check("Cast", {"SrcT": F32, "DstT": dtypes.bool}, x, out_dtype=dtypes.bool)
    check("Cast", {"SrcT": I32, "DstT": F32}, np.int32([1, -2, 3]), out_dtype=F32)
    check("AddN", {"T": F32, "N": 3}, x, x * 2, x * 3)
    check("Fill", {"T": F32}, np.int32([2, 3]), np.float32(1.5))
    check("ZerosLike", {"T": F32}, x)
    check("OnesLike", {"T": F32}, x)


@pytest.mark.parametrize("fmt,shape", [("NHWC", (2, 3, 4)), ("NCHW", (2, 4, 3))])
def test_bias_add_and_grad(fmt, shape):
    check("BiasAdd", {"T": F32, "data_format": fmt}, rand(*shape), rand(4))
    check("BiasAddGrad", {"T": F32, "data_format": fmt}, rand(*shape), rtol=1e-5, atol=1e-5)


# -- reductions -------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min", "Prod"])
@pytest.mark.parametrize("axes,keep", [([0], False), ([1], True), ([0, 1], False), ([-1], False), ([], False)])
def test_reductions(op, axes, keep):
    check(op, {"T": F32, "keep_dims": keep}, rand(4, 5, low=0.5, high=1.5), np.int32(axes), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # numpy, in the reference
def test_empty_reductions_give_the_identity():
    empty = np.zeros((0, 3), np.float32)
    for op in ("Sum", "Prod", "Mean"):
        check(op, {"T": F32, "keep_dims": False}, empty, np.int32([0]))
    with pytest.raises(ValueError, match="no identity"):
        gpu("Max", {"T": F32}, empty, np.int32([0]))


def test_reduction_3d_int_and_errors():
    x = rng.integers(-4, 4, (2, 3, 4)).astype(np.int32)
    check("Sum", {"T": I32, "keep_dims": False}, x, np.int32([0, 2]))
    check("Max", {"T": I32, "keep_dims": True}, x, np.int32([1]))
    with pytest.raises(ValueError, match="Invalid reduction dimension"):
        gpu("Sum", {"T": F32}, rand(2, 3), np.int32([2]))


@pytest.mark.parametrize("op", ["Any", "All"])
def test_logical_reductions(op):
    x = np.array([[True, False, True], [True, True, True]])
    for axes, keep in (([0], False), ([1], True), ([0, 1], False), ([], False)):
        check(op, {"keep_dims": keep}, x, np.int32(axes), out_dtype=BOOL, device=(0,))
    check(op, {"keep_dims": False}, np.zeros((0, 2), bool), np.int32([0]), out_dtype=BOOL, device=(0,))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reductions(op, axis):
    check(op, {"T": F32, "output_type": dtypes.int64}, rand(4, 5), np.int32(axis))


def test_l2_loss():
    check("L2Loss", {"T": F32}, rand(4, 5), rtol=1e-5)


# -- matmul -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(ta, tb):
    a = rand(5, 4) if ta else rand(4, 5)
    b = rand(3, 5) if tb else rand(5, 3)
    check("MatMul", {"T": F32, "transpose_a": ta, "transpose_b": tb}, a, b, rtol=1e-5, atol=1e-5)


def test_matmul_float64_larger_than_a_tile():
    check("MatMul", {"T": F64, "transpose_a": False, "transpose_b": False}, rand(17, 3, dtype=np.float64), rand(3, 18, dtype=np.float64), atol=1e-12)


def test_matmul_shape_error():
    with pytest.raises(ValueError, match="Matrix size-incompatible"):
        gpu("MatMul", {"T": F32}, rand(2, 3), rand(2, 3))


def test_batch_matmul():
    check("BatchMatMulV2", {"T": F32, "adj_x": False, "adj_y": True}, rand(2, 3, 4), rand(2, 5, 4),
          rtol=1e-5, atol=1e-5)


# -- softmax and cross-entropy ------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(op):
    check(op, {"T": F32}, rand(4, 5, low=-30, high=30), rtol=1e-5, atol=1e-6)
    check(op, {"T": F32}, rand(2, 3, 4))


def test_softmax_cross_entropy():
    labels = np.abs(rand(4, 5))
    labels /= labels.sum(axis=1, keepdims=True)
    check("SoftmaxCrossEntropyWithLogits", {"T": F32}, rand(4, 5, low=-5, high=5), labels, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [I32, I64])
def test_in_top_k(dtype):
    pred = np.float32([[0.1, 0.5, 0.5, 0.2], [1, 2, 3, 4], [np.nan, 1, 2, 3], [4, 3, 2, 1]])
    targets = np.array([2, 0, 0, 7], dtype.as_numpy_dtype)
    for k in (1, 2, 4):
        check("InTopKV2", {"T": dtype}, pred, targets, np.array(k, dtype.as_numpy_dtype))


def test_sparse_softmax_cross_entropy():
    check("SparseSoftmaxCrossEntropyWithLogits", {"T": F32, "Tlabels": I32}, rand(4, 5, low=-5, high=5),
          np.int32([0, 4, 2, 2]), rtol=1e-5, atol=1e-6)
    with pytest.raises(errors.InvalidArgumentError, match="Received a label value of 5"):
        gpu("SparseSoftmaxCrossEntropyWithLogits", {"T": F32}, rand(2, 5), np.int32([1, 5]))


# -- convolution and pooling --------------------------------------------------------------------
CONV_CASES = [((1, 5, 5, 2), (3, 3, 2, 3), 1, "SAME"), ((1, 5, 5, 2), (3, 3, 2, 3), 2, "SAME"),
              ((2, 5, 4, 1), (2, 3, 1, 2), 2, "VALID")]


def _conv_attrs(stride, padding):
    return {"T": F32, "strides": [1, stride, stride, 1], "padding": padding, "data_format": "NHWC",
            "dilations": [1, 1, 1, 1]}


@pytest.mark.parametrize("x_shape,w_shape,stride,padding", CONV_CASES)
def test_conv2d_and_backprops(x_shape, w_shape, stride, padding):
    attrs = _conv_attrs(stride, padding)
    x, w = rand(*x_shape), rand(*w_shape)
    y = check("Conv2D", attrs, x, w, rtol=1e-5, atol=1e-5)
    dy = rand(*y.shape)
    check("Conv2DBackpropInput", attrs, np.int32(x_shape), w, dy, rtol=1e-5, atol=1e-5)
    check("Conv2DBackpropFilter", attrs, x, np.int32(w_shape), dy, rtol=1e-5, atol=1e-5)


def test_conv2d_unsupported_layout_is_unimplemented():
    node = NodeDef("c", "Conv2D", [], [], "", {**_conv_attrs(1, "SAME"), "data_format": "NCHW"}, [])
    with pytest.raises(NotImplementedError, match="NHWC"):
        registry.lookup("Conv2D", "GPU", F32).factory(node)


POOL_CASES = [(2, 2, "VALID"), (3, 1, "SAME"), (3, 2, "SAME")]


@pytest.mark.parametrize("k,stride,padding", POOL_CASES)
def test_pooling_and_grads(k, stride, padding):
    attrs = {"T": F32, "ksize": [1, k, k, 1], "strides": [1, stride, stride, 1], "padding": padding,
             "data_format": "NHWC"}
    x = rand(1, 5, 5, 2)
    y = check("MaxPool", attrs, x)
    check("AvgPool", attrs, x, rtol=1e-5, atol=1e-6)
    dy = rand(*y.shape)
    check("MaxPoolGrad", attrs, x, y, dy, rtol=1e-5, atol=1e-6)
    check("AvgPoolGrad", attrs, np.int32(x.shape), dy, rtol=1e-5, atol=1e-6)


# -- array ops --------------------------------------------------------------------------------------
def test_relabelling_ops():
    x = rand(2, 3, 4)
    check("Reshape", {"T": F32}, x, np.int32([4, -1]))
    check("ExpandDims", {"T": F32}, x, np.int32(-1))
    check("Squeeze", {"T": F32, "squeeze_dims": [0]}, rand(1, 3, 1))
    check("Squeeze", {"T": F32}, rand(1, 3, 1))
    with pytest.raises(ValueError, match="Input to reshape"):
        gpu("Reshape", {"T": F32}, x, np.int32([5, -1]))


def test_copying_ops():
    x = rand(2, 3, 4)
    check("Transpose", {"T": F32}, x, np.int32([2, 0, 1]))
    check("ConcatV2", {"T": F32, "N": 2}, x, rand(2, 1, 4), np.int32(1))
    check("ConcatV2", {"T": F32, "N": 2}, x, x, np.int32(-1))
    check("Pack", {"T": F32, "N": 2, "axis": 1}, rand(2, 3), rand(2, 3))
    with pytest.raises(ValueError, match="ConcatOp"):
        gpu("ConcatV2", {"T": F32, "N": 2}, x, rand(2, 3, 5), np.int32(1))


def test_metadata_ops_answer_on_host():
    x = cuda_device().to_device(rand(2, 3))
    shape = gpu("Shape", {"T": F32, "out_type": I32}, rand(2, 3))
    np.testing.assert_array_equal(shape, [2, 3])
    node = NodeDef("s", "Size", [], [], "", {"T": F32, "out_type": I32}, [])
    size = registry.lookup("Size", "GPU", F32).factory(node)(None, x)
    assert isinstance(size, np.ndarray) and int(size) == 6
    check("BroadcastGradientArgs", {"T": I32}, np.int32([4, 5]), np.int32([5]))
