"""The hook interface of MonitoredSession: SessionRunHook and the values it sees.

A hook's calls, in order: ``begin()`` before the graph is finalized,
``after_create_session(session, coord)`` each time a session is (re)created,
``before_run(run_context)`` / ``after_run(run_context, run_values)`` around every
``MonitoredSession.run``, and ``end(session)`` when the session is closed normally.
"""
from __future__ import annotations

import collections

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues"]


class SessionRunHook:
    """Hook to extend calls to MonitoredSession.run(); every method is optional."""

    def begin(self):
        """Called once before the session is used; the graph may still be changed."""

    def after_create_session(self, session, coord):  # pylint: disable=unused-argument
        """Called when a new session is created (also after a recovery); the graph is final."""

    def before_run(self, run_context):  # pylint: disable=unused-argument
        """Returns None or a SessionRunArgs to add fetches / feeds to the coming run."""
        return None

    def after_run(self, run_context, run_values):  # pylint: disable=unused-argument
        """Called after each run with the values of the fetches this hook asked for."""

    def end(self, session):  # pylint: disable=unused-argument
        """Called at the end of the session (not when it fails with an error)."""


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches (any nesting), a feed dict and RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run being made (``original_args``, ``session``); lets a hook request a stop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """Asks the MonitoredSession to stop: ``should_stop()`` turns True after this run."""
        self._stop_requested = True


SessionRunValues = collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])
SessionRunValues.__doc__ = "The results of a hook's fetches for one run, with options and metadata."
