"""tf.io.gfile: TF's file API over the local file system, raising tf.errors classes.

Behaviour follows TF 1.15's local file system: files open lazily (a missing file is a
NotFoundError at the first read, not at GFile()), text mode returns str and accepts str or
bytes, nothing translates newlines, and a pattern without a directory globs under "./".
Remote schemes (gs://, hdfs://, s3://) are refused with UnimplementedError.
"""
from __future__ import annotations

import errno as _errno
import glob as _glob
import os
import shutil
import stat as _stat

from dtf.framework import errors

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir",
           "remove", "rename", "rmtree", "stat", "walk"]

_ERROR_BY_ERRNO = {
    _errno.ENOENT: errors.NotFoundError, _errno.ENOTDIR: errors.FailedPreconditionError,
    _errno.EISDIR: errors.FailedPreconditionError, _errno.EEXIST: errors.AlreadyExistsError,
    _errno.EACCES: errors.PermissionDeniedError, _errno.EPERM: errors.PermissionDeniedError,
    _errno.ENOTEMPTY: errors.FailedPreconditionError, _errno.ENOSPC: errors.ResourceExhaustedError,
}


def _local(path) -> str:
    """The local path of ``path`` (str, bytes or PathLike; ``file://`` stripped)."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode("utf-8")
    scheme, sep, rest = path.partition("://")
    if sep and scheme.isidentifier():
        if scheme != "file":
            raise errors.UnimplementedError(
                None, None, f"File system scheme '{scheme}' not implemented (file: '{path}'): "
                "dtf reads and writes local files only")
        return rest
    return path


def _os_error(e: OSError, path):
    """The tf.errors instance TF raises for an OSError on ``path``."""
    cls = _ERROR_BY_ERRNO.get(e.errno, errors.UnknownError)
    return cls(None, None, f"{path}; {os.strerror(e.errno) if e.errno else e}")


class GFile:
    """A file, opened on first use; ``mode`` is r, w, a, r+, w+ or a+, with b for bytes."""

    def __init__(self, name, mode="r"):
        if mode.replace("b", "") not in ("r", "w", "a", "r+", "w+", "a+"):
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self.__name, self.__mode = _local(name), mode
        self._binary = "b" in mode
        self._file = None

    name = property(lambda self: self.__name)
    mode = property(lambda self: self.__mode)

    def _open(self, for_writing: bool):
        plain = self.__mode.replace("b", "")
        if for_writing and plain == "r":
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        if not for_writing and plain in ("w", "a"):
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        if self._file is None:
            try:
                self._file = open(self.__name, plain + "b")  # noqa: SIM115 - closed by close()
            except OSError as e:
                raise _os_error(e, self.__name) from None
        return self._file

    def _text(self, data: bytes):
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        """The file's length in bytes."""
        return stat(self.__name).length

    def write(self, file_content):
        """Appends ``file_content`` (str or bytes) at the current position."""
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._open(True).write(file_content)

    def read(self, n=-1):
        """Reads ``n`` bytes (all when -1), as str in text mode."""
        return self._text(self._open(False).read(n if n is not None and n >= 0 else -1))

    def readline(self):
        return self._text(self._open(False).readline())

    def readlines(self):
        return [self._text(line) for line in self._open(False).readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def seek(self, offset=None, whence=0, position=None):
        """Moves to ``offset`` (``position`` is TF's older name) relative to ``whence``."""
        if position is not None:
            if offset is not None:
                raise ValueError("Cannot specify both 'offset' and 'position'")
            offset = position
        self._open(False).seek(offset, whence)

    def tell(self) -> int:
        return self._open(self.__mode.replace("b", "") in ("w", "a")).tell()

    def seekable(self) -> bool:
        return True

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def exists(path) -> bool:
    """Whether ``path`` names a file or directory."""
    return os.path.exists(_local(path))


def isdir(path) -> bool:
    """Whether ``path`` is a directory."""
    return os.path.isdir(_local(path))


def mkdir(path):
    """Creates one directory; its parent must exist (NotFoundError) and it must not
    (AlreadyExistsError, as TF 1.15's local file system says)."""
    local = _local(path)
    try:
        os.mkdir(local, 0o755)
    except OSError as e:
        raise _os_error(e, local) from None


def makedirs(path):
    """Creates a directory and its missing parents; fine when it exists already."""
    local = _local(path)
    try:
        os.makedirs(local, 0o755, exist_ok=True)
    except OSError as e:
        raise _os_error(e, local) from None


def listdir(path) -> list:
    """Names of the entries of directory ``path`` (NotFoundError when it is not one)."""
    local = _local(path)
    if not os.path.isdir(local):
        raise errors.NotFoundError(None, None, f"Could not find directory {local}")
    return os.listdir(local)


def glob(pattern) -> list:
    """Paths matching ``pattern`` (``*``, ``?``, ``[...]``); a pattern without a
    directory part matches under "./", as TF writes them."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    found = []
    for p in patterns:
        local = _local(p)
        under_dot = not os.path.dirname(local)
        for match in sorted(_glob.glob(local)):
            found.append(os.path.join(".", match) if under_dot else match)
    return found


def remove(path):
    """Deletes a file (NotFoundError if missing, FailedPreconditionError for a directory)."""
    local = _local(path)
    try:
        if os.path.isdir(local):
            raise IsADirectoryError(_errno.EISDIR, "Is a directory")
        os.remove(local)
    except OSError as e:
        raise _os_error(e, local) from None


def rmtree(path):
    """Deletes a directory and everything under it, or a single file."""
    local = _local(path)
    if not os.path.lexists(local):
        raise errors.NotFoundError(None, None, f"{local} not found")
    try:
        if os.path.isdir(local) and not os.path.islink(local):
            shutil.rmtree(local)
        else:
            os.remove(local)
    except OSError as e:
        raise _os_error(e, local) from None


def _refuse_existing(target, overwrite):
    if not overwrite and os.path.exists(target):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def copy(oldpath, newpath, overwrite=False):
    """Copies a file; AlreadyExistsError when ``newpath`` exists and not ``overwrite``."""
    old, new = _local(oldpath), _local(newpath)
    _refuse_existing(new, overwrite)
    try:
        shutil.copyfile(old, new)
    except OSError as e:
        raise _os_error(e, old if not os.path.exists(old) else new) from None


def rename(oldname, newname, overwrite=False):
    """Renames a file or directory; AlreadyExistsError when ``newname`` exists and not
    ``overwrite``."""
    old, new = _local(oldname), _local(newname)
    _refuse_existing(new, overwrite)
    try:
        os.replace(old, new)
    except OSError as e:
        raise _os_error(e, old if not os.path.lexists(old) else new) from None


class FileStatistics:
    """What stat() returns: ``length`` in bytes, ``mtime_nsec``, ``is_directory``."""

    __slots__ = ("length", "mtime_nsec", "is_directory")

    def __init__(self, length=None, mtime_nsec=None, is_directory=None):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def stat(path) -> FileStatistics:
    """Length, modification time (ns) and kind of ``path``."""
    local = _local(path)
    try:
        st = os.stat(local)
    except OSError as e:
        raise _os_error(e, local) from None
    return FileStatistics(st.st_size, st.st_mtime_ns, _stat.S_ISDIR(st.st_mode))


def walk(top, topdown=True, onerror=None):
    """Yields (dirname, subdirectory names, file names) for ``top`` and each directory
    below it, parents first when ``topdown``; a missing ``top`` yields nothing (or is
    passed to ``onerror``)."""
    top = _local(top)
    try:
        entries = listdir(top)
    except errors.NotFoundError as err:
        if onerror:
            onerror(err)
        return
    subdirs, files = [], []
    for entry in entries:
        (subdirs if isdir(os.path.join(top, entry)) else files).append(entry)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for subdir in subdirs:
        yield from walk(os.path.join(top, subdir), topdown, onerror)
    if not topdown:
        yield here
