"""``Dataset.cache(filename)``: the elements of a first complete pass written to a file,
read back by later passes and later iterators (other sessions, later runs).

The file is TFRecord-framed; each record is one element: a JSON header (per component
its dtype and shape, and for strings the byte lengths) and the components' raw bytes.
Nothing is unpickled. A pass that stops early leaves no cache: the file is written under
a temporary name and renamed into place only once the input is exhausted. (TF's cache
files are a tensor bundle; dtf's are its own.)
"""
from __future__ import annotations

import json
import os

import numpy as np

from dtf.framework import errors
from dtf.summary.records import encode_record, iter_records

SUFFIX = ".dtfcache"


def encode_element(element) -> bytes:
    header, payloads = [], []
    for v in element:
        v = np.asarray(v)
        if v.dtype == object:
            items = [x if isinstance(x, bytes) else str(x).encode() for x in v.reshape(-1)]
            header.append({"dtype": "string", "shape": list(v.shape), "lengths": [len(x) for x in items]})
            payloads.extend(items)
        else:
            header.append({"dtype": v.dtype.str, "shape": list(v.shape)})
            payloads.append(np.ascontiguousarray(v).tobytes())
    head = json.dumps(header).encode()
    return len(head).to_bytes(4, "little") + head + b"".join(payloads)


def decode_element(record: bytes, path: str) -> tuple:
    try:
        n = int.from_bytes(record[:4], "little")
        header = json.loads(record[4:4 + n])
        pos, out = 4 + n, []
        for comp in header:
            shape = tuple(comp["shape"])
            if comp["dtype"] == "string":
                items = []
                for length in comp["lengths"]:
                    items.append(record[pos:pos + length])
                    pos += length
                arr = np.empty(len(items), dtype=object)
                arr[:] = items
                out.append(arr.reshape(shape))
            else:
                dtype = np.dtype(comp["dtype"])
                size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                out.append(np.frombuffer(record, dtype, size // dtype.itemsize, pos).reshape(shape))
                pos += size
        return tuple(out)
    except (ValueError, KeyError, TypeError) as e:
        raise errors.DataLossError(None, None, f"cache file {path} is corrupted: {e}") from None


class FileCache:
    """Replays ``path`` when it is complete; otherwise passes the input through, writing it."""

    def __init__(self, source, filename):
        self.source = source
        self.path = filename + SUFFIX

    def __iter__(self):
        if os.path.exists(self.path):
            with open(self.path, "rb") as f:
                for record in iter_records(f):
                    yield decode_element(record, self.path)
            return
        tmp = f"{self.path}.tmp{os.getpid()}.{id(self)}"
        try:
            with open(tmp, "wb") as f:
                for el in self.source:
                    f.write(encode_record(encode_element(el)))
                    yield el
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
