"""tf.estimator.RunConfig: where checkpoints go, how often, and this task's place in the
cluster as TF_CONFIG describes it (TF 1.15's rules, defaults and errors)."""
from __future__ import annotations

import copy
import inspect
import json
import logging
import os

from dtf.train.cluster_spec import ClusterSpec

__all__ = ["RunConfig", "TaskType"]

log = logging.getLogger("dtf")

_USE_DEFAULT = object()
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"
_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


def _load_tf_config():
    return json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")


def _get_model_dir(tf_config, model_dir):
    in_tf_config = tf_config.get("model_dir")
    if in_tf_config is not None:
        if model_dir is not None and in_tf_config != model_dir:
            raise ValueError(
                "`model_dir` provided in RunConfig construct, if set, must have the same value as "
                f"the model_dir in TF_CONFIG. model_dir: {model_dir}\nTF_CONFIG[\"model_dir\"]: "
                f"{in_tf_config}.\n")
    return model_dir or in_tf_config


def _validate_task_type_and_task_id(cluster_spec, task_env, chief_task_type):
    if chief_task_type not in cluster_spec.jobs:
        raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{chief_task_type}" '
                         "node.")
    if len(cluster_spec.job_tasks(chief_task_type)) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief_task_type}" node.')
    task_type = task_env.get("type")
    task_id = task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:  # not part of the training cluster
        return task_type, task_id
    if task_type not in cluster_spec.jobs:
        raise ValueError(f"{task_type} is not a valid task_type in the cluster_spec:\n"
                         f"{cluster_spec}\n\nNote that these values may be coming from the "
                         "TF_CONFIG environment variable.")
    if not 0 <= task_id < len(cluster_spec.job_tasks(task_type)):
        raise ValueError(f"{task_id} is not a valid task_id for task_type {task_type} in the "
                         f"cluster_spec:\n{cluster_spec}\n\nNote that these values may be coming "
                         "from the TF_ENVIRONMENT variable.")
    return task_type, task_id


def _get_session_master(cluster_spec, task_type, task_id, tf_config):
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = cluster_spec.jobs
    if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
        return _LOCAL_MASTER
    return _GRPC_SCHEME + cluster_spec.job_tasks(task_type)[task_id]


def _get_eval_session_master(task_type, tf_config):
    if "eval_session_master" in tf_config:
        return tf_config["eval_session_master"]
    if task_type == TaskType.EVALUATOR:
        return tf_config.get("session_master", _LOCAL_MASTER)
    return _LOCAL_MASTER


def _count_tasks(cluster_spec, job):
    return len(cluster_spec.as_dict().get(job, [])) if cluster_spec else 0


def _get_global_id_in_cluster(cluster_spec, task_type, task_id, chief_task_type):
    """The chief is 0, then other jobs alphabetically, ps last (TF's implementation order)."""
    ordered = [chief_task_type] + [t for t in sorted(cluster_spec.jobs)
                                   if t not in (chief_task_type, TaskType.PS)]
    if TaskType.PS in cluster_spec.jobs:
        ordered.append(TaskType.PS)
    next_id = 0
    for t in ordered:
        if t == task_type:
            return next_id + task_id
        next_id += len(cluster_spec.job_tasks(t))
    raise RuntimeError(f"Internal Error: `task_type` ({task_type}) is not in cluster_spec "
                       f"({cluster_spec}).")


_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
                "keep_checkpoint_every_n_hours", "log_step_count_steps", "device_fn",
                "session_creation_timeout_secs", "experimental_max_worker_delay_secs")

# name -> (predicate on a non-None value, TF's message)
_VALIDATIONS = {
    "model_dir": (lambda d: d, "model_dir should be non-empty"),
    "save_summary_steps": (lambda s: s >= 0, "save_summary_steps should be >= 0"),
    "save_checkpoints_steps": (lambda s: s >= 0, "save_checkpoints_steps should be >= 0"),
    "save_checkpoints_secs": (lambda s: s >= 0, "save_checkpoints_secs should be >= 0"),
    "keep_checkpoint_max": (lambda k: k >= 0, "keep_checkpoint_max should be >= 0"),
    "keep_checkpoint_every_n_hours": (lambda h: h > 0,
                                      "keep_checkpoint_every_n_hours should be > 0"),
    "log_step_count_steps": (lambda n: n > 0, "log_step_count_steps should be > 0"),
    "tf_random_seed": (lambda s: isinstance(s, int), "tf_random_seed must be integer."),
    "session_creation_timeout_secs": (lambda t: t > 0,
                                      "session_creation_timeout_secs should be > 0"),
    "experimental_max_worker_delay_secs": (lambda s: isinstance(s, int) and s >= 0,
                                           "experimental_max_worker_delay_secs must be an integer "
                                           "if set."),
    "device_fn": (lambda fn: callable(fn) and set(inspect.signature(fn).parameters) == {"op"},
                  'device_fn must be callable with exactly one argument "op".'),
}


def _validate_session_config(sc):
    from dtf.client.config import ConfigProto

    if sc is not None and not isinstance(sc, ConfigProto):
        raise ValueError("session_config must be instance of ConfigProto")


class RunConfig:
    """How an Estimator runs: model_dir, checkpoint and summary cadence, and the cluster
    role read from the TF_CONFIG environment variable when the config is made."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT, save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None, keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100, train_distribute=None, device_fn=None, protocol=None,
                 eval_distribute=None, experimental_distribute=None,
                 experimental_max_worker_delay_secs=None, session_creation_timeout_secs=7200):
        for name, value in (("train_distribute", train_distribute), ("protocol", protocol),
                            ("eval_distribute", eval_distribute),
                            ("experimental_distribute", experimental_distribute)):
            if value is not None:
                raise NotImplementedError(f"RunConfig: {name} is not supported by dtf")
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(_SAVE_CKPT_ERR)
        tf_config = _load_tf_config()
        if tf_config:
            log.info("TF_CONFIG environment variable: %s", tf_config)
        self._set(model_dir=_get_model_dir(tf_config, model_dir), tf_random_seed=tf_random_seed,
                  save_summary_steps=save_summary_steps,
                  save_checkpoints_steps=save_checkpoints_steps,
                  save_checkpoints_secs=save_checkpoints_secs, session_config=session_config,
                  keep_checkpoint_max=keep_checkpoint_max,
                  keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                  log_step_count_steps=log_step_count_steps, device_fn=device_fn,
                  session_creation_timeout_secs=session_creation_timeout_secs,
                  experimental_max_worker_delay_secs=experimental_max_worker_delay_secs)
        self._init_distributed_setting(tf_config)
        if self._session_config is None and self._cluster_spec:
            self._session_config = self._default_session_config_distributed()

    def _set(self, **kwargs):
        for name, value in kwargs.items():
            if value is not None and name in _VALIDATIONS:
                predicate, message = _VALIDATIONS[name]
                if not predicate(value):
                    raise ValueError(message)
            if name == "session_config":
                _validate_session_config(value)
            setattr(self, "_" + name, value)

    def _init_distributed_setting(self, tf_config):
        self._cluster_spec = ClusterSpec(tf_config.get("cluster", {}))
        task_env = tf_config.get("task", {})
        if self._cluster_spec and TaskType.MASTER in self._cluster_spec.jobs:
            if TaskType.CHIEF in self._cluster_spec.jobs:
                raise ValueError("If `master` node exists in `cluster`, job `chief` is not "
                                 "supported.")
            self._init_training_task(tf_config, task_env, TaskType.MASTER)
            if self._task_type == TaskType.EVALUATOR:
                raise ValueError("If `master` node exists in `cluster`, task_type `evaluator` is "
                                 "not supported.")
        elif self._cluster_spec:
            self._init_training_task(tf_config, task_env, TaskType.CHIEF)
        else:  # local mode
            self._task_type = task_env.get("type", TaskType.WORKER)
            self._task_id = int(task_env.get("index", 0))
            self._global_id_in_cluster = 0
            if self._task_type != TaskType.WORKER:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
            if self._task_id != 0:
                raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
            self._master = tf_config.get("session_master", _LOCAL_MASTER)
            self._evaluation_master = tf_config.get("eval_session_master", _LOCAL_MASTER)
            self._is_chief = True
            self._num_ps_replicas = 0
            self._num_worker_replicas = 1

    def _init_training_task(self, tf_config, task_env, chief_type):
        self._task_type, self._task_id = _validate_task_type_and_task_id(
            self._cluster_spec, task_env, chief_type)
        self._evaluation_master = _get_eval_session_master(self._task_type, tf_config)
        if self._task_type == TaskType.EVALUATOR:  # not part of the training cluster
            self._cluster_spec = ClusterSpec({})
            self._master = _LOCAL_MASTER
            self._num_ps_replicas = 0
            self._num_worker_replicas = 0
            self._global_id_in_cluster = None
        else:
            self._master = _get_session_master(self._cluster_spec, self._task_type,
                                               self._task_id, tf_config)
            self._num_ps_replicas = _count_tasks(self._cluster_spec, TaskType.PS)
            self._num_worker_replicas = (_count_tasks(self._cluster_spec, TaskType.WORKER)
                                         + _count_tasks(self._cluster_spec, chief_type))
            self._global_id_in_cluster = _get_global_id_in_cluster(
                self._cluster_spec, self._task_type, self._task_id, chief_type)
        self._is_chief = self._task_type == chief_type

    def _default_session_config_distributed(self):
        """TF's between-graph default: the chief and workers see only the ps tasks and
        themselves; evaluators and unknown task types get no config."""
        from dtf.client.config import ConfigProto

        filters = {TaskType.MASTER: ["/job:ps", "/job:master"],
                   TaskType.CHIEF: ["/job:ps", "/job:chief"],
                   TaskType.WORKER: ["/job:ps", f"/job:worker/task:{self._task_id}"],
                   TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"],
                   }.get(self._task_type)
        if filters is None:
            return None
        return ConfigProto(allow_soft_placement=True, device_filters=filters)

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        for name, value in self.__dict__.items():  # a ClusterSpec is immutable: share it
            new.__dict__[name] = value if isinstance(value, ClusterSpec) else copy.deepcopy(
                value, memo)
        return new

    def replace(self, **kwargs):
        """A copy with some of the properties changed (only the constructor's own properties)."""
        for name in kwargs:
            if name not in _REPLACEABLE:
                raise ValueError(f"{name} property is not allowed to be replaced.")
        new = copy.deepcopy(self)
        steps = kwargs.get("save_checkpoints_steps", new._save_checkpoints_steps)
        secs = kwargs.get("save_checkpoints_secs", new._save_checkpoints_secs)
        if steps is not None and secs is not None:
            if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
                raise ValueError(_SAVE_CKPT_ERR)
            # TF: setting one of the two clears the other
            kwargs.setdefault("save_checkpoints_secs" if "save_checkpoints_steps" in kwargs
                              else "save_checkpoints_steps", None)
        new._set(**kwargs)
        return new

    def __repr__(self):
        props = {k: getattr(self, k) for k in (
            "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
            "save_checkpoints_secs", "keep_checkpoint_max", "log_step_count_steps", "task_type",
            "task_id", "is_chief", "master", "num_ps_replicas", "num_worker_replicas")}
        return f"RunConfig({props})"


def _property(name):
    return property(lambda self: getattr(self, "_" + name))


for _name in _REPLACEABLE + ("cluster_spec", "task_type", "task_id", "is_chief", "master",
                             "evaluation_master", "num_ps_replicas", "num_worker_replicas",
                             "global_id_in_cluster"):
    setattr(RunConfig, _name, _property(_name))
RunConfig.train_distribute = property(lambda self: None)
RunConfig.eval_distribute = property(lambda self: None)
RunConfig.protocol = property(lambda self: None)
RunConfig.service = property(lambda self: None)
