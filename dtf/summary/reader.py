"""Reading event files back: ``tf.compat.v1.train.summary_iterator``."""
from __future__ import annotations

from dtf.framework import errors
from dtf.summary import proto
from dtf.summary.records import read_records


def summary_iterator(path):
    """Yields the ``Event`` protos of an event file in order.

    Raises DataLossError on a corrupted or truncated record, like TF's record reader.
    """
    for i, data in enumerate(read_records(path)):
        try:
            yield proto.Event.FromString(data)
        except proto.DecodeError as e:
            raise errors.DataLossError(None, None, f"record {i} of {path} is not an Event: {e}") from None


__all__ = ["summary_iterator"]
