"""simdnorm for PyTorch: functions, custom ops, modules and `patch`.

    import torch, simdnorm.torch
    y = simdnorm.torch.layer_norm(x, (896,), w, b, 1e-5)  # F.layer_norm's
    simdnorm.torch.patch(model)  # every LayerNorm and HF RMSNorm, in place
    torch.ops.simdnorm.fused_add_rms_norm(x, residual, weight, 1e-6)  # vLLM's

CPU tensors of float32, bfloat16 and float16; weights of the input's dtype
or float32 (float16 and bfloat16 also serve); rows strided as torch lays
them out: a tensor whose last dimension is contiguous is never copied (one
library call when its leading dimensions merge into evenly spaced rows, one
per outer index when not), any other layout is copied first. 16-bit results
are correctly rounded (the library's contract: include/simdnorm/simdnorm.h),
where torch's are not always; `fast_rounding=True` (functions, modules,
`patch`) rounds the float32 result instead: within one ulp, about 3x faster
in bfloat16. Threads follow torch.get_num_threads().

Autograd: the functional forms and the modules have a backward pass
(simdnorm_backward: dx, and dweight, dbias summed in float32 over the rows,
the same bits for any thread count); Hugging Face's rounding of x / rms to
the input's dtype is passed through as the identity, as torch's autograd
does for `.to()`. The in-place custom ops refuse inputs that require grad
while autograd is on (under torch.no_grad() or torch.inference_mode()
they are fine, as for torch's own modules).

Rounding orders, by name: `rms_norm`, the `RMSNorm` module, and the
`rms_norm` and `fused_add_rms_norm` ops follow Hugging Face's LlamaRMSNorm
(and vLLM's CUDA kernel, and newer torch's F.rms_norm): x / rms is rounded
to the input's dtype, then multiplied by the weight. `layer_norm` rounds
once. `RMSNorm(..., weight_offset=1)` is Gemma's: (1 + weight) in float32,
one rounding.

GroupNorm, InstanceNorm and BatchNorm (`group_norm`, `instance_norm`,
`batch_norm`, the `GroupNorm`, `InstanceNorm1d/2d/3d` and
`BatchNorm1d/2d/3d` modules) read contiguous (NCHW) and
channels_last (NHWC) tensors in place and write the output in the input's
memory format. Their 16-bit results are the float32 result rounded once
(SIMDNORM_FAST_ROUNDING: within half an ulp plus the float32 bound), not
correctly rounded as the row kinds' are. All of them have a backward
pass: GroupNorm and InstanceNorm over the input's statistics through
simdnorm_group_norm_backward, BatchNorm (`batch_norm`, the
`BatchNorm1d/2d/3d` modules, and `instance_norm(use_input_stats=False)`,
which is BatchNorm's inference) through simdnorm_batch_norm_backward: dx
in the input's dtype, dweight and dbias per channel summed in float32,
the same bits for any thread count. As torch's native_group_norm and
native_batch_norm do, the forward saves the statistics it normalized by
(each group's mean and rstd; in training each channel's mean and invstd)
and the backward reuses them instead of a statistics pass over x.
`normalize` takes any `dim` (p = 2 only): other than the last, through a
copy with that dimension moved last.
"""

import math

import torch

from . import _core
from . import _rows

__all__ = ["layer_norm", "rms_norm", "normalize", "group_norm",
           "instance_norm", "batch_norm", "LayerNorm", "RMSNorm",
           "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "patch"]

_DTYPES = {torch.float32: _core.F32, torch.bfloat16: _core.BF16,
           torch.float16: _core.F16}
_is_grad_enabled = torch._C.is_grad_enabled
_core.torch_setup(torch.empty_like, _is_grad_enabled, torch.get_num_threads,
                  torch.float32, torch.bfloat16, torch.float16, torch.strided)
# The common call: over ATen where the package was built with torch's C++
# headers (libtorch-dev), else through Python's attribute getters.
try:
    from . import _torch_core
    _common_call = _torch_core.normalize
    _group_call = _torch_core.group_norm
    _last_threads = _torch_core.last_threads
except ImportError:
    _common_call = _core.torch_normalize
    _group_call = None
    _last_threads = _core.last_torch_threads


def _no_grad_error(who, name, what="simdnorm has no backward pass"):
    return RuntimeError(
        f"{who}: {name} requires grad and autograd is on, but {what} yet; "
        "run under torch.no_grad() or torch.inference_mode() (or detach the "
        "tensor)")


def _check_grad(who, x, weight, bias=None):
    """Raises if autograd is on and a tensor requires grad (the in-place
    ops, which have no backward)."""
    if _is_grad_enabled():
        for name, t in (("input", x), ("weight", weight), ("bias", bias)):
            if getattr(t, "requires_grad", False):
                raise _no_grad_error(who, name)


def _needs_grad(x, weight, bias):
    return _is_grad_enabled() and any(
        getattr(t, "requires_grad", False) for t in (x, weight, bias))


def _weight_grads(ctx, status, dgamma, dbeta, weight):
    """After a backward call of an autograd Function below: raises for a
    bad status, else (dweight, dbias) in the parameters' shapes and dtypes
    from the float32 sums (None where not wanted)."""
    if status:
        raise _rows.error(status, ctx.who + " (backward)")
    dw = None if dgamma is None else dgamma.view(weight.shape).to(
        weight.dtype)
    db = None if dbeta is None else dbeta.view(ctx.bias_shape).to(
        ctx.bias_dtype)
    return dw, db


class _Norm(torch.autograd.Function):
    """The functional forms under autograd: the forward as without grad,
    the backward through simdnorm_backward (lib/backward_rows-inl.h).
    The common call (dense rows, one normalized dimension) takes
    _torch_core's C++ Function instead where it is built (RowNorm: the
    same kernels without Python in the engine's backward call)."""

    @staticmethod
    def forward(ctx, who, kind, x, shape, weight, bias, eps, flags, y_dtype,
                gamma_offset):
        # Grad mode is off in here: _normalize computes y directly. A dense
        # x also gets its rows' saved statistics (mean, rstd), which spare
        # the backward its statistics pass (L2 takes none: simdnorm.h).
        cols = math.prod(_shape(shape))
        stats = ()
        if kind != _core.L2NORM and x.is_contiguous() and cols:
            rows = x.numel() // cols
            stats = (torch.empty(rows), torch.empty(rows))
        y = _normalize(who, kind, x, shape, weight, bias, eps, flags,
                       y_dtype, gamma_offset, stats)
        ctx.save_for_backward(x, weight, *stats)
        ctx.who, ctx.kind = who, kind
        ctx.eps, ctx.gamma_offset = float(eps), float(gamma_offset)
        ctx.cols = cols
        if bias is not None:
            ctx.bias_shape, ctx.bias_dtype = bias.shape, bias.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, *stats = ctx.saved_tensors
        cols = ctx.cols
        want_w = ctx.needs_input_grad[4]
        want_b = ctx.needs_input_grad[5]
        xc = x.contiguous()
        dyc = dy.contiguous()
        dx = torch.empty_like(xc)
        rows = xc.numel() // cols
        gamma, param_type, keep = 0, _core.F32, None
        if weight is not None:
            keep = weight.contiguous()
            gamma, param_type = keep.data_ptr(), _DTYPES[keep.dtype]
        dgamma = torch.empty(cols) if want_w else None
        dbeta = torch.empty(cols) if want_b else None
        types = (_DTYPES[xc.dtype] | _DTYPES[dyc.dtype] << 4 |
                 _DTYPES[dx.dtype] << 8 | param_type << 12)
        status = _core.backward(
            ctx.kind, rows, cols, xc.data_ptr(), dyc.data_ptr(),
            dx.data_ptr(), types, gamma, ctx.gamma_offset, ctx.eps,
            0 if dgamma is None else dgamma.data_ptr(),
            0 if dbeta is None else dbeta.data_ptr(), torch.get_num_threads(),
            *([t.data_ptr() for t in stats] if stats else (0, 0)))
        del keep
        dw, db = _weight_grads(ctx, status, dgamma, dbeta, weight)
        return None, None, dx.view(x.shape), None, dw, db, None, None, None, \
            None


def _tensor(t, name, who):
    """The simdnorm dtype of a tensor that may be normalized (a strided CPU
    tensor of float32, bfloat16 or float16); raises for any other."""
    dtype = _DTYPES.get(getattr(t, "dtype", None))
    if dtype is not None and t.is_cpu and t.layout is torch.strided:
        return dtype
    _rows.dtype_of(who, name, t, torch.Tensor, _DTYPES,
                   "torch.float32, torch.bfloat16 and torch.float16")
    raise _rows.error(_core.INVALID_ARGUMENT, who,
                      f"{name} is a {t.layout} tensor on {t.device}; "
                      "simdnorm takes strided CPU tensors",
                      TypeError)


def _shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return torch.Size(normalized_shape)


def _param(who, name, p, shape):
    """Checks a weight or bias; its simdnorm dtype."""
    dtype = _tensor(p, name, who)
    if p.shape != shape:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name} has shape {tuple(p.shape)}, "
                          f"normalized_shape is {tuple(shape)}")
    return dtype


def _params(who, shape, weight, bias):
    """(gamma address, beta address, param dtype, tensors to keep alive):
    contiguous, of one dtype (float32 when theirs differ: exact)."""
    if weight is None:
        if bias is None:
            return 0, 0, _core.F32, None
        param_type = _param(who, "bias", bias, shape)
    else:
        param_type = _param(who, "weight", weight, shape)
        if bias is not None and _param(who, "bias", bias,
                                       shape) != param_type:
            param_type = _core.F32
            weight = weight.float()
            bias = bias.float()
    gamma = beta = 0
    if weight is not None:
        if not weight.is_contiguous():
            weight = weight.contiguous()
        gamma = weight.data_ptr()
    if bias is not None:
        if not bias.is_contiguous():
            bias = bias.contiguous()
        beta = bias.data_ptr()
    return gamma, beta, param_type, (weight, bias)


def _rows_of(t, ndim):
    """`t` as a View whose rows are its last `ndim` dimensions flattened,
    or None when those are not one contiguous run of elements."""
    shape = t.shape
    strides = t.stride()
    expected = 1
    for n, s in zip(reversed(shape[len(shape) - ndim:]),
                    reversed(strides[len(strides) - ndim:])):
        if n != 1 and s != expected:
            return None
        expected *= n
    lead = tuple(shape[:len(shape) - ndim])
    dtype = _DTYPES[t.dtype]
    return lead, _rows.make_view(t.data_ptr(), dtype, lead + (expected,),
                                 tuple(strides[:len(strides) - ndim]) + (1,))


def _run(who, kind, x, y, ndim, cols, gamma, beta, param_type, eps, flags,
         gamma_offset=0.0, residual=None, sum_out=None):
    """Normalizes x into y (tensors of the same shape; rows: their last
    `ndim` dimensions), through copies where a layout does not fit."""
    tensors = [x, y, residual, sum_out]
    views = [None] * 4
    lead = None
    copies = {}
    for i, t in enumerate(tensors):
        if t is None:
            continue
        described = _rows_of(t, ndim)
        if described is None or any(s < cols and n > 1 for n, s in zip(
                described[0], described[1].strides)):
            # A layout the library cannot take: computed through a
            # contiguous copy (inputs) or written back from one (outputs).
            copies[i] = t.contiguous()
            if i in (1, 3):
                # The output aliases an input exactly (in place)? Share its
                # copy, so that in-place stays in place.
                for j in (0, 2):
                    if tensors[j] is t and j in copies:
                        copies[i] = copies[j]
            described = _rows_of(copies[i], ndim)
        lead, views[i] = described
    _rows.run(who, kind, cols, lead, views[0], views[1], gamma, beta,
              param_type, eps, flags=flags, gamma_offset=gamma_offset,
              max_threads=torch.get_num_threads(), residual=views[2],
              sum_out=views[3])
    for i in (1, 3):
        if i in copies:
            tensors[i].copy_(copies[i])


def _normalize(who, kind, x, normalized_shape, weight, bias, eps, flags,
               y_dtype=None, gamma_offset=0.0, stats=()):
    """The functional forms: y = a new tensor of x's shape. The common call
    (contiguous x, one normalized dimension, dense weights of one dtype)
    goes through _common_call, which reads the tensors' attributes in C++:
    in Python they were half the time of a one-row call. stats: () or, for
    a contiguous x, two float32 tensors of a value per row that get the
    rows' mean and rstd (simdnorm_desc's mean_out, rstd_out)."""
    if y_dtype is None and not stats:
        y = _common_call(kind, x, normalized_shape, weight, bias, eps,
                         gamma_offset, flags)
        if y is not None:
            if type(y) is int:
                raise _rows.error(y, who)
            return y
    if _needs_grad(x, weight, bias):
        _tensor(x, "input", who)
        return _Norm.apply(who, kind, x, normalized_shape, weight, bias, eps,
                           flags, y_dtype, gamma_offset)
    x_type = _tensor(x, "input", who)
    if type(normalized_shape) is int:
        shape = (normalized_shape,)
    else:
        shape = tuple(normalized_shape)
    ndim = len(shape)
    if ndim == 1:
        cols = shape[0]
        if x.dim() == 0 or x.shape[-1] != cols:
            ndim = 0  # reported below
    else:
        cols = math.prod(shape)
        if x.dim() < ndim or x.shape[x.dim() - ndim:] != shape:
            ndim = 0
    if ndim == 0:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"input of shape {tuple(x.shape)} does not end in "
                          f"normalized_shape {shape}")
    if cols == 0:
        raise _rows.error(_core.INVALID_SHAPE, who, "rows of 0 elements")
    if weight is None and bias is None:
        gamma = beta = 0
        param_type = _core.F32
        keep = None
    else:
        gamma, beta, param_type, keep = _params(who, shape, weight, bias)
    contiguous = x.is_contiguous()
    if y_dtype is None:
        y_type = x_type
        y = torch.empty_like(x) if contiguous else torch.empty_like(
            x, memory_format=torch.contiguous_format)
    else:
        y_type = _DTYPES[y_dtype]
        y = torch.empty_like(x, dtype=y_dtype,
                             memory_format=torch.contiguous_format)
    if contiguous:
        # The common case, without the general planner: one dense call.
        rows = x.numel() // cols
        if rows:
            saving = (0, 0, 0, 0) + tuple(t.data_ptr() for t in stats)
            status = _core.normalize(
                kind, rows, cols, x.data_ptr(), cols, y.data_ptr(), cols,
                gamma, beta, x_type | y_type << 4 | param_type << 8, eps,
                gamma_offset, flags, torch.get_num_threads(),
                *(saving if stats else ()))
            if status:
                raise _rows.error(status, who)
    else:
        _run(who, kind, x, y, ndim, cols, gamma, beta, param_type,
             float(eps), flags, gamma_offset)
    del keep
    return y


def _rounding(fast_rounding):
    return _core.FAST_ROUNDING if fast_rounding else 0


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *,
               fast_rounding=False):
    """torch.nn.functional.layer_norm: (x - mean) / sqrt(var + eps) *
    weight + bias over the last len(normalized_shape) dimensions, in the
    input's dtype. 16-bit results are correctly rounded; fast_rounding=True
    rounds the float32 result instead (within one ulp, about 3x faster:
    SIMDNORM_FAST_ROUNDING)."""
    # The common call first, without _normalize's frame (~0.2 us a call).
    who = "simdnorm.torch.layer_norm"
    flags = _rounding(fast_rounding)
    y = _common_call(_core.LAYERNORM, input, normalized_shape, weight, bias,
                     eps, 0.0, flags)
    if y is not None:
        if type(y) is int:
            raise _rows.error(y, who)
        return y
    return _normalize(who, _core.LAYERNORM, input, normalized_shape, weight,
                      bias, eps, flags)


def rms_norm(input, normalized_shape, weight=None, eps=None, *,
             fast_rounding=False):
    """torch.nn.functional.rms_norm (PyTorch 2.4): x / sqrt(mean(x^2) +
    eps) over the last len(normalized_shape) dimensions, rounded to the
    input's dtype, times weight, in the input's dtype. eps=None is
    torch.finfo(input.dtype).eps. fast_rounding as in layer_norm."""
    who = "simdnorm.torch.rms_norm"
    flags = _core.ROUND_NORMALIZED | _rounding(fast_rounding)
    if eps is not None:  # the common call first, as in layer_norm
        y = _common_call(_core.RMSNORM, input, normalized_shape, weight, None,
                         eps, 0.0, flags)
        if y is not None:
            if type(y) is int:
                raise _rows.error(y, who)
            return y
    if eps is None:
        _tensor(input, "input", who)
        eps = torch.finfo(input.dtype).eps
    return _normalize(who, _core.RMSNORM, input, normalized_shape, weight,
                      None, eps, flags)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """torch.nn.functional.normalize for p = 2: x / max(||x||_2, eps) along
    `dim` (negative counts from the end), in the input's dtype (L2
    normalization of the registry; other p raise ValueError). The last
    dimension is normalized in place of its rows; any other is moved last,
    made contiguous, normalized and moved back (a copy each way). out: as
    F.normalize's."""
    who = "simdnorm.torch.normalize"
    x_type = _tensor(input, "input", who)
    if p != 2:
        raise ValueError(f"{who}: p=2 only (p={p}): simdnorm computes L2 "
                         "normalization")
    ndim = input.dim()
    d = dim + ndim if dim < 0 else dim
    if not 0 <= d < max(ndim, 1):
        raise IndexError(f"{who}: dim {dim} out of range for a {ndim}-d "
                         "input")
    if ndim == 0 or d == ndim - 1:
        y = _normalize(who, _core.L2NORM, input, input.shape[-1:], None,
                       None, eps, 0)
    else:
        moved = input.movedim(d, -1).contiguous()
        y = _normalize(who, _core.L2NORM, moved, moved.shape[-1:], None,
                       None, eps, 0).movedim(-1, d).contiguous()
    if out is None:
        return y
    if _tensor(out, "out", who) != x_type or out.shape != input.shape:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          "out must have input's shape and dtype")
    return out.copy_(y)


# GroupNorm and InstanceNorm (simdnorm_group_norm, and
# simdnorm_group_norm_backward under autograd).


def _channels_last(t):
    """True when an (N, C, *spatial) tensor is laid out channels last
    (NHWC: C innermost, then the spatial dimensions, then N), as
    torch.channels_last and channels_last_3d are; size-1 dimensions may
    have any stride."""
    shape, strides = t.shape, t.stride()
    c = shape[1]
    if c > 1 and strides[1] != 1:
        return False
    expected = c
    for i in range(len(shape) - 1, 1, -1):
        if shape[i] != 1 and strides[i] != expected:
            return False
        expected *= shape[i]
    return shape[0] == 1 or strides[0] == expected


def _layout(x):
    """(x, layout, y): an (N, C, *spatial) tensor read in place as NCHW
    (contiguous) or NHWC (channels last), any other layout through a
    contiguous copy; y a new tensor of x's dtype and memory format."""
    if x.is_contiguous():
        return x, _core.NCHW, torch.empty(x.shape, dtype=x.dtype)
    if x.dim() > 2 and _channels_last(x):
        # (N, *spatial, C) dense, seen as (N, C, *spatial): x's strides.
        n, c = x.shape[0], x.shape[1]
        y = torch.empty((n,) + tuple(x.shape[2:]) + (c,),
                        dtype=x.dtype).movedim(-1, 1)
        return x, _core.NHWC, y
    x = x.contiguous()
    return x, _core.NCHW, torch.empty(x.shape, dtype=x.dtype)


def _group_params(who, c, weight, bias):
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            _tensor(p, name, who)
            if tuple(p.shape) != (c,):
                raise _rows.error(_core.INVALID_SHAPE, who,
                                  f"{name} has shape {tuple(p.shape)}, "
                                  f"input has {c} channels")
    return _params(who, (c,), weight, bias)


def _in_layout(t, layout):
    """t (N, C, *spatial) dense in `layout` (NCHW: contiguous; NHWC:
    channels innermost), copied only when it is not already."""
    if layout == _core.NCHW:
        return t.contiguous()
    return t.movedim(1, -1).contiguous().movedim(-1, 1)


class _GroupNorm(torch.autograd.Function):
    """group_norm under autograd: the forward as without grad, saving each
    (sample, group)'s mean and rstd (as torch's native_group_norm does);
    the backward through simdnorm_group_norm_backward on those statistics
    (no statistics pass; dx, dweight and dbias in x's layout and dtype)."""

    @staticmethod
    def forward(ctx, who, x, num_groups, weight, bias, eps, fast_rounding):
        # Grad mode is off in here: _group_norm computes y directly.
        y, xl, layout, stats = _group_norm(who, x, num_groups, weight, bias,
                                           eps, read=True,
                                           fast_rounding=fast_rounding)
        ctx.save_for_backward(xl, weight, *stats)
        ctx.who, ctx.num_groups, ctx.eps, ctx.layout = who, num_groups, \
            float(eps), layout
        if bias is not None:
            ctx.bias_dtype, ctx.bias_shape = bias.dtype, bias.shape
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        want_w, want_b = ctx.needs_input_grad[3], ctx.needs_input_grad[4]
        n, c = x.shape[0], x.shape[1]
        dyl = _in_layout(dy.to(x.dtype), ctx.layout)
        dx = torch.empty_like(dyl)  # dense in that layout too
        gamma, param_type, keep = 0, _core.F32, None
        if weight is not None:
            keep = weight.detach().contiguous()
            gamma, param_type = keep.data_ptr(), _DTYPES[keep.dtype]
        dgamma = torch.empty(c) if want_w else None
        dbeta = torch.empty(c) if want_b else None
        x_type = _DTYPES[x.dtype]
        status = _core.group_norm_backward(
            n, c, math.prod(x.shape[2:]), ctx.num_groups, ctx.layout,
            x.data_ptr(), dyl.data_ptr(), dx.data_ptr(),
            x_type | x_type << 4 | x_type << 8 | param_type << 12, gamma,
            ctx.eps, 0 if dgamma is None else dgamma.data_ptr(),
            0 if dbeta is None else dbeta.data_ptr(), torch.get_num_threads(),
            mean.data_ptr(), rstd.data_ptr())
        del keep
        dw, db = _weight_grads(ctx, status, dgamma, dbeta, weight)
        return None, dx, None, dw, db, None, None


def _group_norm(who, x, num_groups, weight, bias, eps, read=False,
                fast_rounding=False):
    """GroupNorm of an (N, C, *spatial) tensor into a new one of its dtype
    and memory format: contiguous tensors are read as NCHW, channels-last
    ones as NHWC (no copy); any other layout through a contiguous copy.
    Under autograd, through _GroupNorm. With `read`, (y, the tensor read,
    its layout, (mean, rstd)): the saved statistics, N * num_groups
    float32 each (simdnorm_group_desc's mean_out, rstd_out)."""
    x_type = _tensor(x, "input", who)
    if _needs_grad(x, weight, bias):
        return _GroupNorm.apply(who, x, num_groups, weight, bias, eps,
                                fast_rounding)
    if x.dim() < 2:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"input has shape {tuple(x.shape)}; expected (N, "
                          "C, *spatial)")
    n, c = x.shape[0], x.shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or (
            num_groups < 1):
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"num_groups is {num_groups!r}, not a positive int")
    if c % num_groups:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"num_groups {num_groups} does not divide the {c} "
                          "channels")
    gamma, beta, param_type, keep = _group_params(who, c, weight, bias)
    hw = math.prod(x.shape[2:])
    x, layout, y = _layout(x)
    stats = (torch.empty(n * num_groups), torch.empty(n * num_groups)) if (
        read) else ()
    if n == 0:
        return (y, x, layout, stats) if read else y
    flags = _rounding(fast_rounding)
    status = _core.group_norm(
        n, c, hw, num_groups, layout, x.data_ptr(), y.data_ptr(),
        x_type | x_type << 4 | param_type << 8, gamma, beta, float(eps),
        flags, torch.get_num_threads(),
        *(t.data_ptr() for t in stats))
    del keep
    if status:
        raise _rows.error(status, who)
    return (y, x, layout, stats) if read else y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, *,
               fast_rounding=False):
    """torch.nn.functional.group_norm: each sample's C channels in
    num_groups groups of consecutive channels, each (sample, group)
    normalized over its channels and positions, then weight[c] and
    bias[c]. float32, bfloat16 and float16 input, weights of its dtype or
    float32; the output in the input's dtype and memory format
    (contiguous or channels_last, read in place). 16-bit results are
    correctly rounded; fast_rounding=True rounds the float32 result
    instead (SIMDNORM_FAST_ROUNDING). Under autograd the backward pass is
    simdnorm_group_norm_backward (dx in the input's dtype, dweight and
    dbias summed in float32)."""
    who = "simdnorm.torch.group_norm"
    if _group_call is not None:
        # NCHW or NHWC in place, without grad: all in C++ (~1 us; the
        # Python path below costs 6-12 us a call).
        y = _group_call(input, num_groups, weight, bias, eps,
                        _rounding(fast_rounding))
        if y is not None:
            if type(y) is int:
                raise _rows.error(y, who)
            return y
    return _group_norm(who, input, num_groups, weight, bias, eps,
                       fast_rounding=fast_rounding)


def instance_norm(input, running_mean=None, running_var=None, weight=None,
                  bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """torch.nn.functional.instance_norm. use_input_stats=True: GroupNorm
    with one group per channel, and running_mean / running_var (when
    given) updated as torch does: running = (1 - momentum) * running +
    momentum * the instances' mean (and unbiased variance) averaged over
    the batch. use_input_stats=False: the running statistics normalize
    each channel."""
    who = "simdnorm.torch.instance_norm"
    _tensor(input, "input", who)
    if input.dim() < 2:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"input has shape {tuple(input.shape)}; expected "
                          "(N, C, *spatial)")
    c = input.shape[1]
    if not use_input_stats:
        return _instance_norm_running(who, input, running_mean, running_var,
                                      weight, bias, eps)
    hw = math.prod(input.shape[2:])
    if hw == 1:
        raise ValueError(f"{who}: expected more than 1 spatial element when "
                         f"training, got input size {list(input.shape)}")
    y = _group_norm(who, input, c, weight, bias, eps)
    if running_mean is not None or running_var is not None:
        # The statistics torch updates them with, from a float64 pass over
        # the input (the kernel does not return its own).
        with torch.no_grad():
            x = input.detach().reshape(input.shape[0], c, hw).double()
            for running, batch in (
                    (running_mean, lambda: x.mean(2)),
                    (running_var, lambda: x.var(2, unbiased=True))):
                if running is None:
                    continue
                update = batch().mean(0) * momentum + running.double() * (
                    1 - momentum)
                running.copy_(update)
    return y


def _instance_norm_running(who, x, running_mean, running_var, weight, bias,
                           eps):
    """use_input_stats=False: (x - running_mean) / sqrt(running_var + eps)
    * weight + bias per channel, which is BatchNorm's inference."""
    if running_mean is None or running_var is None:
        raise ValueError(f"{who}: use_input_stats=False needs running_mean "
                         "and running_var")
    return _batch_norm(who, x, running_mean, running_var, weight, bias,
                       False, 0.0, eps)


# BatchNorm (simdnorm_batch_norm, simdnorm_batch_norm_backward).


def _running(who, name, t, c):
    """(address, float32 tensor the kernel uses, t): a running statistic
    of c elements; a float32 contiguous one is used in place, any other
    floating one through a float32 temporary (copied back by the
    caller)."""
    if t is None:
        return 0, None, None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{who}: {name} must be a torch.Tensor, not "
                        f"{type(t).__name__}")
    if not t.is_floating_point() or not t.is_cpu or (
            t.layout is not torch.strided):
        raise _rows.dtype_error(who, f"{name} is a {t.dtype} tensor on "
                                f"{t.device}; simdnorm takes floating CPU "
                                "tensors")
    if t.numel() != c or t.dim() != 1:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"{name} has shape {tuple(t.shape)}, input has "
                          f"{c} channels")
    work = t
    if t.dtype != torch.float32 or not t.is_contiguous():
        work = t.detach().to(torch.float32, memory_format=(
            torch.contiguous_format), copy=True)
    return work.data_ptr(), work, t


def _batch_norm(who, x, running_mean, running_var, weight, bias, training,
                momentum, eps, fast_rounding=False, saved=None):
    """BatchNorm of an (N, C, *spatial) tensor into a new one of its dtype
    and memory format (layouts as _group_norm's); running statistics
    updated in place in training, and `saved` (training: two float32
    tensors of C, or None) set to the batch's mean and invstd
    (simdnorm_batch_desc's save_mean, save_invstd). Nothing is written on
    an error."""
    x_type = _tensor(x, "input", who)
    if _needs_grad(x, weight, bias):
        return _BatchNorm.apply(who, x, running_mean, running_var, weight,
                                bias, training, momentum, eps, fast_rounding)
    if x.dim() < 2:
        raise _rows.error(_core.INVALID_SHAPE, who,
                          f"input has shape {tuple(x.shape)}; expected (N, "
                          "C, *spatial)")
    if momentum is None:
        raise NotImplementedError(
            f"{who}: momentum=None (a cumulative moving average) is not "
            "supported; pass the factor (torch's BatchNorm modules pass "
            "1 / num_batches_tracked)")
    training = bool(training)
    n, c = x.shape[0], x.shape[1]
    hw = math.prod(x.shape[2:])
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{who}: running_mean and running_var must be "
                         "given both or neither")
    if not training and running_mean is None:
        raise ValueError(f"{who}: inference (training=False) needs "
                         "running_mean and running_var")
    mean_ptr, mean_work, mean = _running(who, "running_mean", running_mean,
                                         c)
    var_ptr, var_work, var = _running(who, "running_var", running_var, c)
    gamma, beta, param_type, keep = _group_params(who, c, weight, bias)
    if training and n * hw == 1:
        raise ValueError(f"{who}: expected more than 1 value per channel "
                         f"when training, got input size {list(x.shape)}")
    x, layout, y = _layout(x)
    if n == 0:
        return y
    flags = _rounding(fast_rounding)
    status = _core.batch_norm(
        n, c, hw, layout, x.data_ptr(), y.data_ptr(),
        x_type | x_type << 4 | param_type << 8, gamma, beta, mean_ptr,
        var_ptr, *((t.data_ptr() for t in saved) if saved else (0, 0)),
        float(momentum), float(eps), training, flags,
        torch.get_num_threads())
    del keep
    if status:
        raise _rows.error(status, who)
    if training:
        with torch.no_grad():
            for work, running in ((mean_work, mean), (var_work, var)):
                if work is not None and work is not running:
                    running.copy_(work)
    return y


class _BatchNorm(torch.autograd.Function):
    """batch_norm under autograd: the forward as without grad (running
    statistics updated in place in training), the backward through
    simdnorm_batch_norm_backward (lib/batch_backward-inl.h): in training
    on the batch's mean and invstd that the forward saved (torch's
    native_batch_norm's save_mean, save_invstd; no statistics pass), in
    inference on the running statistics of the forward's call."""

    @staticmethod
    def forward(ctx, who, x, running_mean, running_var, weight, bias,
                training, momentum, eps, fast_rounding):
        # Grad mode is off in here: _batch_norm computes y directly.
        saved = None
        if training and x.dim() >= 2:
            saved = (torch.empty(x.shape[1]), torch.empty(x.shape[1]))
        y = _batch_norm(who, x, running_mean, running_var, weight, bias,
                        training, momentum, eps, fast_rounding, saved)
        ctx.who, ctx.training, ctx.eps = who, bool(training), float(eps)
        stats = saved or ()
        if not ctx.training:
            # The constants of dx, as float32, copied: a later update of
            # the buffers must not change this graph's gradient.
            stats = tuple(t.detach().to(torch.float32, copy=True)
                          for t in (running_mean, running_var))
        ctx.save_for_backward(x, weight, *stats)
        if bias is not None:
            ctx.bias_shape, ctx.bias_dtype = bias.shape, bias.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, *stats = ctx.saved_tensors
        want_w, want_b = ctx.needs_input_grad[4], ctx.needs_input_grad[5]
        n, c = x.shape[0], x.shape[1]
        hw = math.prod(x.shape[2:])
        # x as the forward read it (NCHW, or NHWC in place); dy and dx in
        # the same layout.
        if x.dim() > 2 and not x.is_contiguous() and _channels_last(x):
            layout = _core.NHWC
            dy = dy.movedim(1, -1).contiguous().movedim(-1, 1)
        else:
            layout = _core.NCHW
            x, dy = x.contiguous(), dy.contiguous()
        if dy.dtype not in _DTYPES:
            dy = dy.to(x.dtype)
        dx = torch.empty_like(dy, dtype=x.dtype)
        gamma, param_type, keep = 0, _core.F32, None
        if weight is not None:
            keep = weight.contiguous()
            gamma, param_type = keep.data_ptr(), _DTYPES[keep.dtype]
        # Inference: the running statistics; training: the saved ones.
        rm, rv = (t.data_ptr() for t in stats) if stats else (0, 0)
        saved = (rm, rv) if ctx.training else (0, 0)
        if ctx.training:
            rm = rv = 0
        dgamma = torch.empty(c) if want_w else None
        dbeta = torch.empty(c) if want_b else None
        types = (_DTYPES[x.dtype] | _DTYPES[dy.dtype] << 4 |
                 _DTYPES[dx.dtype] << 8 | param_type << 12)
        status = _core.batch_norm_backward(
            n, c, hw, layout, x.data_ptr(), dy.data_ptr(), dx.data_ptr(),
            types, gamma, rm, rv, ctx.eps, ctx.training,
            0 if dgamma is None else dgamma.data_ptr(),
            0 if dbeta is None else dbeta.data_ptr(), torch.get_num_threads(),
            *saved)
        del keep
        dw, db = _weight_grads(ctx, status, dgamma, dbeta, weight)
        return None, dx, None, None, dw, db, None, None, None, None


def batch_norm(input, running_mean, running_var, weight=None, bias=None,
               training=False, momentum=0.1, eps=1e-5, *,
               fast_rounding=False):
    """torch.nn.functional.batch_norm: each channel normalized over the
    batch and its positions, by the batch's statistics (training; the
    running ones, when given, updated in place: running = (1 - momentum)
    * running + momentum * the batch's mean and unbiased variance) or by
    running_mean and running_var (training=False, where they are
    required). float32, bfloat16 and float16 input, weights of its dtype
    or float32, running statistics float32 (others through a float32
    copy); the output in the input's dtype and memory format (contiguous
    or channels_last, read in place). 16-bit results are correctly
    rounded; fast_rounding=True rounds the float32 result instead.
    momentum=None raises NotImplementedError. Under
    autograd, the gradients of simdnorm_batch_norm_backward (see the
    module's documentation)."""
    return _batch_norm("simdnorm.torch.batch_norm", input, running_mean,
                       running_var, weight, bias, training, momentum, eps,
                       fast_rounding)


# Custom ops under torch.ops.simdnorm, with vLLM's schemas (csrc/cpu/
# torch_bindings.cpp), whose `Tensor!` marks what each writes in place;
# torch 1.13 parses an unnamed `Tensor!` into an odd alias set, so the sets
# are named here (`Tensor(a!)`), as torch's own schemas do.
_lib = torch.library.Library("simdnorm", "DEF")
_lib.define("rms_norm(Tensor(a!) out, Tensor input, Tensor weight, "
            "float epsilon) -> ()")
_lib.define("fused_add_rms_norm(Tensor(a!) input, Tensor(b!) residual, "
            "Tensor weight, float epsilon) -> ()")
_lib.define("layer_norm(Tensor(a!) out, Tensor input, Tensor? weight, "
            "Tensor? bias, float epsilon) -> ()")


def _op_check(who, out, x, weight, bias=None, residual=None):
    """Checks of an op's tensors: dtypes, shapes, grad. Returns (x dtype,
    cols, gamma, beta, param dtype, kept tensors)."""
    x_type = _tensor(x, "input", who)
    if x.dim() == 0:
        raise _rows.error(_core.INVALID_SHAPE, who, "input is 0-d")
    for name, t in (("out", out), ("residual", residual)):
        if t is None:
            continue
        t_type = _tensor(t, name, who)
        if t.shape != x.shape:
            raise _rows.error(_core.INVALID_SHAPE, who,
                              f"{name} has shape {tuple(t.shape)}, input "
                              f"{tuple(x.shape)}")
        if name == "residual" and t_type != x_type:
            raise _rows.dtype_error(
                who, f"residual has dtype {t.dtype}, input {x.dtype}")
    _check_grad(who, x, weight, bias)
    for name, t in (("out", out), ("residual", residual)):
        if t is not None and t.requires_grad and _is_grad_enabled():
            raise _no_grad_error(who, name)
    shape = (x.shape[-1],)
    gamma, beta, param_type, keep = _params(who, shape, weight, bias)
    return x.shape[-1], gamma, beta, param_type, keep


def _rms_norm_op(out, input, weight, epsilon):
    who = "torch.ops.simdnorm.rms_norm"
    cols, gamma, beta, param_type, keep = _op_check(who, out, input, weight)
    _run(who, _core.RMSNORM, input, out, 1, cols, gamma, beta, param_type,
         epsilon, _core.ROUND_NORMALIZED)
    del keep


def _fused_add_rms_norm_op(input, residual, weight, epsilon):
    who = "torch.ops.simdnorm.fused_add_rms_norm"
    cols, gamma, beta, param_type, keep = _op_check(who, None, input, weight,
                                                    residual=residual)
    _run(who, _core.RMSNORM, input, input, 1, cols, gamma, beta, param_type,
         epsilon, _core.ROUND_NORMALIZED, residual=residual,
         sum_out=residual)
    del keep


def _layer_norm_op(out, input, weight, bias, epsilon):
    who = "torch.ops.simdnorm.layer_norm"
    cols, gamma, beta, param_type, keep = _op_check(who, out, input, weight,
                                                    bias)
    _run(who, _core.LAYERNORM, input, out, 1, cols, gamma, beta, param_type,
         epsilon, 0)
    del keep


_lib.impl("rms_norm", _rms_norm_op, "CPU")
_lib.impl("fused_add_rms_norm", _fused_add_rms_norm_op, "CPU")
_lib.impl("layer_norm", _layer_norm_op, "CPU")


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm (same constructor, parameters and state_dict)
    computed by simdnorm; fast_rounding as in layer_norm."""

    def __init__(self, *args, fast_rounding=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fast_rounding = fast_rounding

    def extra_repr(self):
        return super().extra_repr() + (
            ", fast_rounding=True" if self.fast_rounding else "")

    def forward(self, input):
        return _normalize("simdnorm.torch.LayerNorm", _core.LAYERNORM, input,
                          self.normalized_shape, self.weight, self.bias,
                          self.eps, _rounding(self.fast_rounding))


class RMSNorm(torch.nn.Module):
    """Hugging Face's LlamaRMSNorm (and Qwen2RMSNorm, Mistral's, ...): a
    `weight` of hidden_size ones, `variance_epsilon`; the output is
    weight * (x / rms).to(x.dtype), in the dtype torch promotes the two to,
    with x / rms rounded to x's dtype first.

    weight_offset=1 is Gemma's RMSNorm instead: weight initialized to zeros,
    the scale (1 + weight) in float32, one rounding to x's dtype.
    fast_rounding as in layer_norm."""

    def __init__(self, hidden_size, eps=1e-6, *, weight_offset=0.0,
                 fast_rounding=False, device=None, dtype=None):
        super().__init__()
        self.fast_rounding = fast_rounding
        init = torch.zeros if weight_offset else torch.ones
        self.weight = torch.nn.Parameter(
            init(hidden_size, device=device, dtype=dtype))
        self.variance_epsilon = eps
        self.weight_offset = float(weight_offset)

    @property
    def eps(self):
        return self.variance_epsilon

    def forward(self, hidden_states):
        x = hidden_states
        flags = _rounding(self.fast_rounding)
        if self.weight_offset:
            return _normalize("simdnorm.torch.RMSNorm", _core.RMSNORM, x,
                              self.weight.shape, self.weight, None,
                              self.variance_epsilon, flags,
                              gamma_offset=self.weight_offset)
        y_dtype = None
        if self.weight.dtype != x.dtype:
            y_dtype = torch.promote_types(self.weight.dtype, x.dtype)
        return _normalize("simdnorm.torch.RMSNorm", _core.RMSNORM, x,
                          self.weight.shape, self.weight, None,
                          self.variance_epsilon,
                          _core.ROUND_NORMALIZED | flags, y_dtype=y_dtype)

    def extra_repr(self):
        text = f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"
        if self.weight_offset:
            text += f", weight_offset={self.weight_offset:g}"
        return text + (", fast_rounding=True" if self.fast_rounding else "")


class GroupNorm(torch.nn.GroupNorm):
    """torch.nn.GroupNorm (same constructor, parameters and state_dict)
    computed by simdnorm (group_norm), with its backward pass."""

    def forward(self, input):
        return _group_norm("simdnorm.torch.GroupNorm", input,
                           self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNormMixin:
    """torch's _InstanceNorm with F.instance_norm replaced by simdnorm's:
    the same checks, no-batch inputs, running statistics and state_dict."""

    def _apply_instance_norm(self, input):
        return instance_norm(
            input, self.running_mean, self.running_var, self.weight,
            self.bias, self.training or not self.track_running_stats,
            self.momentum, self.eps)


class InstanceNorm1d(_InstanceNormMixin, torch.nn.InstanceNorm1d):
    """torch.nn.InstanceNorm1d computed by simdnorm (instance_norm)."""


class InstanceNorm2d(_InstanceNormMixin, torch.nn.InstanceNorm2d):
    """torch.nn.InstanceNorm2d computed by simdnorm (instance_norm)."""


class InstanceNorm3d(_InstanceNormMixin, torch.nn.InstanceNorm3d):
    """torch.nn.InstanceNorm3d computed by simdnorm (instance_norm)."""


class _BatchNormMixin:
    """torch's _BatchNorm.forward with F.batch_norm replaced by simdnorm's:
    the same checks, training flag, track_running_stats and
    num_batches_tracked."""

    def forward(self, input):
        if self.momentum is None:
            # A cumulative moving average (1 / num_batches_tracked): left
            # to torch's own forward rather than refused.
            return super().forward(input)
        self._check_input_dim(input)
        track = self.training and self.track_running_stats
        if self.training:
            bn_training = True
        else:
            bn_training = self.running_mean is None and (
                self.running_var is None)
        use_running = not self.training or self.track_running_stats
        y = _batch_norm(
            f"simdnorm.torch.{type(self).__name__}", input,
            self.running_mean if use_running else None,
            self.running_var if use_running else None, self.weight,
            self.bias, bn_training, self.momentum, self.eps)
        # Counted after the call (torch counts before): a call that raises
        # changes nothing.
        if track and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        return y


class BatchNorm1d(_BatchNormMixin, torch.nn.BatchNorm1d):
    """torch.nn.BatchNorm1d computed by simdnorm (batch_norm), with its
    backward pass."""


class BatchNorm2d(_BatchNormMixin, torch.nn.BatchNorm2d):
    """torch.nn.BatchNorm2d computed by simdnorm (batch_norm), with its
    backward pass."""


class BatchNorm3d(_BatchNormMixin, torch.nn.BatchNorm3d):
    """torch.nn.BatchNorm3d computed by simdnorm (batch_norm), with its
    backward pass."""


_BATCH_NORMS = {torch.nn.BatchNorm1d: BatchNorm1d,
                torch.nn.BatchNorm2d: BatchNorm2d,
                torch.nn.BatchNorm3d: BatchNorm3d}


_INSTANCE_NORMS = {torch.nn.InstanceNorm1d: InstanceNorm1d,
                   torch.nn.InstanceNorm2d: InstanceNorm2d,
                   torch.nn.InstanceNorm3d: InstanceNorm3d}


# Hugging Face RMSNorm classes that scale by (1 + weight) (Gemma's, and the
# models that copied it): a name check, as their attributes are Llama's.
_OFFSET_PREFIXES = ("Gemma", "Qwen3Next")


def _replacement(module, fast_rounding):
    """simdnorm's module for a torch or Hugging Face norm module (sharing
    its parameters), or None for any other module."""
    if isinstance(module,
                  (LayerNorm, RMSNorm, GroupNorm, _InstanceNormMixin,
                   _BatchNormMixin)):
        return None
    cls = type(module)
    if cls is torch.nn.GroupNorm:
        new = GroupNorm(module.num_groups, module.num_channels, module.eps,
                        module.affine, device="meta")
        new.weight = module.weight
        new.bias = module.bias
    elif cls in _INSTANCE_NORMS or cls in _BATCH_NORMS:
        new = (_INSTANCE_NORMS.get(cls) or _BATCH_NORMS[cls])(
            module.num_features, module.eps, module.momentum, module.affine,
            module.track_running_stats, device="meta")
        new.weight = module.weight
        new.bias = module.bias
        # Buffers shared as the parameters are (None when not tracked).
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            setattr(new, name, getattr(module, name))
    elif isinstance(module, torch.nn.LayerNorm):
        if cls.forward is not torch.nn.LayerNorm.forward:
            return None  # a subclass with its own forward
        new = LayerNorm(module.normalized_shape, module.eps,
                        module.elementwise_affine, device="meta",
                        fast_rounding=fast_rounding)
        new.weight = module.weight
        new.bias = module.bias
    elif cls.__name__.endswith("RMSNorm") and cls.__module__.split(
            ".")[0] != "torch":
        weight = getattr(module, "weight", None)
        eps = getattr(module, "variance_epsilon", getattr(module, "eps",
                                                          None))
        if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or (
                not isinstance(eps, (int, float))):
            return None
        offset = 1.0 if cls.__name__.startswith(_OFFSET_PREFIXES) else 0.0
        new = RMSNorm(weight.shape[0], eps, weight_offset=offset,
                      fast_rounding=fast_rounding, device="meta")
        new.weight = weight
    else:
        return None
    new.train(module.training)
    return new


def patch(model, *, fast_rounding=False):
    """Swaps, in place, every torch.nn.LayerNorm, torch.nn.GroupNorm,
    torch.nn.InstanceNorm1d/2d/3d, torch.nn.BatchNorm1d/2d/3d and every
    Hugging Face-style RMSNorm (a class named *RMSNorm with a 1-d `weight`
    and `variance_epsilon` or `eps`) inside `model` for simdnorm's module
    of the same name, sharing their parameters (so their weights are kept).
    Gemma's classes (and Qwen3Next's), which scale by (1 + weight), become
    RMSNorm(weight_offset=1). Returns how many modules were swapped. Hooks
    registered on the old modules are not carried over; `model` itself is
    not swapped (only its children). fast_rounding=True makes the new
    modules round their 16-bit results from float32 (within one ulp, about
    3x faster) instead of correctly."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            new = _replacement(child, fast_rounding)
            if new is not None:
                setattr(parent, name, new)
                swapped += 1
    return swapped
