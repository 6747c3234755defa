"""``tf.io``: TFRecord files, Example parsing and raw decoding (names load on first use,
so that dtf.summary can share the CRC module without importing the ops)."""
from __future__ import annotations

import importlib

_NAMES = {
    "TFRecordWriter": "dtf.io.records", "tf_record_iterator": "dtf.io.records",
    "TFRecordOptions": "dtf.io.records", "TFRecordCompressionType": "dtf.io.records",
    "FixedLenFeature": "dtf.io.parsing_ops", "VarLenFeature": "dtf.io.parsing_ops",
    "FixedLenSequenceFeature": "dtf.io.parsing_ops",
    "parse_single_example": "dtf.io.parsing_ops", "parse_example": "dtf.io.parsing_ops",
    "parse_single_sequence_example": "dtf.io.parsing_ops",
    "decode_raw": "dtf.io.parsing_ops", "matching_files": "dtf.io.parsing_ops",
}


def __getattr__(name):
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'dtf.io' has no attribute {name!r}")


def __dir__():
    return sorted(_NAMES)
