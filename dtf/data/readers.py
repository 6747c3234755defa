"""File datasets: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset and
``Dataset.list_files``. Files are opened by the iterator, on the task it runs on."""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape
from .dataset_ops import Component, Dataset, _int64

_RECORD = Component(_dtypes.string, TensorShape([]))


def _filenames(filenames):
    t = _ops.convert_to_tensor(filenames, dtype=_dtypes.string, name="filenames")
    if t.shape.ndims is not None and t.shape.ndims > 1:
        raise ValueError(f"`filenames` must be a scalar or a vector, got shape {t.shape}")
    return t


def _compression(compression_type):
    from dtf.io.records import compression_name

    return compression_name(compression_type)


def _over_files(filenames, make, num_parallel_reads=None):
    """``make(filenames_tensor)`` for names given as a tensor or list; for a dataset of names
    (or parallel reads) one reader per file, interleaved as TF does."""
    if isinstance(filenames, Dataset):
        if filenames.output_types != _dtypes.string:
            raise TypeError("`filenames` must be a Dataset of tf.string elements.")
        cycle = num_parallel_reads or 1
        return filenames.interleave(make, cycle_length=cycle, block_length=1)
    if num_parallel_reads is not None and num_parallel_reads > 1:
        return Dataset.from_tensor_slices(_filenames(filenames)).interleave(
            make, cycle_length=num_parallel_reads, block_length=1)
    return make(filenames)


class TFRecordDataset(Dataset):
    """The records of TFRecord files (``compression_type`` "", "ZLIB" or "GZIP")."""

    def __new__(cls, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        comp = _compression(compression_type)

        def make(names):
            return Dataset("tfrecord", _RECORD, tensors={"filenames": _filenames(names)},
                           attrs={"compression": comp})
        return _over_files(filenames, make, num_parallel_reads)


class TextLineDataset(Dataset):
    """The lines of text files, without their line endings."""

    def __new__(cls, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        comp = _compression(compression_type)

        def make(names):
            return Dataset("text_line", _RECORD, tensors={"filenames": _filenames(names)},
                           attrs={"compression": comp})
        return _over_files(filenames, make, num_parallel_reads)


class FixedLengthRecordDataset(Dataset):
    """Records of ``record_bytes`` bytes from files with optional header and footer."""

    def __new__(cls, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                buffer_size=None, compression_type=None, num_parallel_reads=None):
        comp = _compression(compression_type)

        def make(names):
            return Dataset("fixed_length", _RECORD, tensors={
                "filenames": _filenames(names), "record_bytes": _int64(record_bytes, "record_bytes"),
                "header_bytes": _int64(header_bytes or 0, "header_bytes"),
                "footer_bytes": _int64(footer_bytes or 0, "footer_bytes")},
                attrs={"compression": comp})
        return _over_files(filenames, make, num_parallel_reads)


def list_files(file_pattern, shuffle=None, seed=None):
    """Dataset of the files matching ``file_pattern``, sorted, then shuffled unless
    ``shuffle=False``; an error at initialization if nothing matches."""
    from dtf.io.parsing_ops import matching_files

    with _ops.name_scope("list_files"):
        names = matching_files(file_pattern)
        ds = Dataset("nonempty_files", Component(_dtypes.string, TensorShape([])),
                     tensors={"names": names, "pattern": _ops.convert_to_tensor(
                         file_pattern, dtype=_dtypes.string)})
        if shuffle is None or shuffle:
            ds = ds.shuffle(1 << 30, seed=seed)
    return ds
