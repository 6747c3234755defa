"""``tf.summary.FileWriter`` and ``FileWriterCache``: events appended to a TFRecord file.

The file is ``<logdir>/events.out.tfevents.<10-digit time>.<hostname><suffix>`` and starts
with an Event whose ``file_version`` is "brain.Event:2", as TF's EventsWriter makes it.
Events go through a bounded queue to a background thread that writes them and flushes at
least every ``flush_secs`` (also while no new events arrive, unlike TF1, whose thread
only flushes when it wakes up for an event).
"""
from __future__ import annotations

import os
import queue
import socket
import threading
import time

from dtf.framework.os_errors import as_tf_errors
from dtf.summary import proto
from dtf.summary.records import encode_record

_FILE_VERSION = "brain.Event:2"
_STOP = object()  # queue sentinel


def _open_event_file(logdir: str, suffix: str):
    """Creates a new event file; never reuses a name (two writers in the same second)."""
    base = os.path.join(logdir, f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}")
    n = 0
    while True:
        path = f"{base}{suffix}" + (f".{n}" if n else "")
        try:
            return path, open(path, "xb")
        except FileExistsError:
            n += 1


class _EventLogger:
    """One open event file and the thread that writes queued events into it."""

    def __init__(self, logdir, max_queue, flush_secs, suffix):
        self.path, self._file = _open_event_file(logdir, suffix)
        self._lock = threading.Lock()
        self._flush_secs = flush_secs
        self._error = None
        self._write(proto.Event(wall_time=time.time(), file_version=_FILE_VERSION))
        self._flush_file()
        self._queue = queue.Queue(max_queue)
        self._thread = threading.Thread(target=self._run, name="EventLogger", daemon=True)
        self._thread.start()

    def _write(self, event):
        record = encode_record(event.SerializeToString())
        with self._lock:
            self._file.write(record)

    def _flush_file(self):
        with self._lock:
            self._file.flush()
            os.fsync(self._file.fileno())

    def _run(self):
        next_flush = time.monotonic() + self._flush_secs
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_flush - time.monotonic()))
            except queue.Empty:
                item = None  # timed out: flush below
            try:
                if item is _STOP:
                    return
                if item is not None and self._error is None:
                    self._write(item)
                if time.monotonic() >= next_flush and self._error is None:
                    self._flush_file()
                    next_flush = time.monotonic() + self._flush_secs
            except OSError as e:  # disk full etc.: reported to the caller's next call
                self._error = e
            finally:
                if item is not None:
                    self._queue.task_done()

    def _raise_pending(self):
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def put(self, event):
        self._raise_pending()
        self._queue.put(event)

    def flush(self):
        self._queue.join()
        self._raise_pending()
        self._flush_file()

    def close(self):
        self._queue.put(_STOP)
        self._thread.join()
        try:
            self._raise_pending()
            self._flush_file()
        finally:
            self._file.close()


def graph_def_proto(graph):
    """The GraphDef proto of a dtf Graph (nodes, inputs, devices and attrs), for TensorBoard:
    an attr with no GraphDef form is left out of the picture rather than failing the writer."""
    from dtf.framework.graph_io import graph_def

    return graph_def(graph, skip_unencodable=True, add_shapes=True)


def _serialized_graph_def(graph, graph_def) -> bytes:
    if graph is not None:
        return graph_def_proto(graph).SerializeToString()
    if hasattr(graph_def, "SerializeToString"):
        return graph_def.SerializeToString()
    if isinstance(graph_def, (bytes, bytearray)):
        return bytes(graph_def)
    raise TypeError(f"graph_def must be a GraphDef or its serialized bytes, got {type(graph_def).__name__}")


class FileWriter:
    """Writes Summary protocol buffers (and graphs, session logs) to event files."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if session is not None:
            raise NotImplementedError("FileWriter(session=...) writes through TF2 summary ops, "
                                      "which dtf does not provide")
        self._logdir = str(logdir)
        self._options = (max_queue, flush_secs, filename_suffix or "")
        self._seen_summary_tags = set()
        self._run_metadata_tags = set()
        with as_tf_errors():  # e.g. a read-only logdir: PermissionDeniedError naming it
            os.makedirs(self._logdir, exist_ok=True)
            self._logger = _EventLogger(self._logdir, *self._options)
        self._closed = False
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self):
        return self._logdir

    @property
    def event_file_path(self):
        """Path of the event file being written (TF2 writers' name for it)."""
        return self._logger.path

    def add_event(self, event):
        """Queues an Event; dropped when the writer is closed, as in TF1."""
        if not self._closed:
            with as_tf_errors(self._logger.path):  # a write that failed earlier (disk full)
                self._logger.put(event)

    def _add_event(self, event, global_step):
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_summary(self, summary, global_step=None):
        """Adds a Summary proto or its serialized bytes (what a summary op evaluates to)."""
        if isinstance(summary, (bytes, bytearray)):
            summary = proto.Summary.FromString(summary)
        self._drop_repeated_metadata(summary)
        self._add_event(proto.Event(summary=summary), global_step)

    def _drop_repeated_metadata(self, summary):
        # TensorBoard needs a tag's plugin metadata only once; TF1 keeps the first.
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Stores a traced step's RunMetadata under ``tag`` (once per tag, as in TF1) for
        TensorBoard's per-step compute-time view."""
        from dtf.summary.run_metadata import serialize_run_metadata
        if tag in self._run_metadata_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._run_metadata_tags.add(tag)
        tagged = proto.TaggedRunMetadata(tag=tag, run_metadata=serialize_run_metadata(run_metadata))
        self._add_event(proto.Event(tagged_run_metadata=tagged), global_step)

    def add_session_log(self, session_log, global_step=None):
        self._add_event(proto.Event(session_log=session_log), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is None and graph_def is None:
            raise ValueError("Exactly one of graph and graph_def must be given")
        serialized = _serialized_graph_def(graph, graph_def)
        self._add_event(proto.Event(graph_def=serialized), global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None):
        """Adds a MetaGraphDef (TensorBoard shows its graph when the event file has none)."""
        if not hasattr(meta_graph_def, "SerializeToString"):
            raise TypeError(f"meta_graph_def must be a MetaGraphDef proto, got {type(meta_graph_def).__name__}")
        self._add_event(proto.Event(meta_graph_def=meta_graph_def.SerializeToString()), global_step)

    def flush(self):
        """Writes every queued event to disk."""
        if not self._closed:
            with as_tf_errors(self._logger.path):
                self._logger.flush()

    def close(self):
        """Flushes and closes the file; ``reopen`` starts a new one."""
        if not self._closed:
            self._closed = True
            with as_tf_errors(self._logger.path):
                self._logger.close()

    def reopen(self):
        """After ``close``: starts a new event file in the same logdir."""
        if self._closed:
            with as_tf_errors():
                self._logger = _EventLogger(self._logdir, *self._options)
            self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One FileWriter per logdir, shared by everything in the process that writes there."""

    _cache: dict = {}
    _lock = threading.RLock()

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache.clear()

    @staticmethod
    def get(logdir):
        from dtf.framework import ops

        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriter(logdir, graph=ops.get_default_graph())
                FileWriterCache._cache[logdir] = writer
            return writer


__all__ = ["FileWriter", "FileWriterCache"]
