"""The chunked CPU kernels of Conv2D, its backprops and max pooling (dtf.kernels.cpu.conv_fast),
the intra-op pool they run on, and the split large matmul, against the numpy reference:
odd sizes, strides 1 and 2, SAME and VALID, dilated filters, batch 1, 1x1 filters, the
gather and the scatter path of the input gradient, and batches cut into many chunks."""
import threading

import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import blas, conv_direct, conv_fast, intra_op, onednn
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(29)


def kernel(op, attrs):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [attrs["T"]])
    kdef = registry.lookup(op, "CPU", node.dtype_key)
    assert kdef.label.startswith("numba"), f"{op} is served by {kdef.label}"
    return kdef.factory(node)


def conv_attrs(dtype, strides, padding):
    return {"T": tf.as_dtype(dtype), "strides": [1, *strides, 1], "padding": padding,
            "data_format": "NHWC", "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True,
            "explicit_paddings": []}


def close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = float(np.abs(want).max()) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, scale))


def dilate(w, rate):
    """The zero-filled filter the op layer builds for a dilated convolution."""
    if rate == 1:
        return w
    kh, kw, ci, co = w.shape
    out = np.zeros(((kh - 1) * rate + 1, (kw - 1) * rate + 1, ci, co), w.dtype)
    out[::rate, ::rate] = w
    return out


CASES = [  # x shape, filter shape, strides, padding, dilation
    ((2, 7, 9, 3), (3, 3, 3, 4), (1, 1), "SAME", 1),
    ((2, 7, 9, 3), (3, 3, 3, 4), (2, 2), "SAME", 1),
    ((3, 11, 6, 5), (5, 2, 5, 3), (2, 1), "VALID", 1),
    ((1, 13, 13, 1), (5, 5, 1, 7), (1, 1), "SAME", 1),     # batch 1, one input channel
    ((1, 9, 8, 6), (3, 3, 6, 2), (1, 1), "VALID", 1),      # co < ci: gather path
    ((2, 10, 10, 4), (3, 3, 4, 4), (1, 1), "SAME", 2),     # dilated 2
    ((2, 12, 11, 2), (2, 3, 2, 3), (1, 1), "VALID", 3),    # dilated 3
    ((3, 5, 7, 8), (1, 1, 8, 6), (1, 1), "SAME", 1),       # 1x1: no patches at all
    ((2, 9, 9, 3), (1, 1, 3, 5), (2, 2), "VALID", 1),      # 1x1 strided: patches
    ((2, 4, 4, 3), (5, 5, 3, 2), (2, 2), "SAME", 1),       # filter larger than the image
    # 8 to 32 output channels: the direct loop (conv_direct), forward and stride-1 dx
    ((2, 9, 11, 5), (3, 3, 5, 8), (1, 1), "SAME", 1),      # direct forward, im2col dx (5 < 8)
    ((2, 8, 9, 8), (3, 3, 8, 8), (2, 2), "SAME", 1),       # direct strided forward
    ((3, 7, 10, 16), (3, 2, 16, 8), (1, 1), "VALID", 1),   # direct both ways, 16 -> 8 -> 16
    ((1, 6, 5, 8), (3, 3, 8, 16), (1, 1), "SAME", 2),      # dilated, batch 1, 5 columns
    ((2, 11, 9, 16), (5, 5, 16, 16), (2, 1), "VALID", 1),  # 5x5, strides 2 and 1
    ((2, 5, 3, 8), (3, 3, 8, 8), (1, 1), "SAME", 1),       # 3 columns < conv_direct.JB: im2col
    ((0, 6, 6, 8), (3, 3, 8, 8), (1, 1), "SAME", 1),       # empty batch, direct
    ((0, 6, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", 1),       # empty batch, im2col
    ((2, 2, 2, 8), (1, 1, 8, 8), (3, 3), "VALID", 1),      # 1x1 output, stride beyond the filter
]


@pytest.fixture(autouse=True)
def own_kernels(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", False)


@pytest.fixture(params=[False, True], ids=["own", "onednn"])
def backend(request, monkeypatch):
    if request.param:
        if onednn.library() is None:
            pytest.skip("oneDNN is not installed")
        monkeypatch.setattr(onednn, "ENABLED", True)
    return request.param


@pytest.fixture(params=[1 << 21, 1], ids=["chunks", "one-image-chunks"])
def chunk_bytes(request, monkeypatch):
    """Default chunks, and one image per chunk (many chunks over the pool's threads)."""
    monkeypatch.setattr(conv_fast, "CHUNK_BYTES", request.param)
    monkeypatch.setattr(conv_direct, "CHUNK_BYTES", request.param)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,w_shape,strides,padding,rate", CASES)
def test_conv2d_and_backprops_match_reference(x_shape, w_shape, strides, padding, rate, dtype,
                                              chunk_bytes, backend):
    attrs = conv_attrs(dtype, strides, padding)
    x = RNG.normal(size=x_shape).astype(dtype)
    w = dilate(RNG.normal(size=w_shape).astype(dtype), rate)
    want = REFERENCE["Conv2D"](attrs, x, w)
    close(kernel("Conv2D", attrs)(None, x, w), want, dtype)
    dy = RNG.normal(size=want.shape).astype(dtype)
    in_sizes, w_sizes = np.array(x.shape, np.int32), np.array(w.shape, np.int32)
    close(kernel("Conv2DBackpropInput", attrs)(None, in_sizes, w, dy),
          REFERENCE["Conv2DBackpropInput"](attrs, in_sizes, w, dy), dtype)
    close(kernel("Conv2DBackpropFilter", attrs)(None, x, w_sizes, dy),
          REFERENCE["Conv2DBackpropFilter"](attrs, x, w_sizes, dy), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_loop_serves_small_channels_and_agrees_with_im2col(dtype, monkeypatch):
    # M3's layer shape, shrunk: the direct loop runs (it is counted), and its results equal
    # im2col's within rounding, and are the same whatever the chunks (no thread-dependent sums).
    calls = []
    real = conv_direct.kernel_for

    def counted(co, dt, kind="forward"):
        fn = real(co, dt, kind)
        calls.append((kind, co))
        assert fn is not None
        return fn

    attrs = conv_attrs(dtype, (1, 1), "SAME")
    x = RNG.normal(size=(5, 12, 10, 16)).astype(dtype)
    w = RNG.normal(size=(3, 3, 16, 16)).astype(dtype)
    dy = RNG.normal(size=(5, 12, 10, 16)).astype(dtype)
    sizes, w_sizes = np.array(x.shape, np.int32), np.array(w.shape, np.int32)
    fwd, bwd = kernel("Conv2D", attrs), kernel("Conv2DBackpropInput", attrs)
    bwd_w = kernel("Conv2DBackpropFilter", attrs)

    def run():
        return fwd(None, x, w), bwd(None, sizes, w, dy), bwd_w(None, x, w_sizes, dy)

    monkeypatch.setattr(conv_direct, "kernel_for", counted)
    direct = run()
    assert calls == [("forward", 16), ("forward", 16), ("filter", 16)]
    for a, b in zip(direct, run()):
        np.testing.assert_array_equal(a, b)  # same chunks: same result
    monkeypatch.setattr(conv_direct, "CHUNK_BYTES", 1)  # one image per chunk
    for a, b in zip(direct[:2], run()[:2]):
        np.testing.assert_array_equal(a, b)  # each pixel's sum never depends on chunks
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    for a, b in zip(direct, run()):
        close(a, b, dtype)
    assert len(calls) == 9


def test_direct_loop_module_is_written_for_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv("DTF_CACHE_DIR", str(tmp_path))
    fn = conv_direct._compile("forward", 8, np.float64)
    (module,) = (tmp_path / "fused").glob("dtf_conv_direct_*.py")
    assert "8 output channels" in module.read_text()
    assert any((tmp_path / "fused" / "__pycache__").iterdir())  # Numba's cached machine code
    xp = RNG.normal(size=(2, 6, 7, 3))
    w = RNG.normal(size=(3, 3, 3, 8))
    out = np.empty((2, 4, 5, 8))
    fn(xp, w, out, 0, 1, 1, 0.0)
    attrs = conv_attrs(np.float64, (1, 1), "VALID")
    close(out, REFERENCE["Conv2D"](attrs, xp, w), np.float64)


def test_direct_loop_propagates_nan_and_inf():
    attrs = conv_attrs(np.float32, (1, 1), "SAME")
    x = np.ones((1, 4, 6, 8), np.float32)
    x[0, 1, 2, 3], x[0, 3, 5, 0] = np.nan, np.inf
    w = np.ones((3, 3, 8, 8), np.float32)
    with np.errstate(invalid="ignore"):  # inf - inf in the reference's products
        close(kernel("Conv2D", attrs)(None, x, w), REFERENCE["Conv2D"](attrs, x, w), np.float32)


@pytest.mark.parametrize("hp, wp, top, left", [
    (9, 11, 1, 2),     # padded on every side
    (7, 8, 0, 0),      # no padding at all
    (5, 6, -1, -2),    # cropped at the top left (a strided gradient's offsets)
    (10, 5, 3, -1),    # padded above and below, cropped on the left and the right
    (4, 4, 5, 0),      # every row outside the image: zeros
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_padding_loop_matches_numpy(hp, wp, top, left, dtype):
    rng = np.random.default_rng(0)
    src = rng.standard_normal((5, 7, 8, 3)).astype(dtype)
    b0, b1 = 1, 4
    want = np.zeros((b1 - b0, hp, wp, 3), dtype)
    for i in range(hp):
        for j in range(wp):
            if 0 <= i - top < 7 and 0 <= j - left < 8:
                want[:, i, j] = src[b0:b1, i - top, j - left]
    buf = np.full((b1 - b0) * hp * wp * 3 + 5, np.nan, dtype)  # a reused buffer's leftovers
    got = conv_direct.pad_into(src, b0, b1, buf, hp, wp, top, left)
    np.testing.assert_array_equal(got, want)
    strided = np.asfortranarray(src)  # not C-contiguous: numpy's slices do it
    got = conv_direct.pad_into(strided, b0, b1, buf, hp, wp, top, left)
    np.testing.assert_array_equal(got, want)


def test_scratch_buffers_are_reused_and_results_are_not():
    attrs = conv_attrs(np.float32, (1, 1), "SAME")
    conv = kernel("Conv2D", attrs)
    x = RNG.normal(size=(4, 8, 8, 3)).astype(np.float32)
    w = RNG.normal(size=(3, 3, 3, 5)).astype(np.float32)
    first = conv(None, x, w)
    kept = first.copy()
    second = conv(None, x * 2, w)
    assert second is not first
    np.testing.assert_array_equal(first, kept)  # the next call did not write into it
    np.testing.assert_allclose(second, 2 * kept, rtol=1e-5, atol=1e-5)


def test_non_contiguous_inputs():
    attrs = conv_attrs(np.float64, (2, 2), "SAME")
    x = RNG.normal(size=(2, 9, 9, 6))[..., ::2]
    w = RNG.normal(size=(3, 3, 6, 4))[:, :, ::2]
    close(kernel("Conv2D", attrs)(None, x, w), REFERENCE["Conv2D"](attrs, x, w), np.float64)


def test_conv_rejects_mismatched_depth_and_gradient_shape():
    attrs = conv_attrs(np.float32, (1, 1), "SAME")
    x = np.zeros((1, 5, 5, 3), np.float32)
    with pytest.raises(ValueError, match="input depth must match filter depth"):
        kernel("Conv2D", attrs)(None, x, np.zeros((3, 3, 4, 2), np.float32))
    with pytest.raises(ValueError, match="out_backprop shape"):
        kernel("Conv2DBackpropInput", attrs)(None, np.array([1, 5, 5, 3]),
                                             np.zeros((3, 3, 3, 2), np.float32),
                                             np.zeros((1, 4, 5, 2), np.float32))


POOLS = [((2, 7, 9, 3), (2, 2), (2, 2), "SAME"), ((1, 8, 8, 5), (3, 3), (2, 2), "VALID"),
         ((3, 5, 6, 2), (3, 2), (1, 2), "SAME"), ((2, 28, 28, 32), (2, 2), (2, 2), "SAME"),
         ((2, 7, 7, 3), (2, 2), (2, 2), "VALID"), ((2, 8, 6, 3), (2, 3), (2, 3), "VALID")]


@pytest.mark.parametrize("shape,ksize,strides,padding,tiled", [
    ((2, 28, 28, 32), (2, 2), (2, 2), "SAME", True), ((2, 7, 9, 3), (2, 2), (2, 2), "SAME", True),
    ((2, 8, 6, 3), (2, 3), (2, 3), "VALID", True), ((2, 7, 7, 3), (2, 2), (2, 2), "VALID", False),
    ((1, 8, 8, 5), (3, 3), (2, 2), "VALID", False)])
def test_pool_gradient_writes_dx_whole_only_where_windows_tile(shape, ksize, strides, padding, tiled):
    """The gradient skips zeroing dx only when every pixel lies in exactly one window (a
    7x7 image pooled 2x2 VALID leaves its last row and column out: they must be zeros)."""
    node = type("Node", (), {"attrs": {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1],
                                       "padding": padding}})()
    out_hw, window = conv_fast._pool_geometry(node, shape)
    assert conv_fast._tiles(shape, out_hw, window) == tiled


@pytest.mark.parametrize("parallel_min", [conv_fast.POOL_PARALLEL_MIN, 1], ids=["size", "chunked"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,ksize,strides,padding", POOLS)
def test_max_pool_and_gradient_match_reference(shape, ksize, strides, padding, dtype, parallel_min,
                                               monkeypatch):
    monkeypatch.setattr(conv_fast, "POOL_PARALLEL_MIN", parallel_min)
    monkeypatch.setattr(conv_fast, "THREADS", 2)  # image ranges even on a one-core machine
    attrs = {"T": tf.as_dtype(dtype), "ksize": [1, *ksize, 1], "strides": [1, *strides, 1],
             "padding": padding, "data_format": "NHWC"}
    # Few distinct values, so windows hold ties: the first maximum must win.
    x = RNG.integers(0, 4, size=shape).astype(dtype)
    y = kernel("MaxPool", attrs)(None, x)
    np.testing.assert_array_equal(y, REFERENCE["MaxPool"](attrs, x))
    dy = RNG.normal(size=y.shape).astype(dtype)
    # Overlapping windows add into one input in another order than the reference.
    close(kernel("MaxPoolGrad", attrs)(None, x, y, dy), REFERENCE["MaxPoolGrad"](attrs, x, y, dy),
          dtype)


@pytest.mark.parametrize("n,per_image,threads", [(64, 78_400, 2), (64, 627_200, 2), (1, 10 << 20, 2),
                                                  (5, 1, 2), (7, 3 << 20, 3), (64, 78_400, 1)])
def test_batch_chunks_cover_the_batch_in_near_equal_ranges(n, per_image, threads, monkeypatch):
    monkeypatch.setattr(conv_fast, "THREADS", threads)
    chunks = conv_fast._batch_chunks(n, per_image)
    assert chunks[0][0] == 0 and chunks[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    sizes = [b1 - b0 for b0, b1 in chunks]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    # About CHUNK_BYTES of patches each, and a multiple of the threads unless one image each.
    assert max(sizes) * per_image <= 2 * conv_fast.CHUNK_BYTES or max(sizes) == 1
    assert len(chunks) % threads == 0 or len(chunks) == n


def test_intra_op_pool_runs_every_chunk_once_and_raises_the_first_error():
    pool = intra_op.IntraOpPool(2)
    seen = []
    lock = threading.Lock()

    def record(i):
        with lock:
            seen.append(i)

    pool.run(record, 37)
    assert sorted(seen) == list(range(37))

    def fail(i):
        if i == 5:
            raise ValueError("chunk 5 failed")

    with pytest.raises(ValueError, match="chunk 5 failed"):
        pool.run(fail, 9)
    pool.run(record, 0)  # nothing to do returns at once


@pytest.mark.parametrize("m,k,n", [(256, 784, 1024), (64, 3136, 1024), (1024, 256, 10),
                                   (3, 4096, 777), (1000, 333, 1)])
def test_split_matmul_matches_numpy(m, k, n):
    a = RNG.normal(size=(m, k)).astype(np.float32)
    b = RNG.normal(size=(k, n)).astype(np.float32)
    got = blas.split_matmul(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    bt = np.asfortranarray(b)  # a transposed operand, as MatMul's transpose_b passes it
    np.testing.assert_allclose(blas.split_matmul(a, bt), a @ b, rtol=1e-4, atol=1e-3)


def test_one_thread_sections_nest_across_threads():
    ctl = blas._controller()
    if ctl is None or ctl.default <= 1:
        pytest.skip("no multi-threaded OpenBLAS to limit")
    inside = threading.Event()
    leave = threading.Event()

    def other():
        with blas.one_thread():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with blas.one_thread():
        pass
    assert blas._single_sections == 1  # the other thread's section still holds
    leave.set()
    t.join()
    assert blas._single_sections == 0


def test_concurrent_jobs_both_finish():
    """A job started while another runs goes on its caller alone; both complete."""
    pool = intra_op.IntraOpPool(1)
    release = threading.Event()
    done = {"a": [], "b": []}

    def slow(i):
        release.wait(5)
        done["a"].append(i)

    t = threading.Thread(target=pool.run, args=(slow, 4))
    t.start()
    pool.run(lambda i: done["b"].append(i), 6)  # while "a" still blocks
    assert sorted(done["b"]) == list(range(6))
    release.set()
    t.join(5)
    assert sorted(done["a"]) == list(range(4))
