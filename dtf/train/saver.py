"""tf.train.Saver, the "checkpoint" state file and checkpoint readers.

Saving and restoring run as graph ops (SaveV2 / RestoreV2, plus MergeV2Checkpoints when
sharded), so in a cluster each task writes and reads its own variables. The file format
is TF's V2 tensor bundle (dtf/state/checkpoint_io.py, docs/checkpoint_format.md).
"""
from __future__ import annotations

import codecs
import logging
import os
import re
import time

from dtf.framework import dtypes, errors
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.framework.os_errors import as_tf_errors
from dtf.ops import state_ops
from dtf.state import checkpoint_io
from . import training_util

log = logging.getLogger("dtf")

__all__ = ["Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists",
           "get_checkpoint_mtimes", "remove_checkpoint", "update_checkpoint_state",
           "list_variables", "load_variable", "load_checkpoint", "NewCheckpointReader"]


def __getattr__(name):
    if name == "SaverDef":  # the proto classes load on first use: start-up matters
        from dtf.framework.graph_pb import SaverDef

        return SaverDef
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CheckpointNotFoundError(errors.NotFoundError, ValueError):
    """A missing checkpoint: NotFoundError for dtf code, ValueError as TF1's Saver raises."""


# -- building the save / restore ops ---------------------------------------------------
def _op_list_to_dict(var_list):
    """{checkpoint name: Variable or SlicedSaveable}. Names default to the variables' op
    names; the shards of a partitioned variable go under its full variable's name."""
    from dtf.ops.partitioned_variables import saveables_by_name

    return saveables_by_name(var_list)


def _save_items(names_to_vars) -> list:
    """[(checkpoint name, slice spec, variable)], sorted by name. A partitioned variable is
    one item per shard, each under the full name with TF's slice spec ("10 3 0,5:0,3"): the
    bundle then holds the full shape and its slices, as TF writes it, and restoring asks
    each shard's slice of it, whatever the slices were when it was saved."""
    items = []
    for name, v in sorted(names_to_vars.items()):
        shards = getattr(v, "slice_shards", None)
        if shards is None:
            items.append((name, "", v))
        else:
            items.extend((name, shard._save_slice_info.spec, shard) for shard in shards)
    return items


def _group_by_device(items):
    per_device = {}
    for item in items:
        per_device.setdefault(item[2].device, []).append(item)
    return sorted(per_device.items())


def _save_op(prefix, items):
    return state_ops.save_v2(prefix, [n for n, _, _ in items], [s for _, s, _ in items],
                             [v._ref() for _, _, v in items])


def _restore_ops(prefix, items, reshape):
    tensors = state_ops.restore_v2(prefix, [n for n, _, _ in items], [s for _, s, _ in items],
                                   [v.dtype for _, _, v in items])
    ops = []
    for (_, spec, v), t in zip(items, tensors):
        validate = bool(spec) or (not reshape and v.get_shape().is_fully_defined())
        ops.append(state_ops.assign(v, t, validate_shape=validate).op)
    return ops


def _build(names_to_vars, reshape, sharded, name, filename):
    from dtf.ops.array_ops import identity, placeholder_with_default
    from dtf.ops.constant_op import constant
    from dtf.ops.control_flow_ops import group, with_dependencies

    items = _save_items(names_to_vars)
    with _ops.name_scope(name, "save", [v for _, _, v in items]):
        default = constant(filename or "model", name="filename/input")
        filename_tensor = placeholder_with_default(default, shape=(), name="filename")
        filename_tensor = placeholder_with_default(filename_tensor, shape=(), name="Const")
        if not sharded:
            save_tensor = with_dependencies([_save_op(filename_tensor, items)], filename_tensor)
            restore_op = group(*_restore_ops(filename_tensor, items, reshape), name="restore_all")
        else:
            per_device = _group_by_device(items)
            num_shards = constant(len(per_device), name="num_shards")
            saves, prefixes, restores = [], [], []
            for shard, (device, dev_items) in enumerate(per_device):
                with _ops.device(device or None):
                    prefix = state_ops.sharded_filename(filename_tensor, shard, num_shards)
                    prefixes.append(prefix)
                    saves.append(_save_op(prefix, dev_items))
                    restores.extend(_restore_ops(filename_tensor, dev_items, reshape))
            with _ops.control_dependencies(saves), _ops.device(per_device[-1][0] or None):
                merge = state_ops.merge_v2_checkpoints(prefixes, filename_tensor)
                with _ops.control_dependencies([merge]):
                    save_tensor = identity(filename_tensor)
            restore_op = group(*restores, name="restore_all")
    return filename_tensor, save_tensor, restore_op


class Saver:
    """Saves and restores variables to and from checkpoints."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. Either "
                             "set defer_build=False or var_list=None.")
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self.saver_def = saver_def
        self._allow_empty = allow_empty
        self._is_built = saver_def is not None
        self._is_empty = False
        self._write_version = write_version
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list = []
        self._meta_graph_cache = None  # (graph state, MetaGraphDef bytes) of the last .meta
        self._checkpoints_to_be_deleted: list = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build and not self._is_built:
            self.build()

    def build(self):
        if self._is_built:
            return
        self._is_built = True
        var_list = self._var_list
        if var_list is None:
            graph = _ops.get_default_graph()
            var_list = (graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
                        + graph.get_collection(GraphKeys.SAVEABLE_OBJECTS))
        names_to_vars = _op_list_to_dict(var_list)
        if not names_to_vars:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        filename_tensor, save_tensor, restore_op = _build(
            names_to_vars, self._reshape, self._sharded, self._name, self._filename)
        from dtf.framework.graph_pb import SaverDef

        self.saver_def = SaverDef(
            filename_tensor_name=filename_tensor.name, save_tensor_name=save_tensor.name,
            restore_op_name=restore_op.name, max_to_keep=self._max_to_keep,
            sharded=self._sharded, keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
            version=self._write_version)

    def as_saver_def(self):
        return self.saver_def

    # -- bookkeeping of recent checkpoints -------------------------------------------
    @property
    def last_checkpoints(self):
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        self._last_checkpoints = [(p, None) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths):
        mtimes = get_checkpoint_mtimes(checkpoint_paths)
        self.set_last_checkpoints_with_time(list(zip(checkpoint_paths, mtimes)))

    def _record_last_checkpoint(self, path):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self):
        while self._checkpoints_to_be_deleted:
            path, stamp = self._checkpoints_to_be_deleted.pop(0)
            if stamp is not None and stamp > self._next_checkpoint_time:
                # keep_checkpoint_every_n_hours: keep one checkpoint per period.
                self._next_checkpoint_time += self._keep_checkpoint_every_n_hours * 3600
                continue
            remove_checkpoint(path)

    # -- save / restore ----------------------------------------------------------------
    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Saves the variables; returns the checkpoint prefix written (e.g. 'm.ckpt-100')."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        if global_step is not None:
            if not isinstance(global_step, int):
                global_step = training_util.global_step(sess, global_step)
            step = f"{global_step:08d}" if self._pad_step_number else str(global_step)
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': "
                                 f"'{latest_filename}' and '{save_path}'")
        if not hasattr(sess, "run"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        if self._is_empty:
            return None
        parent = os.path.dirname(save_path)
        try:
            path = sess.run(self.saver_def.save_tensor_name,
                            {self.saver_def.filename_tensor_name: checkpoint_file})
        except (errors.FailedPreconditionError, errors.NotFoundError):
            if parent and not os.path.isdir(parent):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.") from None
            raise
        path = path.decode() if isinstance(path, bytes) else str(path)
        if write_meta_graph:
            self._write_meta_graph(sess, f"{checkpoint_file}.{meta_graph_suffix}")
        if write_state:
            self._record_last_checkpoint(path)
            update_checkpoint_state(parent, path, self.last_checkpoints, latest_filename,
                                    save_relative_paths=self._save_relative_paths)
            self._maybe_delete_old_checkpoints()
        return path

    def _write_meta_graph(self, sess, filename):
        graph = getattr(sess, "graph", None) or _ops.get_default_graph()
        # Encoding an 800-op graph takes ~0.4 s in Python, so while the graph's version and
        # its collections' sizes are those of the last save, the last bytes are written again
        # (a collection whose items were swapped one for one keeps its old meta graph).
        key = (id(graph), graph.version,
               tuple(sorted((str(k), len(v)) for k, v in graph._collections.items())))
        if self._meta_graph_cache is None or self._meta_graph_cache[0] != key:
            try:
                data = self.export_meta_graph(graph=graph).SerializeToString()
            except (TypeError, ValueError, NotImplementedError) as e:
                # The checkpoint is whole without it; a graph dtf cannot encode must not stop
                # training, nor fill the log: said once per graph state, not at every save.
                log.warning("No meta graph written to %s (nor for later checkpoints of this "
                            "graph): %s", filename, e)
                data = None
            self._meta_graph_cache = (key, data)
        if self._meta_graph_cache[1] is not None:
            checkpoint_io.atomic_write(filename, [self._meta_graph_cache[1]])

    def to_proto(self, export_scope=None):
        """This Saver's SaverDef (what a meta graph's ``savers`` collection holds)."""
        if export_scope:
            raise NotImplementedError("Saver.to_proto: export_scope is not supported by dtf")
        return self.saver_def

    @staticmethod
    def from_proto(saver_def, import_scope=None):
        """A Saver running the ops ``saver_def`` names (under ``import_scope``)."""
        if import_scope:
            from .meta_graph import prepend_name_scope

            saver_def = type(saver_def).FromString(saver_def.SerializeToString())
            for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
                setattr(saver_def, field, prepend_name_scope(getattr(saver_def, field), import_scope))
        return Saver(saver_def=saver_def)

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False, clear_extraneous_savers=False,
                          strip_default_attrs=False, save_debug_info=False, graph=None):
        """The MetaGraphDef of the graph with this Saver's SaverDef (written to ``filename``)."""
        from .meta_graph import export_meta_graph

        return export_meta_graph(filename, saver_def=self.saver_def, collection_list=collection_list,
                                 as_text=as_text, graph=graph, export_scope=export_scope,
                                 clear_devices=clear_devices,
                                 clear_extraneous_savers=clear_extraneous_savers,
                                 strip_default_attrs=strip_default_attrs,
                                 save_debug_info=save_debug_info)

    def restore(self, sess, save_path):
        """Restores the variables from the checkpoint at ``save_path``."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise _CheckpointNotFoundError(
                None, None, f"The passed save_path is not a valid checkpoint: {save_path}")
        try:
            sess.run(self.saver_def.restore_op_name, {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as e:
            raise _restore_error(e, "a Variable name or other graph key that is missing") from None
        except errors.InvalidArgumentError as e:
            raise _restore_error(e, "a mismatch between the current graph and the graph") from None


def _restore_error(err, why):
    return type(err)(err.node_def, err.op, "Restoring from checkpoint failed. This is most likely "
                     f"due to {why} from the checkpoint. Please ensure that you have not altered "
                     f"the graph expected based on the checkpoint. Original error:\n\n{err.message}")


# -- the "checkpoint" state file (TF's text format) ------------------------------------
class CheckpointState:
    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=None,
                 all_model_checkpoint_timestamps=None, last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps or [])
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        lines = [f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}"]
        lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    __str__ = to_text

    @classmethod
    def from_text(cls, text: str) -> "CheckpointState":
        state = cls()
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            m = re.match(r"^\s*(\w+)\s*:\s*(.*?)\s*$", line)
            if m is None:
                raise ValueError(f"line {n}: expected 'field: value', got {line!r}")
            key, raw = m.groups()
            if key == "model_checkpoint_path":
                state.model_checkpoint_path = _unquote(raw)
            elif key == "all_model_checkpoint_paths":
                state.all_model_checkpoint_paths.append(_unquote(raw))
            elif key == "all_model_checkpoint_timestamps":
                state.all_model_checkpoint_timestamps.append(float(raw))
            elif key == "last_preserved_timestamp":
                state.last_preserved_timestamp = float(raw)
        return state


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _unquote(raw: str) -> str:
    if len(raw) < 2 or raw[0] != raw[-1] or raw[0] not in "\"'":
        raise ValueError(f"expected a quoted string, got {raw!r}")
    return codecs.escape_decode(raw[1:-1].encode())[0].decode()


def _state_file(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or "checkpoint")


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=False):
    """Atomically rewrites the state file naming the newest and all kept checkpoints."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)

    def rel(p):
        # Relative paths are stored relative to save_dir (how get_checkpoint_state reads them).
        if save_relative_paths and os.path.isabs(p):
            return os.path.relpath(p, save_dir)
        if not os.path.isabs(p) and not os.path.isabs(save_dir or "."):
            return os.path.relpath(p, save_dir or ".")
        return p

    state = CheckpointState(rel(model_checkpoint_path), [rel(p) for p in paths],
                            all_model_checkpoint_timestamps, last_preserved_timestamp or 0.0)
    filename = _state_file(save_dir, latest_filename)
    if os.path.abspath(filename) == os.path.abspath(model_checkpoint_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    with as_tf_errors(filename):  # disk full, read-only directory: TF's class, path and OS message
        checkpoint_io.atomic_write(filename, [state.to_text().encode()])


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in ``checkpoint_dir``, or None when there is no state file."""
    filename = _state_file(checkpoint_dir, latest_filename)
    try:
        with open(filename, encoding="utf-8") as f:
            state = CheckpointState.from_text(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # unreadable state file: as TF, treat as no checkpoint
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)

    def absolute(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)

    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [absolute(p) for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint in ``checkpoint_dir`` whose files exist, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        # Training would silently start over from step 0: say which checkpoint is gone.
        log.error("Couldn't match files for checkpoint %s (missing %s)", state.model_checkpoint_path,
                  checkpoint_io.index_path(state.model_checkpoint_path))
    return None


def checkpoint_exists(checkpoint_prefix):
    return checkpoint_io.exists(os.fspath(checkpoint_prefix))


def get_checkpoint_mtimes(checkpoint_prefixes):
    return [os.path.getmtime(checkpoint_io.index_path(p)) for p in checkpoint_prefixes
            if checkpoint_exists(p)]


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2,
                      meta_graph_suffix="meta"):
    """Deletes a checkpoint's files and its meta graph."""
    checkpoint_prefix = os.fspath(checkpoint_prefix)
    checkpoint_io.remove(checkpoint_prefix)
    try:
        os.remove(f"{checkpoint_prefix}.{meta_graph_suffix}")
    except OSError:
        pass


# -- reading checkpoints directly ------------------------------------------------------
class CheckpointReader:
    """Reads tensors of one checkpoint by name (TF's NewCheckpointReader). Reads TF's V2
    checkpoints (a partitioned variable reads whole, under its full name) and dtf's earlier
    format."""

    def __init__(self, prefix):
        self._prefix = os.fspath(prefix)
        self._reader = checkpoint_io.open_reader(self._prefix)

    def has_tensor(self, name):
        return name in self._reader.entries

    def get_tensor(self, name):
        return self._reader.read(name)

    def get_variable_to_shape_map(self):
        return {k: self._reader.shape(k) for k in self._reader.names()}

    def get_variable_to_dtype_map(self):
        return {k: dtypes.as_dtype(self._reader.dtype_name(k)) for k in self._reader.names()}

    def debug_string(self):
        return "".join(f"{k} (DT_{self._reader.dtype_name(k).upper()}) {self._reader.shape(k)}\n"
                       for k in sorted(self._reader.names())).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 - TF's public name
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file):
    if os.path.isdir(ckpt_dir_or_file):
        path = latest_checkpoint(ckpt_dir_or_file)
        if path is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
        return path
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file):
    return CheckpointReader(_checkpoint_filename(ckpt_dir_or_file))


def load_variable(ckpt_dir_or_file, name):
    """The value of ``name`` in the checkpoint, as a numpy array."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """Sorted [(name, shape)] of the tensors in the checkpoint."""
    return sorted(load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map().items())
