"""``tf.python_io``: TFRecord files (TF1's name for what ``tf.io`` also holds)."""
from dtf.io.records import (  # noqa: F401
    TFRecordCompressionType, TFRecordOptions, TFRecordWriter, tf_record_iterator,
)
