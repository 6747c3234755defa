"""What this test machine's CPU offers, for tests whose expectations depend on it.

oneDNN has JIT kernels for softmax and LRN on AVX-512 CPUs only; elsewhere it offers its
reference loops, which dtf declines in favour of its own kernels.
"""


def cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False
