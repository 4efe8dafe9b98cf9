"""simdnorm: SIMD LayerNorm, RMSNorm, L2 and GroupNorm for NumPy and torch.

NumPy arrays, over the last axis, without copies:

    import numpy as np, simdnorm
    x = np.random.randn(64, 896).astype(np.float32)
    y = simdnorm.layer_norm(x, weight, bias, eps=1e-5)      # a new array
    simdnorm.rms_norm(x, weight, eps=1e-6, out=x)           # in place

float32 and float16 arrays (the output's dtype may differ from x's when
`out` is given), any number of leading axes, rows strided (the last axis
contiguous). The GIL is released while the library runs. A wrong dtype,
shape or stride raises TypeError or ValueError with the library's status
message, and nothing is written. `simdnorm.reference` has the float64
truth of the same calls; `simdnorm.torch` the PyTorch functions, ops,
modules and `patch`. The contract (math, bounds, threads) is the C
library's: include/simdnorm/simdnorm.h.

`group_norm` normalizes (N, C, *spatial) arrays per (sample, group of
channels), as torch.nn.functional.group_norm (InstanceNorm: num_groups =
C), channels first or, with channels_last=True, (N, *spatial, C).
"""

import collections

import numpy as np

from . import _core
from . import _rows

__version__ = _core.version()

__all__ = [
    "layer_norm", "rms_norm", "l2_norm", "fused_add_rms_norm", "normalize",
    "group_norm",
    "ops", "isas", "set_isa", "active_isa", "reference",
]

_NP_DTYPES = {np.dtype(np.float32): _core.F32, np.dtype(np.float16): _core.F16}

Op = collections.namedtuple("Op", [
    "kind", "name", "title", "formula", "torch", "centered", "x_types",
    "y_types", "param_types", "flags", "f32_bound", "has_backward",
    "descriptor"
])
Op.__doc__ = """An operation of the library (simdnorm_op_info): its kind code,
name ("rmsnorm"), title, formula, the torch function it matches, whether its
statistics are centred, the dtypes it accepts (names), the flags it accepts,
the documented bound of float32 outputs in scaled ulps
(|y - exact| <= f32_bound * 2**-23 * (|gamma| * max(1, |xhat|) + |beta|)),
whether it has a backward pass (simdnorm.torch's autograd), and the
descriptor it takes: "row" (over the last axis: `normalize(x, name)`),
"group" (GroupNorm: `group_norm`) or "batch" (BatchNorm: the C API's
simdnorm_batch_norm; no Python form yet)."""


def _names(codes):
    return tuple(_rows.DTYPE_NAMES[c] for c in codes)


_OPS = tuple(
    Op(o["kind"], o["name"], o["title"], o["formula"], o["torch"],
       o["centered"], _names(o["x_types"]), _names(o["y_types"]),
       _names(o["param_types"]), o["flags"], o["f32_bound"],
       o["has_backward"], o["descriptor"])
    for o in _core.ops())
_KINDS = {op.name: op for op in _OPS}


def ops():
    """The operations this library computes (its registry), in order.
    Those whose descriptor is "row" are what `normalize` takes; code that
    enumerates row kinds filters on it."""
    return list(_OPS)


def op(kind):
    """The registry's entry of a kind name ("layernorm") or code."""
    for entry in _OPS:
        if kind in (entry.name, entry.kind):
            return entry
    raise ValueError(f"simdnorm: no operation {kind!r}; there are "
                     f"{', '.join(o.name for o in _OPS)}")


def _row_op(kind, who):
    """The entry of a row kind (normalize's); ValueError for GroupNorm."""
    entry = op(kind)
    if entry.descriptor != "row":
        hint = ("simdnorm.group_norm" if entry.descriptor == "group" else
                "its own function")
        raise ValueError(f"{who}: {entry.name} is not a row operation; "
                         f"use {hint}")
    return entry


def isas():
    """The instruction sets compiled in and supported here, best first."""
    return _core.isas()


def set_isa(name):
    """Forces an ISA process-wide (case-insensitive; "auto" or None = the
    best). An unknown or unsupported name raises ValueError."""
    status = _core.set_isa("auto" if name is None else str(name))
    if status != _core.OK:
        raise ValueError(f"simdnorm.set_isa({name!r}): "
                         f"{_core.status_string(status)}; this CPU has "
                         f"{', '.join(isas())}")


def active_isa():
    """The name of the ISA in use."""
    return _core.active_isa()


# NumPy operands.

def _array(a, name, who, writable=False):
    """(array, simdnorm dtype, element strides) of an operand whose last
    axis is a row."""
    dtype = _rows.dtype_of(who, name, a, np.ndarray, _NP_DTYPES,
                           "float32 and float16 arrays")
    if a.ndim == 0:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name} is 0-d; rows are its last axis")
    if writable and not a.flags.writeable:
        raise ValueError(f"{who}: {name} is read-only")
    return a, dtype, _element_strides(a, name, who)


def _element_strides(a, name, who):
    size = a.itemsize
    if a.size == 0:  # nothing to read or write; NumPy may give any strides
        return (0,) * (a.ndim - 1) + (1,)
    strides = a.strides
    if any(s % size for s in strides):
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name}'s strides {strides} are not whole elements")
    strides = tuple(s // size for s in strides)
    if a.shape[-1] > 1 and strides[-1] != 1:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name}'s last axis is not contiguous (stride "
                          f"{strides[-1]} elements)")
    return strides


def _view(a, dtype, strides):
    return _rows.make_view(_core.address(a), dtype, a.shape,
                           strides)


def _params(who, cols, weight, bias):
    """gamma, beta (arrays or None) as (address, address, dtype, keep):
    contiguous, of one dtype (float32 when theirs differ: exact)."""
    arrays = []
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            arrays.append(None)
            continue
        if not isinstance(p, np.ndarray):
            p = np.asarray(p)
        if p.dtype not in _NP_DTYPES:
            raise _rows.dtype_error(
                who, f"{name} has dtype {p.dtype}; simdnorm takes "
                "float32 and float16")
        if p.shape != (cols,):
            raise _rows.error(_core.INVALID_SHAPE, who,
                              f"{name} has shape {p.shape}, rows have {cols} "
                              "elements")
        arrays.append(p)
    present = [p for p in arrays if p is not None]
    dtype = np.dtype(np.float32)
    if present and all(p.dtype == present[0].dtype for p in present):
        dtype = present[0].dtype
    arrays = [None if p is None else np.ascontiguousarray(p, dtype=dtype)
              for p in arrays]
    ptrs = [0 if p is None else _core.address(p)
            for p in arrays]
    return ptrs[0], ptrs[1], _NP_DTYPES[dtype], arrays


def _same_shape(who, name, a, x):
    if a.shape != x.shape:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name} has shape {a.shape}, x {x.shape}")


def normalize(x, kind, weight=None, bias=None, eps=1e-5, *, out=None,
              residual=None, sum_out=None, gamma_offset=0.0,
              round_normalized=False, fast_rounding=False, max_threads=0):
    """Any operation of the registry (`kind`: a name from `ops()`, e.g.
    "rmsnorm") over the last axis of x, with every option of the C
    descriptor: a fused residual add (h = x + residual, rounded to x's
    dtype, is normalized; stored to sum_out, which may be residual or x),
    the scale gamma_offset + weight (Gemma: 1), Hugging Face's rounding
    order (round_normalized), fp32 results rounded to 16 bits
    (fast_rounding), and at most max_threads threads (0 = oneTBB's
    default). Returns out (a new array of x's dtype when None)."""
    return _normalize(f"simdnorm.normalize({kind!r})", kind, x, weight, bias,
                      eps, out, residual, sum_out, gamma_offset,
                      round_normalized, fast_rounding, max_threads)


def _normalize(who, kind, x, weight, bias, eps, out, residual=None,
               sum_out=None, gamma_offset=0.0, round_normalized=False,
               fast_rounding=False, max_threads=0):
    entry = _row_op(kind, who)
    x, x_type, x_strides = _array(x, "x", who)
    cols = x.shape[-1]
    if out is None:
        out = np.empty(x.shape, x.dtype)
    out, y_type, y_strides = _array(out, "out", who, writable=True)
    _same_shape(who, "out", out, x)
    views = {"x": _view(x, x_type, x_strides),
             "y": _view(out, y_type, y_strides)}
    for name, a in (("residual", residual), ("sum_out", sum_out)):
        if a is None:
            views[name] = None
            continue
        a, dtype, strides = _array(a, name, who, writable=name == "sum_out")
        _same_shape(who, name, a, x)
        if dtype != x_type:
            raise _rows.dtype_error(
                who, f"{name} has dtype {a.dtype}, x {x.dtype}")
        views[name] = _view(a, dtype, strides)
    gamma, beta, param_type, keep = _params(who, cols, weight, bias)
    flags = ((_core.ROUND_NORMALIZED if round_normalized else 0) |
             (_core.FAST_ROUNDING if fast_rounding else 0))
    _rows.run(who, entry.kind, cols, x.shape[:-1], views["x"], views["y"],
              gamma, beta, param_type, float(eps), flags=flags,
              gamma_offset=float(gamma_offset), max_threads=max_threads,
              residual=views["residual"], sum_out=views["sum_out"])
    del keep
    return out


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, out=None,
               max_threads=0):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis
    (torch.nn.functional.layer_norm). Returns out (new when None)."""
    return _normalize("simdnorm.layer_norm", "layernorm", x, weight, bias,
                      eps, out, max_threads=max_threads)


def rms_norm(x, weight=None, eps=1e-6, *, out=None, round_normalized=False,
             max_threads=0):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last axis.
    round_normalized rounds x / rms to x's dtype before the weight, as
    Hugging Face's LlamaRMSNorm does (for float16 x)."""
    return _normalize("simdnorm.rms_norm", "rmsnorm", x, weight, None, eps,
                      out, round_normalized=round_normalized,
                      max_threads=max_threads)


def l2_norm(x, weight=None, eps=1e-12, *, out=None, max_threads=0):
    """y = x / max(||x||_2, eps) * weight over the last axis
    (torch.nn.functional.normalize(x, dim=-1))."""
    return _normalize("simdnorm.l2_norm", "l2norm", x, weight, None, eps,
                      out, max_threads=max_threads)


def fused_add_rms_norm(x, residual, weight, eps=1e-6, *, max_threads=0):
    """vLLM's op, in place on both arrays: residual += x, then
    x = rms_norm(residual) * weight, with Hugging Face's (and vLLM's CUDA
    kernel's) rounding order. Returns None, as vLLM's does."""
    _normalize("simdnorm.fused_add_rms_norm", "rmsnorm", x, weight, None, eps,
               x, residual=residual, sum_out=residual, round_normalized=True,
               max_threads=max_threads)


def _group_shape(who, x, num_groups, channels_last):
    """(n, c, hw) of an (N, C, *spatial) array, or (N, *spatial, C) with
    channels_last; checks num_groups (a positive int dividing C)."""
    if x.ndim < 2:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"x has shape {x.shape}; group_norm takes (N, C, "
                          "*spatial)")
    c = x.shape[-1] if channels_last else x.shape[1]
    spatial = x.shape[1:-1] if channels_last else x.shape[2:]
    hw = 1
    for s in spatial:
        hw *= s
    if isinstance(num_groups, bool) or not isinstance(
            num_groups, (int, np.integer)) or num_groups < 1:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"num_groups is {num_groups!r}, not a positive int")
    if c % num_groups:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"num_groups {num_groups} does not divide the "
                          f"{c} channels")
    return x.shape[0], c, hw


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, out=None,
               channels_last=False, fast_rounding=False, max_threads=0):
    """torch.nn.functional.group_norm over an (N, C, *spatial) array: each
    sample's C channels form num_groups groups of consecutive channels, and
    each (sample, group) is normalized over its channels and positions,
    (x - mean) / sqrt(var + eps) * weight[c] + bias[c] (InstanceNorm:
    num_groups = C). channels_last=True: x is (N, *spatial, C) (channels
    last in memory, NHWC), and so is the result. x and out are C-contiguous
    float32 or float16 arrays (a non-contiguous x is copied first; out may
    be x: in place); weight, bias: C elements. float16 results are
    correctly rounded, as the row kinds' are; fast_rounding=True rounds
    the float32 result instead (SIMDNORM_FAST_ROUNDING: within half an ulp
    plus the float32 bound). Returns out (a new array of x's dtype when
    None)."""
    who = "simdnorm.group_norm"
    x, x_type, _ = _array(x, "x", who)
    n, c, hw = _group_shape(who, x, num_groups, channels_last)
    if out is None:
        out = np.empty(x.shape, x.dtype)
    out, y_type, _ = _array(out, "out", who, writable=True)
    _same_shape(who, "out", out, x)
    if not out.flags.c_contiguous:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          "out is not C-contiguous")
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    gamma, beta, param_type, keep = _params(who, c, weight, bias)
    flags = _core.FAST_ROUNDING if fast_rounding else 0
    if n and x.size:
        status = _core.group_norm(
            n, c, hw, int(num_groups),
            _core.NHWC if channels_last else _core.NCHW, _core.address(x),
            _core.address(out), x_type | y_type << 4 | param_type << 8,
            gamma, beta, float(eps), flags, max_threads)
        _rows.check(status, who)
    elif n:
        _rows.check(_core.INVALID_SHAPE, who)  # c or hw is 0
    del keep
    return out


from . import reference  # noqa: E402  (uses the helpers above)
