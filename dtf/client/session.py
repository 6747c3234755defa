"""tf.Session: fetch/feed handling on the client; execution goes to a backend.

The backend for target "" runs the graph in this process; a "grpc://host:port" or
"dtf://host:port" target connects to that task's master (see dtf.client.remote).
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework import errors
from dtf.framework import ops as _ops
from dtf.state.resources import as_array
from .config import ConfigProto, RunMetadata, RunOptions  # noqa: F401 (re-exported)


class _DefaultSessionStack(threading.local):
    def __init__(self):
        self.stack = []

    def clear(self):
        self.stack = []


_default_session_stack = _DefaultSessionStack()


def get_default_session():
    stack = _default_session_stack.stack
    return stack[-1] if stack else None


def _run_on_default(fetch, feed_dict, session):
    if session is None:
        session = get_default_session()
        if session is None:
            what = ("Cannot execute operation using `run()`" if isinstance(fetch, _ops.Operation)
                    else "Cannot evaluate tensor using `eval()`")
            raise ValueError(f"{what}: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to "
                             f"`{'run' if isinstance(fetch, _ops.Operation) else 'eval'}(session=sess)`")
    if session.graph is not fetch.graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph "
                         "is different from the session's graph.")
    return session.run(fetch, feed_dict)


# -- fetches -----------------------------------------------------------------------
class _FetchPlan:
    """Flattens any nesting of fetches into unique graph elements and rebuilds it."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.elements: list = []
        self._index: dict = {}
        # The fetched objects themselves: a cached plan is keyed by their ids (_fetch_key),
        # which must not be reused by other objects while the plan is cached.
        self._leaves: list = []
        self.builder = self._map(fetches)
        # What the backend is asked for, worked out once: a cached plan serves every step.
        self.is_tensor = tuple(isinstance(el, _ops.Tensor) for el in self.elements)
        self.fetch_names = tuple(el.name for el, t in zip(self.elements, self.is_tensor) if t)
        self.target_names = tuple(el.name for el, t in zip(self.elements, self.is_tensor) if not t)

    def _element(self, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(None)}")
        try:
            el = self.graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a "
                            f"string or Tensor. ({e})") from None
        except ValueError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. ({e})") from None
        except KeyError as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted as a Tensor. "
                             f"({e.args[0]})") from None
        self._leaves.append(fetch)
        key = id(el)
        if key not in self._index:
            self._index[key] = len(self.elements)
            self.elements.append(el)
        return self._index[key]

    def _map(self, fetch):
        if isinstance(fetch, (list, tuple)) and not isinstance(fetch, str):
            subs = [self._map(f) for f in fetch]
            if hasattr(fetch, "_fields"):  # namedtuple
                cls = type(fetch)
                return lambda vals: cls(*[s(vals) for s in subs])
            cls = type(fetch)
            if cls is list:
                return lambda vals: [s(vals) for s in subs]
            if cls is tuple:
                return lambda vals: tuple(s(vals) for s in subs)
            return lambda vals: cls(s(vals) for s in subs)
        if isinstance(fetch, collections.abc.Mapping):
            items = [(k, self._map(v)) for k, v in fetch.items()]
            cls = type(fetch)
            if cls is dict:
                return lambda vals: {k: s(vals) for k, s in items}
            if isinstance(fetch, collections.defaultdict):
                factory = fetch.default_factory
                return lambda vals: collections.defaultdict(factory, {k: s(vals) for k, s in items})
            return lambda vals: cls((k, s(vals)) for k, s in items)
        composite = getattr(fetch, "_composite_parts", None)
        if composite is not None:  # IndexedSlices, SparseTensor: fetched part by part
            parts, build = composite()
            self._leaves.append(fetch)
            subs = [self._map(p) for p in parts]
            return lambda vals: build(*[s(vals) for s in subs])
        idx = self._element(fetch)
        return lambda vals: vals[idx]


def _to_output(v):
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    return v


# -- the session -------------------------------------------------------------------
class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        if graph is None:
            graph = _ops.get_default_graph()
        if not isinstance(graph, _ops.Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph)}")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got {type(config)}")
        self._graph = graph
        self._config = config or ConfigProto()
        self._target = target.decode() if isinstance(target, bytes) else (target or "")
        self._closed = False
        self._fetch_plans: dict = {}
        # feed_dict key -> (the Tensor it names, that tensor's numpy dtype; None for strings)
        self._feed_tensors: dict = {}
        self._backend = _make_backend(self._target, graph, self._config)
        self._default_ctx = None

    graph = property(lambda self: self._graph)
    sess_str = property(lambda self: self._target)

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    def list_devices(self):
        return self._backend.list_devices()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the ops and evaluates the tensors in ``fetches`` (any nesting)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self._graph._nodes_in_order:
            raise RuntimeError("The Session graph is empty. Add operations to the graph before "
                               "calling run().")
        fplan = self._fetch_plan(fetches)
        feed_names, feed_values = self._feeds(feed_dict)
        values = self._backend.run(fplan.fetch_names, feed_names, fplan.target_names,
                                   feed_values, options, run_metadata)
        it = iter(values)
        results = [_to_output(next(it)) if is_tensor else None for is_tensor in fplan.is_tensor]
        return fplan.builder(results)

    def _fetch_plan(self, fetches):
        key = None
        try:
            key = _fetch_key(fetches)
            plan = self._fetch_plans.get(key)
            if plan is not None:
                return plan
        except TypeError:
            key = None
        plan = _FetchPlan(self._graph, fetches)
        if key is not None and len(self._fetch_plans) < 4096:
            self._fetch_plans[key] = plan
        return plan

    def _feed_tensor(self, key):
        """(The Tensor a feed_dict key names, its numpy dtype or None for a string tensor),
        cached per key: a training loop feeds the same placeholders every step."""
        try:
            return self._feed_tensors[key]
        except (KeyError, TypeError):  # TypeError: an unhashable key, reported below
            pass
        if isinstance(key, (list, tuple)):
            raise TypeError("Nested feed keys are not supported; feed each tensor separately.")
        try:
            t = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except Exception as e:  # noqa: BLE001
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        entry = (t, None if t.dtype.name == "string" else np.dtype(t.dtype.as_numpy_dtype))
        if len(self._feed_tensors) < 4096:
            self._feed_tensors[key] = entry
        return entry

    def _feeds(self, feed_dict):
        if not feed_dict:
            return (), []
        items = []
        known_keys = self._feed_tensors
        for key, value in feed_dict.items():
            # A training loop feeds arrays already of their placeholders' dtypes, under the
            # same keys every step: those pass at a dict lookup and a shape check (~0.75 us
            # less per feed than the conversion and checks of _feed_items, by timeit).
            known = known_keys.get(key)
            # ``npd is not None`` first: numpy reads ``dtype == None`` as float64.
            if known is not None and (npd := known[1]) is not None \
                    and type(value) is np.ndarray and value.dtype == npd:
                t = known[0]
                dims, shape = t.shape.as_tuple_or_none(), value.shape  # set_shape may narrow it
                if dims is None or dims == shape or _dims_accept(dims, shape):
                    items.append((t.name, value))
                    continue
            items.extend(self._feed_items(key, value))
        items.sort(key=lambda kv: kv[0])
        return tuple(k for k, _ in items), [v for _, v in items]

    def _feed_items(self, key, value):
        """(tensor name, array) of one feed_dict entry (several for a composite key),
        converted to its tensor's dtype and checked against its shape."""
        items = []
        for key, value in _composite_feed_parts(key, value):
            t, _ = self._feed_tensor(key)
            if isinstance(value, (_ops.Tensor, _ops.Operation)):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                                "values include Python scalars, strings, lists, numpy ndarrays, or "
                                "TensorHandles. For reference, the tensor object was "
                                f"{value} which was passed to the feed with key {t}.")
            try:
                arr = as_array(value, t.dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(f"Cannot feed value {value!r} for Tensor {t.name!r} of dtype "
                                 f"{t.dtype.name}: {e}") from None
            dims = t.shape.as_tuple_or_none()
            if dims is not None and dims != arr.shape and not _dims_accept(dims, arr.shape):
                raise ValueError(f"Cannot feed value of shape {arr.shape!r} for Tensor "
                                 f"{t.name!r}, which has shape {str(t.shape)!r}")
            items.append((t.name, arr))
        return items

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function that runs the step of ``fetches``, fed from its arguments in the
        order of ``feed_list``. Without a feed list the step's plan is worked out once, on
        the first call, and each call only runs it: a queue runner's thread calls one for
        every record it enqueues (TF's QueueRunner does too)."""
        if feed_list is not None:
            if not isinstance(feed_list, (list, tuple)):
                raise TypeError("Argument `feed_list` must be a list or tuple. Received: "
                                f"feed_list={feed_list}")
            feed_list = list(feed_list)

            def generic_run(*feed_args, **kwargs):
                return self.run(fetches, dict(zip(feed_list, feed_args)), **kwargs)

            return generic_run
        fplan = _FetchPlan(self._graph, fetches)  # bad fetches fail here, as in TF
        if accept_options:
            def run_with_options(options=None, run_metadata=None):
                _check_open_for_callable(self)
                return self.run(fetches, None, options, run_metadata)

            return run_with_options
        return _PreparedCall(self, fetches, fplan)

    def close(self):
        if not self._closed:
            # Queue runners cancel their queues first, so no thread stays blocked in a step.
            for fn in getattr(self, "_before_close", ()):
                fn()
            self._closed = True
            self._backend.close()

    def as_default(self):
        return _SessionAsDefault(self)

    def __enter__(self):
        ctx = _SessionAsDefault(self)
        self._default_ctx_stack = getattr(self, "_default_ctx_stack", [])
        self._default_ctx_stack.append(ctx)
        ctx.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        ctx = self._default_ctx_stack.pop()
        ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _dims_accept(dims, shape) -> bool:
    """TensorShape.is_compatible_with for a known rank and a concrete shape, without
    building shapes: a training loop checks its feeds every step."""
    return len(dims) == len(shape) and all(d is None or d == n for d, n in zip(dims, shape))


def _composite_feed_parts(key, value):
    """(key, value) of a feed, or with a composite key (a SparseTensor fed a
    SparseTensorValue or a tuple) its part tensors and the matching parts of the value."""
    composite = getattr(key, "_composite_parts", None)
    if composite is None:
        yield key, value
        return
    parts, _ = composite()
    values = tuple(value)
    if len(values) != len(parts):
        raise ValueError(f"Cannot feed {value!r} for {key!r}: expected {len(parts)} parts, "
                         f"got {len(values)}")
    yield from zip(parts, values)


def _fetch_key(fetches):
    """A hashable key for a fetch structure (TypeError if it has unhashable leaves)."""
    if isinstance(fetches, (list, tuple)) and not isinstance(fetches, str):
        return (type(fetches), tuple(_fetch_key(f) for f in fetches))
    if isinstance(fetches, dict):
        return (type(fetches), tuple((k, _fetch_key(v)) for k, v in fetches.items()))
    if isinstance(fetches, (_ops.Tensor, _ops.Operation)) or hasattr(fetches, "_as_graph_element"):
        return id(fetches)  # a Variable too: training loops fetch global_step every step
    if isinstance(fetches, str):
        return fetches
    if hasattr(fetches, "_composite_parts"):
        return id(fetches)
    raise TypeError("uncacheable fetch")


def _check_open_for_callable(sess):
    # TF's callables run on the session's C handle, which reports the closed session as
    # a CancelledError (Session.run raises RuntimeError).
    if sess._closed:
        raise errors.CancelledError(None, None, "Session has been closed.")


class _PreparedCall:
    """``Session.make_callable(fetches)`` without feeds: the backend's runner of the
    step (``backend.prepare``, where it has one) is looked up once; every call then skips
    the fetch, feed and plan lookups of ``Session.run``."""

    __slots__ = ("_sess", "_fetches", "_fplan", "_step")

    def __init__(self, sess, fetches, fplan):
        self._sess = sess
        self._fetches = fetches
        self._fplan = fplan
        self._step = None

    def __call__(self):
        sess = self._sess
        _check_open_for_callable(sess)
        step = self._step
        if step is None:
            prepare = getattr(sess._backend, "prepare", None)
            step = prepare(self._fplan.fetch_names, self._fplan.target_names) if prepare else None
            if step is None:  # a backend or a step without a prepared form
                return sess.run(self._fetches)
            self._step = step
        values = step()
        it = iter(values)
        return self._fplan.builder([_to_output(next(it)) if is_tensor else None
                                    for is_tensor in self._fplan.is_tensor])


class _SessionAsDefault:
    def __init__(self, sess):
        self._sess = sess
        self._graph_ctx = None

    def __enter__(self):
        _default_session_stack.stack.append(self._sess)
        self._graph_ctx = self._sess.graph.as_default()
        self._graph_ctx.__enter__()
        return self._sess

    def __exit__(self, *exc):
        self._graph_ctx.__exit__(*exc)
        stack = _default_session_stack.stack
        if stack and stack[-1] is self._sess:
            stack.pop()
        return False


class Session(BaseSession):
    """A TF1 session. ``target`` "" runs in-process; "grpc://host:port" uses a server."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)

    @staticmethod
    def reset(target, containers=None, config=None):
        """Clears the named resource containers (all when None) on every task of target's
        cluster."""
        from dtf.client import remote

        remote.reset(target, containers, config)


class InteractiveSession(BaseSession):
    """A session that installs itself as the default on construction."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._ctx = _SessionAsDefault(self)
        self._ctx.__enter__()

    def close(self):
        if not self._closed and self._ctx is not None:
            try:
                self._ctx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass
        super().close()


def _make_backend(target, graph, config):
    if not target:
        from dtf.client.local import LocalBackend

        return LocalBackend(graph, config)
    from dtf.client import remote

    return remote.RemoteBackend(target, graph, config)
