"""dtf.runtime.memory.trim gives the C allocator's free memory back to the system: arrays
freed by a thread stay resident in its arena until then (what an initializer left on a
parameter server). Runs in a fresh interpreter, whose allocator state nothing else shares."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import os, threading
import numpy as np
from dtf.runtime import memory

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

def one_off_step():
    big = np.ones(6_000_000, np.float32)  # freed, it lets the allocator keep what follows
    del big
    temporaries = [np.ones(1_000_000, np.float32) for _ in range(12)]  # 48 MB
    one_off_step.kept = np.ones(10, np.float32)  # something small stays above them
    del temporaries

t = threading.Thread(target=one_off_step)
t.start()
t.join()
before = rss_mib()
print(memory.trim(), before - rss_mib())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_trim_returns_what_a_finished_step_freed():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CODE)], cwd=REPO, timeout=120,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    could, released_mib = proc.stdout.split()
    if could == "False":
        pytest.skip("this C library has no malloc_trim")
    assert float(released_mib) > 30, f"only {released_mib} MiB released of ~48 freed"
