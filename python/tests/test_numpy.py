"""simdnorm's NumPy API against its float64 reference and float64 NumPy."""

import threading

import numpy as np
import pytest

import simdnorm
from bounds import assert_correctly_rounded, assert_f32_bound, ulp

RNG = np.random.default_rng(17)
COLS = [1, 7, 64, 896, 1000]


def _data(shape, dtype=np.float32, offset=0.0):
    return (RNG.standard_normal(shape) + offset).astype(dtype)


def _params(cols, dtype=np.float32):
    return (RNG.uniform(0.5, 1.5, cols).astype(dtype),
            RNG.uniform(-0.5, 0.5, cols).astype(dtype))


def _check(y, x, kind, weight=None, bias=None, **options):
    """y against the float64 reference of the same call."""
    exact, xhat = simdnorm.reference.normalize(
        x, kind, weight, bias, return_xhat=True, **options)
    if y.dtype == np.float32:
        assert_f32_bound(y, exact, xhat, weight, bias, kind)
    else:
        assert_correctly_rounded(y, exact, str(y.dtype))


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm(cols, dtype):
    x = _data((5, cols), dtype)
    weight, bias = _params(cols, dtype)
    y = simdnorm.layer_norm(x, weight, bias, eps=1e-5)
    assert y.dtype == x.dtype and y.shape == x.shape
    _check(y, x, "layernorm", weight, bias, eps=1e-5)


def test_layer_norm_against_float64_numpy():
    x = _data((4, 896), offset=1e4 / 3)  # a large mean
    weight, bias = _params(896)
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    var = ((x64 - mean)**2).mean(-1, keepdims=True)
    xhat = (x64 - mean) / np.sqrt(var + np.float64(np.float32(1e-5)))
    exact = xhat * weight + bias
    y = simdnorm.layer_norm(x, weight, bias, 1e-5)
    assert_f32_bound(y, exact, xhat, weight, bias)


def test_rms_norm_and_l2_norm_against_float64_numpy():
    x = _data((3, 896))
    weight, _ = _params(896)
    x64 = x.astype(np.float64)
    eps = np.float64(np.float32(1e-6))
    xhat = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + eps)
    y = simdnorm.rms_norm(x, weight, 1e-6)
    assert_f32_bound(y, xhat * weight, xhat, weight, kind="rmsnorm")
    xhat = x64 / np.maximum(np.sqrt((x64**2).sum(-1, keepdims=True)), 1e-12)
    y = simdnorm.l2_norm(x, weight)
    assert_f32_bound(y, xhat * weight, xhat, weight, kind="l2norm")


@pytest.mark.parametrize("op", [o for o in simdnorm.ops()
                                if o.descriptor == "row"],
                         ids=lambda op: op.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_every_registered_op(op, dtype):
    # Every kind of the registry, by name: a new kind is tested here with
    # no new binding code.
    x = _data((2, 3, 96), dtype)
    weight, bias = _params(96, dtype)
    y = simdnorm.normalize(x, op.name, weight, bias, eps=1e-6)
    _check(y, x, op.name, weight, bias, eps=1e-6)
    assert {"float32", "float16"} <= set(op.x_types)


@pytest.mark.parametrize("dtype", [np.float16])
def test_rms_norm_hugging_face_order(dtype):
    x = _data((8, 896), dtype)
    weight, _ = _params(896, dtype)
    y = simdnorm.rms_norm(x, weight, 1e-6, round_normalized=True)
    _check(y, x, "rmsnorm", weight, eps=1e-6, round_normalized=True)
    # It is another rounding than the default's somewhere on these rows.
    assert (y != simdnorm.rms_norm(x, weight, 1e-6)).any()


def test_mixed_output_dtype_and_params():
    x = _data((4, 896), np.float16)
    weight, bias = _params(896)
    out = np.empty(x.shape, np.float32)
    y = simdnorm.layer_norm(x, weight.astype(np.float16), bias, out=out)
    assert y is out
    _check(out, x, "layernorm", weight.astype(np.float16), bias)


def test_strided_rows_and_outputs():
    big = _data((6, 1024))
    x = big[:, 100:996]  # rows 1024 elements apart
    out = np.zeros((6, 1100), np.float32)[:, :896]
    weight, bias = _params(896)
    simdnorm.layer_norm(x, weight, bias, out=out)
    dense = simdnorm.layer_norm(np.ascontiguousarray(x), weight, bias)
    np.testing.assert_array_equal(out, dense)


def test_leading_axes_that_do_not_merge():
    # Transposed leading axes: one call per outer index, nothing copied.
    x = _data((3, 4, 64)).transpose(1, 0, 2)
    weight, bias = _params(64)
    y = simdnorm.layer_norm(x, weight, bias)
    np.testing.assert_array_equal(
        y, simdnorm.layer_norm(np.ascontiguousarray(x), weight, bias))
    _check(y, x, "layernorm", weight, bias)
    out = np.empty((4, 3, 64), np.float32).transpose(1, 0, 2)
    simdnorm.layer_norm(x.transpose(1, 0, 2), weight, bias, out=out)
    np.testing.assert_array_equal(out, y.transpose(1, 0, 2))


def test_in_place():
    x = _data((4, 896), np.float16)
    expected = simdnorm.rms_norm(x, eps=1e-6)
    assert simdnorm.rms_norm(x, eps=1e-6, out=x) is x
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fused_add_rms_norm_is_vllms(dtype):
    x = _data((5, 896), dtype)
    residual = _data((5, 896), dtype)
    weight, _ = _params(896, dtype)
    x0, r0 = x.copy(), residual.copy()
    assert simdnorm.fused_add_rms_norm(x, residual, weight, 1e-6) is None
    # residual = x + residual, rounded once; x = rms_norm(residual) * w.
    h = (x0.astype(np.float64) + r0).astype(dtype)
    np.testing.assert_array_equal(residual, h)
    exact = simdnorm.reference.rms_norm(h, weight, 1e-6,
                                        round_normalized=True)
    if dtype == np.float16:
        assert_correctly_rounded(x, exact, "float16")
    np.testing.assert_array_equal(
        x, simdnorm.rms_norm(h, weight, 1e-6, round_normalized=True))


def test_no_rows():
    x = np.empty((0, 896), np.float32)
    assert simdnorm.layer_norm(x).shape == (0, 896)


def test_isas():
    names = simdnorm.isas()
    assert names and simdnorm.active_isa() == names[0]
    x = _data((3, 896), np.float16)
    results = []
    try:
        for name in names:
            simdnorm.set_isa(name.lower())
            assert simdnorm.active_isa() == name
            results.append(simdnorm.layer_norm(x))
    finally:
        simdnorm.set_isa("auto")
    assert simdnorm.active_isa() == names[0]
    for y in results[1:]:  # correctly rounded: the same bits on every ISA
        np.testing.assert_array_equal(y, results[0])
    with pytest.raises(ValueError, match="SIMDNORM_UNSUPPORTED"):
        simdnorm.set_isa("nonsense")


def test_threads_and_concurrency():
    x = _data((256, 896))
    expected = simdnorm.layer_norm(x, max_threads=1)
    np.testing.assert_array_equal(simdnorm.layer_norm(x, max_threads=2),
                                  expected)
    outs = [np.empty_like(x) for _ in range(4)]
    threads = [threading.Thread(target=simdnorm.layer_norm, args=(x,),
                                kwargs={"out": o}) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_array_equal(o, expected)


def _bad(call, exception, match, *outputs):
    """call raises; every output keeps its bytes."""
    before = [o.copy() for o in outputs]
    with pytest.raises(exception, match=match):
        call()
    for o, b in zip(outputs, before):
        np.testing.assert_array_equal(o, b)


def test_bad_inputs_raise_and_write_nothing():
    x = _data((4, 64))
    out = np.full((4, 64), 7.0, np.float32)
    w, b = _params(64)
    _bad(lambda: simdnorm.layer_norm(x.astype(np.int32), out=out), TypeError,
         "int32.*SIMDNORM_INVALID_ARGUMENT", out)
    _bad(lambda: simdnorm.layer_norm(x.astype(np.float64), out=out),
         TypeError, "float64", out)
    _bad(lambda: simdnorm.layer_norm(np.float32(1.0)), TypeError, "ndarray")
    _bad(lambda: simdnorm.layer_norm(np.array(1.0, np.float32)), ValueError,
         "0-d.*SIMDNORM_INVALID_SHAPE")
    _bad(lambda: simdnorm.layer_norm(x, w[:63], out=out), ValueError,
         "weight has shape.*SIMDNORM_INVALID_SHAPE", out)
    _bad(lambda: simdnorm.layer_norm(x, w, b.astype(np.int8), out=out),
         TypeError, "bias has dtype int8", out)
    _bad(lambda: simdnorm.layer_norm(x, eps=-1.0, out=out), ValueError,
         "^simdnorm.layer_norm: SIMDNORM_INVALID_ARGUMENT", out)
    _bad(lambda: simdnorm.layer_norm(x, eps=float("nan"), out=out),
         ValueError, "SIMDNORM_INVALID_ARGUMENT", out)
    _bad(lambda: simdnorm.layer_norm(np.asfortranarray(x), out=out),
         ValueError, "last axis is not contiguous", out)
    _bad(lambda: simdnorm.layer_norm(x, out=out[:, :32]), ValueError,
         "out has shape", out)
    _bad(lambda: simdnorm.layer_norm(x, out=out.astype(np.int16)), TypeError,
         "out has dtype int16")
    readonly = out.copy()
    readonly.flags.writeable = False
    _bad(lambda: simdnorm.layer_norm(x, out=readonly), ValueError,
         "read-only", readonly)
    with pytest.raises(ValueError, match="no operation 'nosuchnorm'"):
        simdnorm.normalize(x, "nosuchnorm")
    with pytest.raises(ValueError, match="batchnorm is not a row operation"):
        simdnorm.normalize(x, "batchnorm")


def test_overlap_raises_and_writes_nothing():
    buf = _data((5, 64))
    # out one row after x in the same buffer: neither in place nor disjoint.
    _bad(lambda: simdnorm.layer_norm(buf[:4], out=buf[1:]), ValueError,
         "SIMDNORM_OVERLAP", buf)
    # The same with leading axes that take one call per outer index: checked
    # on the whole operands before the first call.
    big = _data((2, 3, 64))
    x = big.transpose(1, 0, 2)[:, :, :]
    out = big[:, ::-1, :].transpose(1, 0, 2)[::-1]  # overlaps x
    _bad(lambda: simdnorm.layer_norm(x[:2], out=out[1:]), ValueError,
         "SIMDNORM_OVERLAP", big)


# GroupNorm (simdnorm.group_norm): the float64 reference, both layouts.

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 7), 3), ((3, 4, 1), 2),
                                          ((1, 4, 2, 3, 5), 4), ((2, 8), 1)])
def test_group_norm(shape, groups, dtype):
    x = _data(shape, dtype, offset=2.0)
    weight, bias = _params(shape[1], dtype)
    per_channel = (-1,) + (1,) * (len(shape) - 2)
    w = weight.astype(np.float64).reshape(per_channel)
    b = bias.astype(np.float64).reshape(per_channel)
    bound = simdnorm.op("groupnorm").f32_bound
    for channels_last in (False, True):
        xs = np.ascontiguousarray(np.moveaxis(x, 1, -1)) if channels_last \
            else x
        y = simdnorm.group_norm(xs, groups, weight, bias, 1e-5,
                                channels_last=channels_last)
        assert y.dtype == x.dtype and y.shape == xs.shape
        exact, xhat = simdnorm.reference.group_norm(
            xs, groups, weight, bias, 1e-5, channels_last=channels_last,
            return_xhat=True)
        if channels_last:  # compare channels first
            y, exact, xhat = (np.moveaxis(a, -1, 1) for a in (y, exact, xhat))
        # The reference against plain NumPy in float64.
        x64 = x.astype(np.float64).reshape(shape[0], groups, -1)
        mean = x64.mean(-1, keepdims=True)
        var = ((x64 - mean)**2).mean(-1, keepdims=True)
        numpy_xhat = ((x64 - mean) / np.sqrt(var + np.float64(np.float32(
            1e-5)))).reshape(shape)
        np.testing.assert_allclose(xhat, numpy_xhat, rtol=1e-12, atol=1e-12)
        limit = bound * 2.0**-23 * (np.abs(w) * np.maximum(1, np.abs(xhat)) +
                                    np.abs(b))
        if dtype == np.float16:
            limit = limit + 0.5 * ulp(exact, "float16")
        assert (np.abs(y.astype(np.float64) - exact) <= limit).all()


def test_group_norm_in_place_and_bad_inputs():
    x = _data((2, 6, 4, 4))
    expected = simdnorm.group_norm(x, 3)
    inplace = x.copy()
    assert simdnorm.group_norm(inplace, 3, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, expected)
    out = np.full(x.shape, 7, np.float32)
    _bad(lambda: simdnorm.group_norm(x, 4, out=out), ValueError,
         "num_groups 4 does not divide the 6 channels", out)
    _bad(lambda: simdnorm.group_norm(x, 3, np.ones(5, np.float32), out=out),
         ValueError, "weight has shape", out)
    _bad(lambda: simdnorm.group_norm(x.astype(np.int32), 3, out=out),
         TypeError, "int32", out)
    _bad(lambda: simdnorm.group_norm(x, 3, eps=-1.0, out=out), ValueError,
         "SIMDNORM_INVALID_ARGUMENT", out)
    _bad(lambda: simdnorm.group_norm(x, 0, out=out), ValueError,
         "positive int", out)
    _bad(lambda: simdnorm.group_norm(x[..., :2], 3, out=out[..., :2]),
         ValueError, "not C-contiguous", out)
