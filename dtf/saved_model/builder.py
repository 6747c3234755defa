"""tf.saved_model.builder.SavedModelBuilder and simple_save: TF's SavedModel directory,
``saved_model.pb`` (a SavedModel proto of MetaGraphDefs with their tags and signatures) and
``variables/variables.{index,data-*}`` (the checkpoint format Saver writes)."""
from __future__ import annotations

import os

from .proto import MetaGraphDef, SavedModel

__all__ = ["SavedModelBuilder"]

SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"


def _refuse(**args):
    for name, value in args.items():
        if value:
            raise ValueError(f"SavedModelBuilder: {name} is not supported by dtf")


class SavedModelBuilder:
    """Builds one SavedModel in ``export_dir``: the variables once (with the first meta
    graph), then any number of tagged meta graphs; ``save()`` writes saved_model.pb."""

    def __init__(self, export_dir):
        export_dir = os.fspath(export_dir.decode() if isinstance(export_dir, bytes)
                               else export_dir)
        if os.path.exists(export_dir):
            if os.listdir(export_dir):
                raise AssertionError(f"Export directory already exists, and isn't empty. Please "
                                     f"choose a different export directory, or delete all the "
                                     f"contents of the specified directory: {export_dir}")
        else:
            os.makedirs(export_dir)
        self._export_dir = export_dir
        self._saved_model = SavedModel(saved_model_schema_version=1)
        self._has_saved_variables = False

    def _meta_graph(self, saver, tags, signature_def_map, main_op, legacy_init_op,
                    clear_devices):
        from dtf.framework import ops as _ops
        from dtf.framework import graph_pb as pb
        from dtf.train.meta_graph import export_meta_graph

        if main_op is not None and legacy_init_op is not None:
            raise ValueError("Both main_op and legacy_init_op are not None.")
        graph = _ops.get_default_graph()
        for key, op in ((MAIN_OP_KEY, main_op), (LEGACY_INIT_OP_KEY, legacy_init_op)):
            if op is not None:
                if not isinstance(op, _ops.Operation):
                    raise TypeError(f"{key} needs to be an Operation: {op!r}")
                if op not in graph.get_collection(key):
                    graph.add_to_collection(key, op)
        for key, sig in (signature_def_map or {}).items():
            if not sig.inputs and not sig.outputs:
                raise ValueError(f"SignatureDef {key!r} has neither inputs nor outputs")
        base = export_meta_graph(saver_def=saver.as_saver_def() if saver else None,
                                 clear_devices=clear_devices)
        meta = MetaGraphDef.FromString(base.SerializeToString())
        meta.meta_info_def.meta_graph_version = meta.meta_info_def.meta_graph_version or ""
        for t in tags:
            meta.meta_info_def.tags.append(t)
        for key, sig in (signature_def_map or {}).items():
            meta.signature_def[key] = sig
        assert isinstance(base, pb.MetaGraphDef)
        self._saved_model.meta_graphs.append(meta)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        """Saves ``sess``'s variables and the default graph as a meta graph tagged ``tags``."""
        from dtf.train.saver import Saver

        _refuse(assets_collection=assets_collection, strip_default_attrs=strip_default_attrs)
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been "
                                 "saved. Please invoke `add_meta_graph()` instead.")
        tags = _tags(tags)
        # TF's builder makes a sharded Saver; dtf's sharded save graph passes its shard
        # names to MergeV2Checkpoints as N scalars where TF takes one vector, so TF could not
        # import it. One unsharded SaveV2 writes the same files (variables.index and
        # variables.data-00000-of-00001) and imports everywhere.
        saver = saver or Saver(sharded=False, write_version=2, allow_empty=True)
        var_dir = os.path.join(self._export_dir, VARIABLES_DIRECTORY)
        os.makedirs(var_dir, exist_ok=True)
        saver.save(sess, os.path.join(var_dir, VARIABLES_FILENAME), write_meta_graph=False,
                   write_state=False)
        self._meta_graph(saver, tags, signature_def_map, main_op, legacy_init_op, clear_devices)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None):
        """Adds the default graph as another meta graph (its variables must be the saved ones)."""
        from dtf.train.saver import Saver

        _refuse(assets_collection=assets_collection, strip_default_attrs=strip_default_attrs)
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        saver = saver or Saver(sharded=False, write_version=2, allow_empty=True)
        self._meta_graph(saver, _tags(tags), signature_def_map, main_op, legacy_init_op,
                         clear_devices)

    def save(self, as_text=False):
        """Writes saved_model.pb (or .pbtxt); returns its path."""
        from dtf.framework.prototext import to_text
        from dtf.state.checkpoint_io import atomic_write

        name = SAVED_MODEL_FILENAME_PBTXT if as_text else SAVED_MODEL_FILENAME_PB
        path = os.path.join(self._export_dir, name)
        data = to_text(self._saved_model).encode() if as_text else \
            self._saved_model.SerializeToString()
        atomic_write(path, [data])
        return path.encode()


def _tags(tags):
    if isinstance(tags, str):
        raise TypeError(f"tags must be a list of strings, got the string {tags!r}")
    tags = list(tags or [])
    if not tags:
        raise ValueError("tags must not be empty")
    return tags


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """A serving SavedModel of ``session``'s graph with one predict signature
    (``serving_default``) from the ``inputs`` and ``outputs`` dicts of tensors."""
    from . import signature_constants, tag_constants
    from .signature_def_utils import predict_signature_def

    sig = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
           predict_signature_def(inputs, outputs)}
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(session, tags=[tag_constants.SERVING],
                                   signature_def_map=sig, main_op=legacy_init_op,
                                   clear_devices=True)
    b.save()
