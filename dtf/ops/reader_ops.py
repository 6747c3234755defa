"""TF1's readers (``tf.TFRecordReader``, ``tf.TextLineReader``, ``tf.WholeFileReader``,
``tf.FixedLengthRecordReader``, ``tf.IdentityReader``): resources that take file names
from a queue and return one record per ``read``.

A reader is a resource like a queue: its handle op outputs it, and the read ops take it
as input 0 (and the queue as input 1), so they run where it lives. Kernels are in
dtf/kernels/cpu/readers.py.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape

__all__ = ["ReaderBase", "TFRecordReader", "TextLineReader", "WholeFileReader",
           "FixedLengthRecordReader", "IdentityReader"]

_SCALAR = TensorShape([])
_READERS = ("TFRecordReaderV2", "TextLineReaderV2", "WholeFileReaderV2",
            "FixedLengthRecordReaderV2", "IdentityReaderV2")
for _op in _READERS:
    register_op(_op, stateful=True, ref_output=True)(lambda inputs, attrs: [(_dtypes.string, _SCALAR)])
register_op("ReaderReadV2", stateful=True, ref_inputs=(0, 1))(
    lambda inputs, attrs: [(_dtypes.string, _SCALAR)] * 2)
register_op("ReaderReadUpToV2", stateful=True, ref_inputs=(0, 1))(
    lambda inputs, attrs: [(_dtypes.string, TensorShape([None]))] * 2)
register_op("ReaderNumRecordsProducedV2", stateful=True, ref_inputs=(0,))(
    lambda inputs, attrs: [(_dtypes.int64, _SCALAR)])
register_op("ReaderNumWorkUnitsCompletedV2", stateful=True, ref_inputs=(0,))(
    lambda inputs, attrs: [(_dtypes.int64, _SCALAR)])
register_op("ReaderResetV2", stateful=True, ref_inputs=(0,))(lambda inputs, attrs: [])
for _op in _READERS + ("ReaderReadV2", "ReaderReadUpToV2", "ReaderNumRecordsProducedV2",
                       "ReaderNumWorkUnitsCompletedV2", "ReaderResetV2"):
    NotDifferentiable(_op)


def _queue_ref(queue):
    return queue if isinstance(queue, _ops.Tensor) else queue.queue_ref


class ReaderBase:
    """Reads records from the files named by a queue's elements, one file after another."""

    def __init__(self, op_type, attrs, name):
        self._reader_ref = _ops.make_tensor(op_type, [], {"container": "", "shared_name": "", **attrs},
                                            name=name)

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = False

    def read(self, queue, name=None):
        """(key, value): the next record, taking the next file name from ``queue`` when
        the current file is done; OutOfRangeError once the queue is closed and empty."""
        op = _ops.make_op("ReaderReadV2", [self._reader_ref, _queue_ref(queue)], {},
                          name=name or "ReaderReadV2")
        return tuple(op.outputs)

    def read_up_to(self, queue, num_records, name=None):
        """Up to ``num_records`` (keys, values) from one file."""
        n = _ops.convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
        op = _ops.make_op("ReaderReadUpToV2", [self._reader_ref, _queue_ref(queue), n], {},
                          name=name or "ReaderReadUpToV2")
        return tuple(op.outputs)

    def num_records_produced(self, name=None):
        return _ops.make_tensor("ReaderNumRecordsProducedV2", [self._reader_ref], {},
                                name=name or "ReaderNumRecordsProducedV2")

    def num_work_units_completed(self, name=None):
        return _ops.make_tensor("ReaderNumWorkUnitsCompletedV2", [self._reader_ref], {},
                                name=name or "ReaderNumWorkUnitsCompletedV2")

    def reset(self, name=None):
        """Forgets the current file and the counts."""
        return _ops.make_op("ReaderResetV2", [self._reader_ref], {}, name=name or "ReaderResetV2")


class TFRecordReader(ReaderBase):
    """Records of TFRecord files; key ``file:offset``."""

    def __init__(self, name=None, options=None):
        from dtf.io.records import TFRecordOptions

        super().__init__("TFRecordReaderV2", {
            "compression_type": TFRecordOptions.get_compression_type_string(options)},
            name or "TFRecordReaderV2")


class TextLineReader(ReaderBase):
    """Lines of text files (without the newline); key ``file:line``."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__("TextLineReaderV2", {"skip_header_lines": int(skip_header_lines or 0)},
                         name or "TextLineReaderV2")


class WholeFileReader(ReaderBase):
    """Each file's whole contents as one record; key the file name."""

    def __init__(self, name=None):
        super().__init__("WholeFileReaderV2", {}, name or "WholeFileReaderV2")


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes between a header and a footer."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        if hop_bytes or encoding:
            raise NotImplementedError("FixedLengthRecordReader(hop_bytes=..., encoding=...) is "
                                      "not supported by dtf")
        super().__init__("FixedLengthRecordReaderV2", {
            "record_bytes": int(record_bytes), "header_bytes": int(header_bytes or 0),
            "footer_bytes": int(footer_bytes or 0)}, name or "FixedLengthRecordReaderV2")


class IdentityReader(ReaderBase):
    """Each queue element as one record (key and value both the element)."""

    def __init__(self, name=None):
        super().__init__("IdentityReaderV2", {}, name or "IdentityReaderV2")
