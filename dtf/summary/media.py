"""tf.summary.image, audio, text and tensor_summary (TF1): ImageSummary, AudioSummaryV2 and
TensorSummaryV2 ops whose output is a serialized Summary, tagged like tf.summary.scalar.
Kernels: dtf/kernels/cpu/summary_media.py."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.ops.common import convert
from dtf.summary.ops import _collect, clean_tag

__all__ = ["image", "audio", "text", "tensor_summary"]

_IMAGE_DTYPES = (dtypes.uint8, dtypes.float32, dtypes.float16, dtypes.float64)


def _string_scalar(inputs, attrs):
    return [(dtypes.string, [])]


@register_op("ImageSummary")
def _image_infer(inputs, attrs):
    shape = inputs[1].shape
    if shape.ndims is not None and shape.ndims != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.ndims} for "
                         f"'{attrs.get('_op_name', 'ImageSummary')}' (op: 'ImageSummary')")
    return _string_scalar(inputs, attrs)


register_op("AudioSummaryV2")(_string_scalar)
register_op("TensorSummaryV2")(_string_scalar)
for _op in ("ImageSummary", "AudioSummaryV2", "TensorSummaryV2"):
    NotDifferentiable(_op)


def _summary(op_type, name, family, inputs, attrs_of, collections, tag_arg="tag"):
    """Builds ``op_type`` in TF1's summary scope; the tag is the scope's name."""
    name, family = clean_tag(name), clean_tag(family)
    scope_base = name if family is None else f"{family}/{name}"
    with _ops.name_scope(scope_base, None, inputs) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        tag_t = convert(tag, name=tag_arg, dtype=dtypes.string)
        args, attrs = attrs_of()
        out = _ops.make_tensor(op_type, [tag_t] + args, attrs, name=scope)
    _collect(out, collections, [_ops.GraphKeys.SUMMARIES])
    return out


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """Up to ``max_outputs`` PNG images from a [batch, height, width, 1|3|4] tensor; float
    images are scaled to 0..255 per image as TF does (by 255/max when all values are >= 0,
    else centred on 128), non-finite pixels are drawn red."""
    def build():
        t = convert(tensor, name="tensor")
        if t.dtype not in _IMAGE_DTYPES:
            raise TypeError(f"Value passed to parameter 'tensor' has DataType {t.dtype.name} "
                            "not in list of allowed values: uint8, float32, float16, float64")
        return [t], {"T": t.dtype, "max_images": int(max_outputs),
                     # a uint8 tensor attr in TF's op definition, not a list of ints
                     "bad_color": np.asarray([255, 0, 0, 255], np.uint8)}
    return _summary("ImageSummary", name, family, [tensor], build, collections)


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """Up to ``max_outputs`` 16-bit WAV clips from a float [batch, frames] or [batch,
    frames, channels] tensor in [-1, 1] at ``sample_rate`` Hz."""
    def build():
        t = convert(tensor, name="tensor", dtype=dtypes.float32)
        rate = convert(sample_rate, name="sample_rate", dtype=dtypes.float32)
        return [t, rate], {"max_outputs": int(max_outputs)}
    return _summary("AudioSummaryV2", name, family, [tensor], build, collections)


def _metadata(plugin_name=None, display_name=None, description=None) -> bytes:
    from dtf.summary import proto
    meta = proto.SummaryMetadata()
    if plugin_name is not None:
        meta.plugin_data = proto.PluginData(plugin_name=plugin_name)
    if display_name is not None:
        meta.display_name = display_name
    if description is not None:
        meta.summary_description = description
    return meta.SerializeToString()


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A summary holding ``tensor``'s whole value (a TensorProto)."""
    if summary_metadata is not None:
        serialized = (summary_metadata if isinstance(summary_metadata, bytes)
                      else summary_metadata.SerializeToString())
    else:
        serialized = _metadata(display_name=display_name, description=summary_description)

    def build():
        t = convert(tensor, name="tensor")
        meta = convert(serialized, name="serialized_summary_metadata", dtype=dtypes.string)
        return [t, meta], {"T": t.dtype}
    return _summary("TensorSummaryV2", name, family, [tensor], build, collections)


def text(name, tensor, collections=None):
    """A string tensor for TensorBoard's text dashboard."""
    t = convert(tensor, name="tensor")
    if t.dtype != dtypes.string:
        raise ValueError("Expected tensor %s to have dtype string, got %s" % (t.name, t.dtype))
    return tensor_summary(name, t, summary_metadata=_metadata(plugin_name="text"),
                          collections=collections)
