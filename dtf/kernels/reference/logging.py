"""Print, PrintV2, Assert and CheckNumerics: values pass through unchanged; what these ops
add is a message (printed, or the text of the error they raise), formatted as TF does."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .table import reference


def _element(v, quote_strings=False) -> str:
    """One element as TF's StrCat prints it: %g with 6 (float32: 9 if needed) digits."""
    if isinstance(v, (bytes, str)):
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        return f'"{text}"' if quote_strings else text
    if isinstance(v, (np.bool_, bool)):
        return "1" if v else "0"
    if isinstance(v, np.floating):
        digits = 6 if v.dtype == np.float32 or v.dtype == np.float16 else 15
        text = f"{float(v):.{digits}g}"
        if type(v)(float(text)) != v:  # TF falls back to the round-trip precision
            text = f"{float(v):.{9 if digits == 6 else 17}g}"
        return text.replace("inf", "inf").replace("nan", "nan")
    return str(v)


def summarize(value, max_entries=3) -> str:
    """TF's Tensor::SummarizeValue: the first ``max_entries`` elements (all when < 0) in
    nested brackets without separators between rows, "..." where elements were left out."""
    arr = np.asarray(value)
    flat = arr.reshape(-1)
    limit = flat.size if max_entries is None or max_entries < 0 else min(max_entries, flat.size)
    if arr.ndim == 0:
        return _element(flat[0]) if limit else ""
    out, index = [], [0]

    def one_dim(dim):
        if index[0] >= limit:
            return
        count = arr.shape[dim]
        if dim == arr.ndim - 1:
            for i in range(count):
                if index[0] >= limit:
                    if dim != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_element(flat[index[0]]))
                index[0] += 1
            return
        for _ in range(count):
            opened = index[0] < limit
            if opened:
                out.append("[")
            one_dim(dim + 1)
            if index[0] < limit or opened:
                out.append("]")

    one_dim(0)
    text = "".join(out)
    return text + "..." if flat.size > limit else text


def bracketed(values, max_entries) -> str:
    """Each value summarized in its own brackets, as Print and Assert write their data."""
    return "".join(f"[{summarize(v, max_entries)}]" for v in values)


@reference("Print", host=True)
def _print(attrs, x, *data):
    # The printing itself is the CPU kernel's side effect (dtf.kernels.cpu.logging).
    return x


@reference("PrintV2", host=True)
def _print_v2(attrs, *values):
    return None


@reference("Assert", host=True)
def _assert(attrs, condition, *data):
    if not np.all(condition):
        text = " ".join(f"[{summarize(v, attrs.get('summarize', 3))}]" for v in data)
        raise errors.InvalidArgumentError(None, None, f"assertion failed: {text}")


@reference("CheckNumerics", host=True)
def _check_numerics(attrs, x):
    nan, inf = bool(np.isnan(x).any()), bool(np.isinf(x).any())
    if nan or inf:
        found = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
        raise errors.InvalidArgumentError(
            None, None, f"{attrs['message']} : Tensor had {found} values")
    return x


def summarize_v2(value, max_entries=3) -> str:
    """TF's SummarizeValue(print_v2=True), what tf.print writes: numpy-like nesting, rows on
    new lines, the first and last ``max_entries`` per dimension with "..." between them
    (all when < 0), strings quoted."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return _element(arr.reshape(-1)[0], quote_strings=True)
    ends = arr.size if max_entries is None or max_entries < 0 else max_entries
    out = []

    def spacing(dim):
        if dim == arr.ndim - 1:
            out.append(" ")
        else:
            out.append("\n" * (arr.ndim - dim - 1) + " " * (dim + 1))

    def one_dim(dim, sub):
        if dim == arr.ndim:
            out.append(_element(sub, quote_strings=True))
            return
        out.append("[")
        count = sub.shape[0]
        for i in range(min(ends, count)):
            if i > 0:
                spacing(dim)
            one_dim(dim + 1, sub[i])
        if count > 2 * ends:
            spacing(dim)
            out.append("...")
        for i in range(max(ends, count - ends), count):
            spacing(dim)
            one_dim(dim + 1, sub[i])
        out.append("]")

    one_dim(0, arr)
    return "".join(out)


@reference("IdentityN", host=True)
def _identity_n(attrs, *xs):
    return tuple(xs)
