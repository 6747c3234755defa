"""``dtf server``: one task in the foreground (what ``dtf up`` launches in the background).

Takes the task from cluster.toml (``--job J --task N``) or, for scripts written against the
classic standalone server, from ``--cluster_spec='worker|w0:2222;w1:2222,ps|ps0:2222'
--job_name=worker --task_index=0``.
"""
from __future__ import annotations

from typing import Optional

import typer

from dtf.cli.console import ConfigOption, fail, load_config


def server(job: Optional[str] = typer.Option(None, "--job", help="Job of the task to serve."),
           task: Optional[int] = typer.Option(None, "--task", min=0, help="Index of the task in its job."),
           config: ConfigOption = None,
           cluster_spec: Optional[str] = typer.Option(
               None, "--cluster_spec", "--cluster-spec",
               help="Classic flag: 'worker|w0:2222;w1:2222,ps|ps0:2222' (instead of -c)."),
           job_name: Optional[str] = typer.Option(None, "--job_name", "--job-name", help="Classic flag: the job."),
           task_index: Optional[int] = typer.Option(None, "--task_index", "--task-index", min=0,
                                                    help="Classic flag: the task index [default: 0].")):
    """Serve one task in the foreground until SIGTERM or Ctrl-C."""
    if cluster_spec is not None:
        spec = _classic_spec(cluster_spec)
        job = job_name or job
        index = task_index if task_index is not None else (task or 0)
    else:
        if job is None and job_name is None:
            fail("name the task to serve: --job JOB --task N (with -c cluster.toml), or the "
                 "classic --cluster_spec=... --job_name=... --task_index=...", 2)
        from dtf.cli import keys

        cfg = load_config(config)
        keys.prepare_launch(cfg)  # the task serves with the cluster's keys, as `dtf up` would
        job = job or job_name
        index = task if task is not None else (task_index or 0)
        spec = cfg.cluster_dict()
        if job not in spec or index >= len(spec[job]):
            fail(f"no task {job}:{index} in {cfg.path} (jobs: "
                 + ", ".join(f"{j} with {len(a)} task(s)" for j, a in sorted(spec.items())) + ")", 2)
    if job is None:
        fail("--cluster_spec needs --job_name (and --task_index, default 0)", 2)
    raise typer.Exit(_serve(spec, job, index))


def _classic_spec(flags: str):
    from dtf.train.cluster_spec import ClusterSpec

    try:
        return ClusterSpec.from_flags_string(flags)
    except (ValueError, TypeError) as e:
        fail(f"bad --cluster_spec: {e}", 2)


def _serve(spec, job: str, index: int) -> int:
    from dtf.runtime.standalone import serve

    try:
        return serve(spec, job, index)
    except (ValueError, TypeError) as e:
        fail(f"cannot serve /job:{job}/task:{index}: {e}", 2)
    except Exception as e:  # noqa: BLE001 - e.g. the port is taken: one paragraph, no traceback
        fail(f"cannot serve /job:{job}/task:{index}: {getattr(e, 'message', e)}", 1)
