"""OS errors (``OSError`` and its subclasses) as the tf.errors class TF gives them.

TF turns an errno into a status code (``tensorflow/core/platform/errors``: ENOSPC is
RESOURCE_EXHAUSTED, EACCES and EROFS PERMISSION_DENIED, ENOENT NOT_FOUND, ...) and its
message names the file and carries the OS's own words; file I/O here does the same, so a
full disk or a read-only directory is never reported as a bad argument or a raw OSError.
"""
from __future__ import annotations

import contextlib
import errno as _errno

from dtf.framework import errors


def _codes(code, *names):
    return {getattr(_errno, n): code for n in names if hasattr(_errno, n)}


_BY_ERRNO = {
    **_codes(errors.INVALID_ARGUMENT, "EINVAL", "ENAMETOOLONG", "E2BIG", "EDESTADDRREQ", "EDOM",
             "EFAULT", "EILSEQ", "ENOPROTOOPT", "ENOSTR", "ENOTSOCK", "ENOTTY", "EPROTOTYPE", "ESPIPE"),
    **_codes(errors.DEADLINE_EXCEEDED, "ETIMEDOUT", "ETIME"),
    **_codes(errors.NOT_FOUND, "ENODEV", "ENOENT", "ENXIO", "ESRCH"),
    **_codes(errors.ALREADY_EXISTS, "EEXIST", "EADDRNOTAVAIL", "EALREADY"),
    **_codes(errors.PERMISSION_DENIED, "EPERM", "EACCES", "EROFS"),
    **_codes(errors.FAILED_PRECONDITION, "ENOTEMPTY", "EISDIR", "ENOTDIR", "EADDRINUSE", "EBADF",
             "EBUSY", "ECHILD", "EISCONN", "ENOTBLK", "ENOTCONN", "EPIPE", "ESHUTDOWN", "ETXTBSY"),
    **_codes(errors.RESOURCE_EXHAUSTED, "ENOSPC", "EMFILE", "EMLINK", "ENFILE", "ENOBUFS",
             "ENODATA", "ENOMEM", "ENOSR", "EUSERS", "EDQUOT"),
    **_codes(errors.OUT_OF_RANGE, "EFBIG", "EOVERFLOW", "ERANGE"),
    **_codes(errors.UNIMPLEMENTED, "ENOSYS", "ENOTSUP", "EAFNOSUPPORT", "EPFNOSUPPORT",
             "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EXDEV"),
    **_codes(errors.UNAVAILABLE, "EAGAIN", "ECONNREFUSED", "ECONNABORTED", "ECONNRESET", "EINTR",
             "EHOSTDOWN", "EHOSTUNREACH", "ENETDOWN", "ENETRESET", "ENETUNREACH", "ENOLCK",
             "ENOLINK", "ENONET"),
    **_codes(errors.ABORTED, "EDEADLK", "ESTALE"),
    **_codes(errors.CANCELLED, "ECANCELED"),
}


def from_os_error(e: OSError, path=None, node_name=None) -> errors.OpError:
    """The tf.errors class for ``e``'s errno (UnknownError for EIO and the rest), with a
    message naming the file (``path``, else the one the OS error names) and the OS's
    message, as TF writes it: ``PATH; No space left on device``."""
    code = _BY_ERRNO.get(e.errno, errors.UNKNOWN)
    where = path if path is not None else e.filename
    reason = e.strerror or str(e)
    message = f"{where}; {reason}" if where is not None else reason
    return errors.from_code(code, message, node_name)


@contextlib.contextmanager
def as_tf_errors(path=None):
    """Raises an OSError from the block as its tf.errors class (see from_os_error)."""
    try:
        yield
    except OSError as e:
        raise from_os_error(e, path) from e
