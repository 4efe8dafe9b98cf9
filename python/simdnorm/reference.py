"""The float64 truth of simdnorm's calls, to check activations against.

Each function takes the arguments of its namesake in `simdnorm` and returns
float64 arrays of x's shape: the exact result of the contract (computed by
the C library's scalar float64 path, `simdnorm::reference_f64`), before any
rounding to an output type. float32 results of the library lie within
`op.f32_bound * 2**-23 * (|weight| * max(1, |xhat|) + |bias|)` of it (see
`simdnorm.ops()`), and float16 and bfloat16 results are it, correctly
rounded. Single-threaded, and slow: for checking, not for inference.

NumPy has no bfloat16: bfloat16 data (e.g. torch's, `t.float().numpy()`)
is passed as float32 with x_dtype="bfloat16", which says which type x's
values are of (what round_normalized rounds to, and what a residual sum is
rounded to); the widening is exact, so the truth is the same.
"""

import numpy as np

from . import _core
from . import _rows


def normalize(x, kind, weight=None, bias=None, eps=1e-5, *, residual=None,
              gamma_offset=0.0, round_normalized=False, return_xhat=False,
              x_dtype=None):
    """The exact result of simdnorm.normalize on the same arguments, as
    float64; with return_xhat also the normalized value before the
    weight and bias (x - mean) / sqrt(var + eps) or its analogue.
    x_dtype="bfloat16": x (and residual) are float32 arrays holding
    bfloat16 values, taken as bfloat16."""
    from . import _array, _params, _same_shape, op  # noqa: the package's
    who = f"simdnorm.reference.normalize({kind!r})"
    entry = op(kind)
    x, x_type, x_strides = _array(x, "x", who)
    if x_dtype is not None:
        x, x_type, x_strides = _as_bfloat16(x, x_type, x_dtype, "x", who)
    cols = x.shape[-1]
    out = np.empty(x.shape, np.float64)
    xhat = np.empty(x.shape, np.float64) if return_xhat else None
    # Operands in the order [x, out, xhat, residual] (those present), and
    # their element sizes; out and xhat are dense float64.
    arrays = [(x, x_type, x_strides, x.itemsize)]
    for a in (out, xhat):
        if a is not None:
            arrays.append((a, _core.F32, tuple(s // 8 for s in a.strides), 8))
    if residual is not None:
        residual, r_type, r_strides = _array(residual, "residual", who)
        if x_dtype is not None:
            residual, r_type, r_strides = _as_bfloat16(
                residual, r_type, x_dtype, "residual", who)
        _same_shape(who, "residual", residual, x)
        if r_type != x_type:
            raise _rows.dtype_error(
                who, f"residual has dtype {residual.dtype}, x "
                f"{x.dtype}")
        arrays.append((residual, r_type, r_strides, residual.itemsize))
    views = [_rows.make_view(_core.address(a), t, a.shape,
                             st, size) for a, t, st, size in arrays]
    sizes = [size for _, _, _, size in arrays]
    r = len(views) - 1 if residual is not None else None
    gamma, beta, param_type, keep = _params(who, cols, weight, bias)
    flags = _core.ROUND_NORMALIZED if round_normalized else 0
    types = x_type | x_type << 4 | param_type << 8
    if all(n > 0 for n in x.shape[:-1]):
        rows, strides, offsets = _rows.plan(x.shape[:-1], views)
        if rows == 1:
            strides = (0,) * len(views)
        for offset in offsets:
            p = [v.ptr + o * size for v, o, size in zip(views, offset, sizes)]
            status = _core.reference_f64(
                entry.kind, rows, cols, p[0], strides[0], gamma, beta, types,
                float(eps), float(gamma_offset), flags,
                0 if r is None else p[r], 0 if r is None else strides[r],
                p[1], p[2] if return_xhat else 0)
            _rows.check(status, who)
    del keep
    return (out, xhat) if return_xhat else out


def _as_bfloat16(a, dtype, x_dtype, name, who):
    """A float32 array of bfloat16 values as bfloat16 bits (uint16)."""
    if x_dtype != "bfloat16":
        raise ValueError(f"{who}: x_dtype is None or 'bfloat16', not "
                         f"{x_dtype!r}")
    if dtype != _core.F32:
        raise TypeError(f"{who}: x_dtype='bfloat16' takes float32 arrays")
    bits = np.ascontiguousarray(a).view(np.uint32)
    if (bits & 0xFFFF).any():
        raise ValueError(f"{who}: {name} holds values that are not bfloat16")
    bf16 = (bits >> 16).astype(np.uint16)
    return bf16, _core.BF16, tuple(s // 2 for s in bf16.strides)


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, return_xhat=False,
               x_dtype=None):
    """The exact simdnorm.layer_norm, as float64."""
    return normalize(x, "layernorm", weight, bias, eps,
                     return_xhat=return_xhat, x_dtype=x_dtype)


def rms_norm(x, weight=None, eps=1e-6, *, round_normalized=False,
             return_xhat=False, x_dtype=None):
    """The exact simdnorm.rms_norm, as float64 (with round_normalized,
    x / rms is rounded to x's dtype before the weight, as there)."""
    return normalize(x, "rmsnorm", weight, None, eps,
                     round_normalized=round_normalized,
                     return_xhat=return_xhat, x_dtype=x_dtype)


def l2_norm(x, weight=None, eps=1e-12, *, return_xhat=False, x_dtype=None):
    """The exact simdnorm.l2_norm, as float64."""
    return normalize(x, "l2norm", weight, None, eps, return_xhat=return_xhat,
                     x_dtype=x_dtype)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *,
               channels_last=False, return_xhat=False, x_dtype=None):
    """The exact simdnorm.group_norm, as float64 (x's shape and layout).
    Each (sample, group) is a row of the float64 LayerNorm truth above (the
    same statistics: population variance, eps as a float inside the square
    root); weight and bias are applied per channel in float64. float32
    results of simdnorm.group_norm lie within op("groupnorm").f32_bound of
    it (scaled as for rows); 16-bit ones within half an ulp more."""
    from . import _array, _group_shape  # noqa: the package's
    who = "simdnorm.reference.group_norm"
    x, _, _ = _array(x, "x", who)
    n, c, hw = _group_shape(who, x, num_groups, channels_last)
    params = []
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            p = np.asarray(p)
            if p.shape != (c,):
                raise _rows.error(_core.INVALID_SHAPE, who,
                                  f"{name} has shape {p.shape}, x has {c} "
                                  "channels")
            p = p.astype(np.float64)
        params.append(p)
    # Channels first, contiguous: each (sample, group) one row.
    xc = np.moveaxis(x, -1, 1) if channels_last else x
    xc = np.ascontiguousarray(xc)
    if n == 0:
        out = np.empty(xc.shape, np.float64)
        xhat = out.copy()
    else:
        _, xhat = normalize(xc.reshape(n * num_groups, -1), "layernorm",
                            None, None, eps, return_xhat=True,
                            x_dtype=x_dtype)
        xhat = xhat.reshape(n, c, hw)
        out = xhat.copy()
        if params[0] is not None:
            out *= params[0][:, None]
        if params[1] is not None:
            out += params[1][:, None]
        out, xhat = out.reshape(xc.shape), xhat.reshape(xc.shape)
    if channels_last:
        out, xhat = np.moveaxis(out, 1, -1), np.moveaxis(xhat, 1, -1)
    return (out, xhat) if return_xhat else out
