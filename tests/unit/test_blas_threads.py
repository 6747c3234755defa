"""Matrix products with BLAS threads sized to the product (dtf.kernels.cpu.blas): numpy's
values (to rounding: OpenBLAS splits a product differently over one thread than over two),
one BLAS thread while a small product runs, and the process's own thread count untouched
afterwards."""
import numpy as np
import pytest

from dtf.kernels.cpu import blas

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("shapes", [((64, 64), (64, 128)), ((300, 200), (200, 100)),
                                    ((3, 8, 4), (3, 4, 5)), ((2, 3), (3,))])
def test_values_equal_numpy(shapes):
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in shapes)
    np.testing.assert_allclose(blas.matmul(a, b), np.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_transposed_views_and_integers():
    a = RNG.standard_normal((64, 32))
    b = RNG.standard_normal((16, 32))
    np.testing.assert_allclose(blas.matmul(a, b.T), np.matmul(a, b.T), rtol=1e-12, atol=1e-12)
    i, j = RNG.integers(-5, 5, (4, 3)), RNG.integers(-5, 5, (3, 2))
    assert blas.matmul(i, j).dtype == np.matmul(i, j).dtype


def test_shape_errors_are_numpys():
    with pytest.raises(ValueError):
        blas.matmul(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_small_products_run_on_one_thread_and_restore_the_count():
    threads = blas._controller()
    if threads is None or threads.default <= 1:
        pytest.skip("no OpenBLAS with several threads in this process")
    seen = []
    real_set = threads._set

    def spy(n):
        seen.append(n)
        real_set(n)

    threads._set = spy
    try:
        # Products OpenBLAS keeps on one thread itself leave the count alone.
        a = np.ones((8, 8), np.float32)
        blas.matmul(a, a)
        assert seen == []
        # 128^3 multiply-adds: one thread for this product, the count put back after it.
        mid = np.ones((128, 128), np.float32)
        assert 128 ** 3 > blas.ONE_THREAD_WORK and 128 ** 3 < blas.PARALLEL_MIN_WORK
        np.testing.assert_array_equal(blas.matmul(mid, mid), mid @ mid)
        assert seen == [1, threads.default]
        seen.clear()
        # 256^3 multiply-adds: over the threshold (float64: float32 goes to oneDNN's matmul
        # where it is installed, tests/unit/test_conv_onednn.py)
        big = np.ones((256, 256), np.float64)
        np.testing.assert_array_equal(blas.matmul(big, big), big @ big)
        if blas.SPLIT_LARGE:  # one-thread pieces on the intra-op threads, then restored
            assert seen and set(seen[:-1]) == {1} and seen[-1] == threads.default
        else:  # left to BLAS's own threads
            assert seen == []
    finally:
        threads._set = real_set
