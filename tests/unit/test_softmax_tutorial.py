"""examples/softmax_tutorial.py, a classic-style TF1 script (string dtypes, tf.app.flags,
tf.gfile, summaries, tf.app.run), runs as a program and learns; TensorFlow 1.15 semantics
give the same 0.9556 test accuracy for 300 steps."""
import glob
import os
import subprocess
import sys

from dtf.summary import summary_iterator

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "examples", "softmax_tutorial.py")


def test_softmax_tutorial_runs_with_its_flags_and_writes_summaries(tmp_path):
    logs = tmp_path / "logs"
    proc = subprocess.run([sys.executable, EXAMPLE, "--max_steps=300", f"--summaries_dir={logs}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    accuracy = float(proc.stdout.strip().split()[-1])
    assert accuracy >= 0.9
    assert "step 200: batch accuracy" in proc.stderr
    events = list(summary_iterator(glob.glob(f"{logs}/train/events.*")[0]))
    tags = {v.tag for e in events if e.HasField("summary") for v in e.summary.value}
    assert {"cross_entropy", "accuracy", "input/image/0", "input/image/3"} <= tags
    assert any(e.HasField("graph_def") for e in events)
