"""TFRecord files: ``tf.io.TFRecordWriter`` / ``tf.python_io.TFRecordWriter``,
``tf_record_iterator`` and their compression options, byte for byte TF's format (the
framing lives in dtf/summary/records.py, which event files share)."""
from __future__ import annotations

import gzip
import zlib

from dtf.framework import errors
from dtf.summary.records import encode_record, iter_records


class TFRecordCompressionType:
    NONE, ZLIB, GZIP = 0, 1, 2


_NAMES = {"": TFRecordCompressionType.NONE, "ZLIB": TFRecordCompressionType.ZLIB,
          "GZIP": TFRecordCompressionType.GZIP}


class TFRecordOptions:
    """Options of a TFRecord file: its compression (``""``, ``"ZLIB"`` or ``"GZIP"``)."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, compression_level=None, **unsupported):
        if unsupported:
            raise NotImplementedError(f"TFRecordOptions({', '.join(sorted(unsupported))}=...) "
                                      "is not supported by dtf")
        self.compression_type = compression_name(compression_type)
        self.compression_level = -1 if compression_level is None else int(compression_level)

    @classmethod
    def get_compression_type_string(cls, options):
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return compression_name(options)


def compression_name(compression_type) -> str:
    """``""``, ``"ZLIB"`` or ``"GZIP"`` from a name, a TFRecordCompressionType or None."""
    if compression_type is None:
        return ""
    if isinstance(compression_type, int):
        for name, value in _NAMES.items():
            if value == compression_type:
                return name
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if isinstance(compression_type, str) and compression_type.upper() in _NAMES:
        return compression_type.upper()
    raise ValueError(f"compression_type must be '', 'ZLIB' or 'GZIP', got {compression_type!r}")


class _ZlibWriter:
    def __init__(self, f, level):
        self._f, self._z = f, zlib.compressobj(level)

    def write(self, data):
        self._f.write(self._z.compress(data))

    def flush(self):
        self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self):
        self._f.write(self._z.flush())
        self._f.close()


class _ZlibReader:
    """A zlib stream read as a file (``read(n)``), inflated in chunks."""

    def __init__(self, f):
        self._f, self._z, self._buf = f, zlib.decompressobj(), b""

    def read(self, n):
        while len(self._buf) < n:
            chunk = self._f.read(1 << 16)
            if not chunk:
                self._buf += self._z.flush()
                break
            self._buf += self._z.decompress(chunk)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def close(self):
        self._f.close()


def open_records(path, compression="", mode="rb", level=-1):
    """A binary file object over ``path``, (de)compressing as ``compression`` says."""
    if compression == "GZIP":
        return gzip.open(path, mode, compresslevel=9 if level < 0 else level) if "w" in mode \
            else gzip.open(path, mode)
    f = open(path, mode)
    if compression == "ZLIB":
        return _ZlibWriter(f, level) if "w" in mode else _ZlibReader(f)
    return f


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file; a context manager."""

    def __init__(self, path, options=None):
        comp = TFRecordOptions.get_compression_type_string(options)
        level = options.compression_level if isinstance(options, TFRecordOptions) else -1
        try:
            self._f = open_records(path, comp, "wb", level)
        except OSError as e:
            raise errors.NotFoundError(None, None, f"{path}: {e.strerror}") from None

    def write(self, record):
        """Appends one record."""
        if isinstance(record, str):
            record = record.encode()
        self._f.write(encode_record(bytes(record)))

    def flush(self):
        self._f.flush()

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def tf_record_iterator(path, options=None):
    """Yields the records of a TFRecord file; DataLossError on a corrupted one."""
    comp = TFRecordOptions.get_compression_type_string(options)
    try:
        f = open_records(path, comp)
    except OSError as e:
        raise errors.NotFoundError(None, None, f"{path}: {e.strerror}") from None
    try:
        yield from iter_records(f)
    finally:
        f.close()
