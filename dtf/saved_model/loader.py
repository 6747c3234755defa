"""tf.saved_model.loader: a SavedModel's tagged meta graph imported into a Session's graph,
its variables restored and its main op (or legacy init op) run, as TF's loader.load."""
from __future__ import annotations

import os

from .builder import (LEGACY_INIT_OP_KEY, MAIN_OP_KEY, SAVED_MODEL_FILENAME_PB,
                      SAVED_MODEL_FILENAME_PBTXT, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
from .proto import SavedModel

__all__ = ["load", "maybe_saved_model_directory"]


def _path(export_dir):
    return os.fspath(export_dir.decode() if isinstance(export_dir, bytes) else export_dir)


def maybe_saved_model_directory(export_dir):
    """Whether ``export_dir`` holds a saved_model.pb or saved_model.pbtxt."""
    d = _path(export_dir)
    return any(os.path.isfile(os.path.join(d, n))
               for n in (SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT))


def read_saved_model(export_dir):
    from dtf.framework.prototext import from_text

    d = _path(export_dir)
    pb_path = os.path.join(d, SAVED_MODEL_FILENAME_PB)
    txt_path = os.path.join(d, SAVED_MODEL_FILENAME_PBTXT)
    if os.path.isfile(pb_path):
        with open(pb_path, "rb") as f:
            return SavedModel.FromString(f.read())
    if os.path.isfile(txt_path):
        with open(txt_path, encoding="utf-8") as f:
            return from_text(SavedModel, f.read())
    raise IOError(f"SavedModel file does not exist at: {d}/{{{SAVED_MODEL_FILENAME_PBTXT}|"
                  f"{SAVED_MODEL_FILENAME_PB}}}")


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the meta graph tagged exactly ``tags`` into ``sess.graph``, restores its
    variables, runs its main op; returns the MetaGraphDef (with ``signature_def``)."""
    from dtf.train.meta_graph import import_meta_graph

    if saver_kwargs:
        raise TypeError(f"loader.load: dtf takes no saver arguments, got {sorted(saver_kwargs)}")
    saved = read_saved_model(export_dir)
    wanted = set(tags)
    meta = next((m for m in saved.meta_graphs if set(m.meta_info_def.tags) == wanted), None)
    if meta is None:
        available = [list(m.meta_info_def.tags) for m in saved.meta_graphs]
        raise RuntimeError(f"MetaGraphDef associated with tags {sorted(wanted)} could not be "
                           f"found in SavedModel. To inspect available tag-sets in the "
                           f"SavedModel, please use the SavedModel CLI: `saved_model_cli`\n"
                           f"available_tags: {available}")
    with sess.graph.as_default():
        saver = import_meta_graph(_without_save_path_ops(meta), import_scope=import_scope)
        variables_path = os.path.join(_path(export_dir), VARIABLES_DIRECTORY, VARIABLES_FILENAME)
        if saver is not None and os.path.exists(variables_path + ".index"):
            saver.restore(sess, variables_path)
        graph = sess.graph
        init = graph.get_collection(MAIN_OP_KEY) or graph.get_collection(LEGACY_INIT_OP_KEY)
        if len(init) > 1:
            raise RuntimeError(f"Expected exactly one main op or legacy init op, found {init}")
        if init:
            sess.run(init[0])
    return meta


def _without_save_path_ops(meta):
    """``meta`` without the nodes of its Saver's save path that dtf has no op for.

    TF's sharded Saver builds its temporary file name with StaticRegexFullMatch, Select
    and StringJoin; loading only restores, and the restore path does not use them, so those
    nodes and everything fed by them are left out. A missing op anywhere else is still
    import_graph_def's clear error."""
    from dtf.framework.importer import _OP_TYPE_ALIASES
    from dtf.framework.op_registry import has_op

    nodes = list(meta.graph_def.node)
    missing = {n.name for n in nodes if not has_op(_OP_TYPE_ALIASES.get(n.op, n.op))}
    if not missing or not meta.HasField("saver_def"):
        return meta
    scope = meta.saver_def.save_tensor_name.rsplit("/", 1)[0] + "/"
    dropped, grew = set(missing), True
    while grew:
        grew = False
        for n in nodes:
            if n.name not in dropped and any(i.lstrip("^").split(":")[0] in dropped
                                             for i in n.input):
                dropped.add(n.name)
                grew = True
    if not all(name.startswith(scope) for name in dropped):
        return meta   # import_graph_def names the op dtf lacks
    pruned = type(meta).FromString(meta.SerializeToString())
    del pruned.graph_def.node[:]
    pruned.graph_def.node.extend(n for n in nodes if n.name not in dropped)
    return pruned
