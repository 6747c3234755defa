"""Pipeline stages that read files (registered into dtf/data/pipeline.py's STAGES)."""
from __future__ import annotations


import numpy as np

from dtf.framework import errors
from dtf.io.records import open_records
from dtf.summary.records import iter_records
from .pipeline import stage


def _names(value):
    return [v.decode() if isinstance(v, bytes) else str(v)
            for v in np.asarray(value, dtype=object).reshape(-1)]


def open_file(path, compression):
    try:
        return open_records(path, compression)
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"{path}: {e}") from None


def _scalar(data):
    out = np.empty((), dtype=object)
    out[()] = data
    return out


class _FileStage:
    def __init__(self, spec, b):
        self.names = _names(b.value(spec, "filenames"))
        self.compression = spec["compression"]

    def __iter__(self):
        for path in self.names:
            f = open_file(path, self.compression)
            try:
                for record in self._records(f, path):
                    yield (_scalar(record),)
            finally:
                f.close()


def tfrecord_records(f, path):
    try:
        yield from iter_records(f)
    except errors.DataLossError as e:
        raise errors.DataLossError(None, None, f"{path}: {e.message}") from None


def _chunks(f, size=1 << 16):
    while True:
        chunk = f.read(size)
        if not chunk:
            return
        yield chunk


def text_lines(f):
    rest = b""
    for chunk in _chunks(f):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line[:-1] if line.endswith(b"\r") else line
    if rest:
        yield rest[:-1] if rest.endswith(b"\r") else rest


def fixed_length_records(f, record, header, footer):
    data = b"".join(_chunks(f, 1 << 20))
    body = data[header:len(data) - footer]
    for start in range(0, len(body) - record + 1, record):
        yield body[start:start + record]


@stage("tfrecord")
class TFRecords(_FileStage):
    def _records(self, f, path):
        return tfrecord_records(f, path)


@stage("text_line")
class TextLines(_FileStage):
    def _records(self, f, path):
        return text_lines(f)


@stage("fixed_length")
class FixedLengthRecords(_FileStage):
    def __init__(self, spec, b):
        super().__init__(spec, b)
        self.record = b.scalar(spec, "record_bytes")
        self.header, self.footer = b.scalar(spec, "header_bytes"), b.scalar(spec, "footer_bytes")
        if self.record <= 0:
            raise errors.InvalidArgumentError(None, None, f"record_bytes must be > 0, got {self.record}")

    def _records(self, f, path):
        return fixed_length_records(f, self.record, self.header, self.footer)


@stage("nonempty_files")
class NonEmptyFiles:
    def __init__(self, spec, b):
        self.names = list(np.asarray(b.value(spec, "names"), dtype=object).reshape(-1))
        if not self.names:
            raise errors.InvalidArgumentError(
                None, None, f"Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. No files "
                f"matched pattern: {', '.join(_names(b.value(spec, 'pattern')))}")

    def __iter__(self):
        for n in self.names:
            yield (_scalar(n),)


