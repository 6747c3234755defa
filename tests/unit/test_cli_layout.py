"""What the CLI's tables and live view look like at a fixed terminal width (rich Console)."""
from pathlib import Path

from rich.console import Console

from dtf.cli import status
from dtf.cli.config import ClusterConfig


def _render(renderable, width=80) -> list:
    console = Console(width=width, record=True, color_system=None, force_terminal=True)
    console.print(renderable)
    return console.export_text().splitlines()


def _row(job, index, address, state="up", pid=4194303, error=None, reason=None):
    row = {"job": job, "index": index, "address": address, "host": address.rpartition(":")[0],
           "state": state, "pid": pid if state == "up" else None, "secure": True}
    if state == "up":
        row.update(uptime_s=7300, max_rss_kb=1_500_000, sessions=12, steps=123456, graphs=3,
                   variables=4, messages=99, incarnation=1, last_error=error, gpus=0)
    else:
        row["reason"] = reason
    return row


ROWS = [
    _row("ps", 0, "127.0.0.1:22222"),
    _row("worker", 0, "10.100.200.123:22223",
         error='InvalidArgumentError: MatMul "dense/MatMul": inner dimensions differ: [2,3] x [4,5]'),
    _row("worker", 11, "127.0.0.1:22224", state="down", reason="wrong cluster keys: a task encrypted with other keys"),
]


def test_status_fits_80_columns_without_cutting_task_address_or_pid():
    cfg = ClusterConfig(Path("/very/long/directory/name/for/a/cluster/of/many/tasks/cluster.toml"),
                        {"ps": ["127.0.0.1:22222"]})
    lines = _render(status._table(cfg, ROWS, 80))
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    for expected in ("ps:0", "worker:0", "worker:11", "127.0.0.1:22222", "10.100.200.123:22223",
                     "4194303", "up", "down", "task", "state", "address", "pid", "last error"):
        assert expected in text, expected
    assert "…" not in "".join(line for line in lines[1:])  # no cell is ellipsized
    assert lines[0].startswith("cluster …") and lines[0].rstrip().endswith(": 2/3 tasks up")
    # The last error wraps inside its column instead of being dropped.
    assert "inner" in text and "[4,5]" in text


def test_status_shows_more_columns_when_wider():
    cfg = ClusterConfig(Path("cluster.toml"), {"ps": ["127.0.0.1:22222"]})
    wide = "\n".join(_render(status._table(cfg, ROWS, 200), 200))
    for column in ("steps", "uptime", "memory", "sessions", "gpus"):
        assert column in wide
    assert "2h01m" in wide and "1465 MiB" in wide
    assert max(len(line) for line in _render(status._table(cfg, ROWS, 100), 100)) <= 100


def _progress():
    from dtf.cli.live import Progress

    progress = Progress(["worker:0", "worker:1"])
    for t, step in enumerate((100, 250, 989)):
        progress.update({"kind": "step", "task": "worker:0", "time": float(t), "global_step": step,
                         "last_step": 1000, "local_step": step // 2})
    return progress


def test_live_table_title_on_one_line_and_checkpoint_path_shortened():
    progress = _progress()
    path = "/home/someone/experiments/2026-11-24/a-rather-long-run-name/checkpoints/model.ckpt-989"
    progress.update({"kind": "checkpoint", "task": "worker:0", "path": path, "global_step": 989, "time": 2.0})
    lines = _render(progress.table(80))
    assert max(len(line) for line in lines) <= 80
    assert lines[0].strip() == "global step 989 / 1000   444.5 steps/s"
    caption = [line for line in lines if "last checkpoint" in line]
    assert len(caption) == 1  # not wrapped
    assert "…" in caption[0] and caption[0].strip().endswith("model.ckpt-989 (global step 989, by worker:0)")
    assert caption[0].strip().startswith("last checkpoint: /home/")


def test_plain_progress_never_follows_newer_replica_output(capsys):
    from dtf.cli.run import _PlainView

    view = _PlainView(_progress())
    view.reported()
    view.refresh()
    view.output("worker:0", "final global step 1001")
    view.refresh()
    view.refresh(final=True)
    out = capsys.readouterr().out.splitlines()
    assert out == ["[progress] global step 989 / 1000, 444.5 steps/s", "[worker:0] final global step 1001"]


def test_status_of_a_stopped_cluster_leaves_out_empty_columns():
    cfg = ClusterConfig(Path("cluster.toml"), {"ps": ["127.0.0.1:22222"]})
    rows = [_row("ps", 0, "127.0.0.1:22222", state="down", reason="nothing listens on its port")]
    header = _render(status._table(cfg, rows, 80))[2]
    assert [c.strip() for c in header.strip("┃").split("┃")] == ["task", "state", "address", "pid", "last error"]
