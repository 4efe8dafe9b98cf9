"""Rows of arrays and tensors as simdnorm descriptors.

One call of the C library normalizes `rows` rows that are evenly spaced
(`stride` elements apart, last axis contiguous). An array with several
leading axes is one call when its leading axes merge into one evenly spaced
axis (always for contiguous arrays, and for slices such as ``x[..., :896]``
of a wider buffer); otherwise it is one call per index of the outer axes
that do not merge, with nothing copied. NumPy and torch front ends both
describe their operands as `View`s and call `run`.

Errors are raised before anything is written: the library validates every
call first, and where one operation takes several calls, what could differ
between them (an overlap of an output with another operand) is checked here
on the whole operands before the first call.
"""

from . import _core

DTYPE_NAMES = {_core.F32: "float32", _core.BF16: "bfloat16",
               _core.F16: "float16", _core.I8: "int8"}
ITEMSIZE = {_core.F32: 4, _core.BF16: 2, _core.F16: 2, _core.I8: 1}

# The exception for each status of the library.
_EXCEPTIONS = {
    _core.INVALID_ARGUMENT: ValueError,
    _core.INVALID_SHAPE: ValueError,
    _core.OVERLAP: ValueError,
    _core.UNSUPPORTED: TypeError,
}


def error(status, who, detail=None, cls=None):
    """The exception of a status (or `cls`), with the library's words for
    it after `detail`, the problem found before the call."""
    message = _core.status_string(status)
    if detail:
        message = f"{detail} ({message})"
    if cls is None:
        cls = _EXCEPTIONS.get(status, RuntimeError)
    return cls(f"{who}: {message}")


def dtype_error(who, detail):
    """A dtype simdnorm does not take: TypeError, with the status the
    library gives an unknown dtype."""
    return error(_core.INVALID_ARGUMENT, who, detail, TypeError)


def dtype_of(who, name, obj, cls, dtypes, takes):
    """The simdnorm dtype of obj, an instance of cls whose .dtype is a key
    of `dtypes`; TypeError otherwise (`takes` names the dtypes)."""
    if not isinstance(obj, cls):
        raise TypeError(f"{who}: {name} must be a {cls.__module__}."
                        f"{cls.__name__}, not {type(obj).__name__}")
    dtype = dtypes.get(obj.dtype)
    if dtype is None:
        raise dtype_error(who, f"{name} has dtype {obj.dtype}; simdnorm "
                          f"takes {takes}")
    return dtype


def check(status, who):
    if status != _core.OK:
        raise error(status, who)


class View:
    """An operand: the address of its first element, its simdnorm dtype,
    and the strides (in elements) of its leading axes; the last axis (the
    row) is contiguous. `lo`/`hi` bound the bytes it spans."""

    __slots__ = ("ptr", "dtype", "strides", "lo", "hi")

    def __init__(self, ptr, dtype, strides, lo, hi):
        self.ptr = ptr
        self.dtype = dtype
        self.strides = strides
        self.lo = lo
        self.hi = hi


def make_view(ptr, dtype, shape, strides, itemsize=None):
    """A View of an operand of `shape` (the last axis the row) and element
    strides `strides` (the last one already checked to be 1)."""
    size = ITEMSIZE[dtype] if itemsize is None else itemsize
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return View(ptr, dtype, tuple(strides[:-1]), ptr + lo * size,
                ptr + (hi + 1) * size)


def plan(lead, views):
    """Splits leading axes `lead` into calls: (rows, row strides per view,
    element offsets per view of each call). Axes merge inwards while every
    view has stride_outer == stride_inner * size_inner."""
    k = len(views)
    axes = [(n, tuple(v.strides[i] for v in views))
            for i, n in enumerate(lead) if n != 1]
    if not axes:
        return 1, (0,) * k, [(0,) * k]
    merged = [axes[-1]]
    for n, strides in reversed(axes[:-1]):
        inner_n, inner_strides = merged[-1]
        if all(s == t * inner_n for s, t in zip(strides, inner_strides)):
            merged[-1] = (n * inner_n, inner_strides)
        else:
            merged.append((n, strides))
    rows, row_strides = merged[0]
    offsets = [(0,) * k]
    for n, strides in merged[1:]:
        offsets = [tuple(o + i * s for o, s in zip(offset, strides))
                   for i in range(n) for offset in offsets]
    return rows, row_strides, offsets


def _same(a, b):
    return a.ptr == b.ptr and a.strides == b.strides and a.dtype == b.dtype


def _check_overlap(who, inputs, outputs, allowed):
    """The library's overlap rule on whole operands: an output may be
    exactly an input it is allowed to alias (`allowed`: pairs of indices
    into outputs and inputs), nothing else."""
    for i, out in enumerate(outputs):
        others = [(j, v) for j, v in enumerate(inputs)] + [
            (None, v) for v in outputs[:i]]
        for j, v in others:
            if v is None or out is None:
                continue
            if out.lo < v.hi and v.lo < out.hi:
                if j is not None and (i, j) in allowed and _same(out, v):
                    continue
                raise error(_core.OVERLAP, who)


def run(who, kind, cols, lead, x, y, gamma, beta, param_type, eps, *,
        flags=0, gamma_offset=0.0, max_threads=0, residual=None,
        sum_out=None):
    """Normalizes every row of `lead` leading shape. x, y, residual, sum_out
    are Views (residual and sum_out may be None); gamma, beta addresses
    (0 = none) of `cols` contiguous elements of param_type."""
    if any(n == 0 for n in lead):
        return  # no rows: nothing to read or write
    views = [x, y] + [v for v in (residual, sum_out) if v is not None]
    rows, strides, offsets = plan(lead, views)
    if len(offsets) > 1:
        # y may be x; sum_out may be x or residual.
        allowed = {(0, 0)}
        if sum_out is not None:
            allowed |= {(1, 0), (1, 1)}
        size = ITEMSIZE[param_type]
        params = [View(p, param_type, (), p, p + cols * size) if p else None
                  for p in (gamma, beta)]
        _check_overlap(who, [x, residual] + params, [y, sum_out], allowed)
    if rows == 1:
        strides = (0,) * len(views)
    for s in strides:
        if s < cols and rows > 1:
            raise error(_core.INVALID_SHAPE, who,
                        f"rows {s} elements apart, {cols} long")
    types = x.dtype | y.dtype << 4 | param_type << 8
    sizes = [ITEMSIZE[v.dtype] for v in views]
    fused = len(views) > 2
    if fused:
        # Where residual and sum_out sit in views (0: absent).
        r = 2 if residual is not None else 0
        s = len(views) - 1 if sum_out is not None else 0
    for offset in offsets:
        p = [v.ptr + o * size for v, o, size in zip(views, offset, sizes)]
        if not fused:
            status = _core.normalize(kind, rows, cols, p[0], strides[0], p[1],
                                     strides[1], gamma, beta, types, eps,
                                     gamma_offset, flags, max_threads)
        else:
            status = _core.normalize(
                kind, rows, cols, p[0], strides[0], p[1], strides[1], gamma,
                beta, types, eps, gamma_offset, flags, max_threads,
                p[r] if r else 0, strides[r] if r else 0,
                p[s] if s else 0, strides[s] if s else 0)
        check(status, who)
