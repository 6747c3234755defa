"""tf.io: TF 1.x's I/O namespace: its file API (tf.io.gfile), TFRecord files, Example
parsing and raw decoding. All but gfile load on first use, so that dtf.summary can share
the CRC module without importing the ops."""
from __future__ import annotations

import importlib

from dtf.io import gfile  # noqa: F401

_NAMES = {
    "TFRecordWriter": "dtf.io.records", "tf_record_iterator": "dtf.io.records",
    "TFRecordOptions": "dtf.io.records", "TFRecordCompressionType": "dtf.io.records",
    "FixedLenFeature": "dtf.io.parsing_ops",
    "FixedLenSequenceFeature": "dtf.io.parsing_ops",
    "parse_single_example": "dtf.io.parsing_ops", "parse_example": "dtf.io.parsing_ops",
    "parse_single_sequence_example": "dtf.io.parsing_ops",
    "decode_raw": "dtf.io.parsing_ops", "matching_files": "dtf.io.parsing_ops",
    "decode_csv": "dtf.io.parsing_ops",
    "VarLenFeature": "dtf.io.parsing_ops",
}


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'dtf.io' has no attribute {name!r}")


def __dir__():
    return sorted(list(_NAMES) + ["gfile"])
