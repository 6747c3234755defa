"""CPU kernels of the reader ops (dtf/ops/reader_ops.py): a reader resource takes file
names from a queue resource and yields records with the file datasets' readers."""
from __future__ import annotations

import threading

import numpy as np

from dtf.data.file_stages import fixed_length_records, open_file, text_lines
from dtf.framework import errors
from dtf.kernels.cpu.data_flow import _Resource, _resource_kernel, holding_gil
from dtf.kernels.registry import WouldBlock, register_kernel
from dtf.ops import reader_ops  # noqa: F401  (the op definitions, wherever kernels load)
from dtf.summary.records import iter_records


def _scalar(data):
    out = np.empty((), dtype=object)
    out[()] = data
    return out


def _tfrecord(attrs, path):
    f = open_file(path, attrs.get("compression_type", ""))
    try:
        offset = 0
        prefix = f"{path}:"
        # iter_records itself, not tfrecord_records' wrapper around it: one generator
        # fewer to resume per record; its DataLossError gets the path here instead.
        try:
            for record in iter_records(f):
                yield prefix + str(offset), record
                offset += len(record) + 16
        except errors.DataLossError as e:
            raise errors.DataLossError(None, None, f"{path}: {e.message}") from None
    finally:
        f.close()


def _text_line(attrs, path):
    f = open_file(path, "")
    try:
        for number, line in enumerate(text_lines(f), 1):
            if number > attrs.get("skip_header_lines", 0):
                yield f"{path}:{number}", line
    finally:
        f.close()


def _whole_file(attrs, path):
    f = open_file(path, "")
    try:
        yield path, f.read()
    finally:
        f.close()


def _fixed_length(attrs, path):
    f = open_file(path, "")
    try:
        records = fixed_length_records(f, attrs["record_bytes"], attrs["header_bytes"],
                                       attrs["footer_bytes"])
        for number, record in enumerate(records):
            yield f"{path}:{number}", record
    finally:
        f.close()


def _identity(attrs, work):
    yield work, work.encode()


# reader op -> records(attrs, work) yielding (key, value)
_RECORDS = {"TFRecordReaderV2": _tfrecord, "TextLineReaderV2": _text_line,
            "WholeFileReaderV2": _whole_file, "FixedLengthRecordReaderV2": _fixed_length,
            "IdentityReaderV2": _identity}


class ReaderResource(_Resource):
    def __init__(self, records, attrs, name):
        self.name = name
        self.records_of = records
        self.attrs = attrs
        self.lock = threading.Lock()  # enqueue threads share a reader; TF serializes reads
        self.reset()

    def reset(self):
        self.current = None
        self.produced = 0
        self.completed = 0

    def read(self, ctx, queue, node, n=1):
        """Up to ``n`` (key, value) pairs of one work unit (exactly one when n == 1)."""
        with holding_gil(self.lock):  # a blocking acquire fell into a convoy: see there
            return self._read(ctx, queue, node, n)

    def read_one(self, ctx, queue, node):
        """The next (key, value): ``read(..., n=1)``'s one pair, without its list (the
        step of a queue runner that reads records one by one)."""
        with holding_gil(self.lock):
            while True:
                if self.current is None:
                    self.current = iter(self.records_of(self.attrs, self._next_work(ctx, queue, node)))
                pair = next(self.current, None)
                if pair is not None:
                    self.produced += 1
                    return pair
                self.current = None
                self.completed += 1

    def _next_work(self, ctx, queue, node):
        (el,) = queue.dequeue(ctx, 1, -1, node)
        work = el[0].item() if isinstance(el[0], np.ndarray) else el[0]
        return work.decode() if isinstance(work, bytes) else str(work)

    def _read(self, ctx, queue, node, n):
        out = []
        while not out:
            if self.current is None:
                self.current = iter(self.records_of(self.attrs, self._next_work(ctx, queue, node)))
            for key, value in self.current:
                out.append((key, value))
                if len(out) == n:
                    break
            else:
                self.current = None
                self.completed += 1
        self.produced += len(out)
        return out


for _op, _records in _RECORDS.items():
    register_kernel(_op, "CPU")(_resource_kernel(
        lambda attrs, name, records=_records: ReaderResource(records, attrs, name)))


def _not_parked(ctx):
    if ctx.may_park is not None:
        raise WouldBlock()  # reading may wait for file names: run on a thread


@register_kernel("ReaderReadV2", "CPU", blocking=True)
def reader_read(node):
    def compute(ctx, reader, queue):
        if ctx.may_park is not None:  # _not_parked, inline: a runner's every record
            raise WouldBlock()
        key, value = reader.read_one(ctx, queue, node)
        return _scalar(key.encode()), _scalar(value)

    return compute


@register_kernel("ReaderReadUpToV2", "CPU", blocking=True)
def reader_read_up_to(node):
    def compute(ctx, reader, queue, n):
        _not_parked(ctx)
        n = int(n)
        if n <= 0:
            raise errors.InvalidArgumentError(node.name, None, f"num_records must be > 0, got {n}")
        pairs = reader.read(ctx, queue, node, n)
        keys = np.empty(len(pairs), dtype=object)
        values = np.empty(len(pairs), dtype=object)
        keys[:] = [k.encode() for k, _ in pairs]
        values[:] = [v for _, v in pairs]
        return keys, values

    return compute


@register_kernel("ReaderNumRecordsProducedV2", "CPU")
def reader_num_records(node):
    return lambda ctx, reader: np.asarray(reader.produced, dtype=np.int64)


@register_kernel("ReaderNumWorkUnitsCompletedV2", "CPU")
def reader_num_work_units(node):
    return lambda ctx, reader: np.asarray(reader.completed, dtype=np.int64)


@register_kernel("ReaderResetV2", "CPU")
def reader_reset(node):
    return lambda ctx, reader: reader.reset()
