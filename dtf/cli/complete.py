"""Shell completion of task and job names from the cluster file (./cluster.toml or -c)."""
from __future__ import annotations


def _config(ctx):
    from dtf.cli import config

    try:
        return config.load(config.config_path((ctx.params or {}).get("config")))
    except config.ConfigError:
        return None


def task_names(ctx, incomplete: str) -> list:
    """'ps:0', 'worker:0', ...: the tasks of the cluster file that start with ``incomplete``."""
    cfg = _config(ctx)
    if cfg is None:
        return []
    return [t.name for t in cfg.tasks() if t.name.startswith(incomplete)]


def jobs_and_task_names(ctx, incomplete: str) -> list:
    """Each job, then its tasks ('worker', 'worker:0', ...), for ``--on JOB|JOB:N``."""
    cfg = _config(ctx)
    if cfg is None:
        return []
    names = []
    for job in sorted(cfg.jobs):
        names += [job] + [t.name for t in cfg.all_tasks() if t.job == job]  # evaluator too
    return [n for n in names if n.startswith(incomplete)]
