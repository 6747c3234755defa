"""tf.gfile: TF 1.x's CamelCase file API; the same functions as tf.io.gfile."""
from dtf.io.gfile import GFile  # noqa: F401
from dtf.io.gfile import copy as Copy  # noqa: F401
from dtf.io.gfile import exists as Exists  # noqa: F401
from dtf.io.gfile import glob as Glob  # noqa: F401
from dtf.io.gfile import isdir as IsDirectory  # noqa: F401
from dtf.io.gfile import listdir as ListDirectory  # noqa: F401
from dtf.io.gfile import makedirs as MakeDirs  # noqa: F401
from dtf.io.gfile import mkdir as MkDir  # noqa: F401
from dtf.io.gfile import remove as Remove  # noqa: F401
from dtf.io.gfile import rename as Rename  # noqa: F401
from dtf.io.gfile import rmtree as DeleteRecursively  # noqa: F401
from dtf.io.gfile import stat as Stat  # noqa: F401

Open = GFile
FastGFile = GFile  # TF 1.x's FastGFile is GFile without locking; the same here


def Walk(top, in_order=True):  # noqa: N802 - TF's name
    """Yields (dirname, subdirectories, files) under ``top``, parents first when
    ``in_order``; nothing when ``top`` does not exist."""
    from dtf.io.gfile import walk
    return walk(top, topdown=in_order)
