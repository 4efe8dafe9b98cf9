"""The contract's bounds against float64 (docs/accuracy.md), for the tests.

float32 outputs: |y - exact| <= f32_bound * 2**-23 * (|gamma| * max(1,
|xhat|) + |beta|), f32_bound from the registry (simdnorm.ops()). float16 and
bfloat16 outputs: correctly rounded, i.e. within half an ulp (of the exact
value's binade) of the exact value. `exact` is simdnorm.reference's float64
result, itself within ~2**-50 relative of the truth, hence the small slack.
"""

import numpy as np

import simdnorm

# Significand bits after the point, and the smallest normal exponent.
_FORMATS = {"float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126)}


def ulp(v, dtype):
    """The spacing of `dtype` numbers in the binade of each |v|."""
    bits, emin = _FORMATS[dtype]
    a = np.abs(np.asarray(v, np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    return np.exp2(np.maximum(e, emin) - bits)


def assert_correctly_rounded(y, exact, dtype):
    """Every element of y (float64 values of a `dtype` result) is the
    rounding to nearest of exact."""
    y = np.asarray(y, np.float64)
    exact = np.asarray(exact, np.float64)
    err = np.abs(y - exact)
    limit = 0.5 * ulp(exact, dtype) * (1 + 2.0**-40)
    bad = ~(err <= limit)
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} {dtype} elements not correctly rounded; "
        f"worst {(err / ulp(exact, dtype))[bad].max():.3f} ulp")


def assert_f32_bound(y, exact, xhat, weight=None, bias=None, kind="layernorm"):
    """y (float32) within the registry's bound of exact."""
    bound = simdnorm.op(kind).f32_bound
    g = 1.0 if weight is None else np.abs(np.asarray(weight, np.float64))
    b = 0.0 if bias is None else np.abs(np.asarray(bias, np.float64))
    limit = bound * 2.0**-23 * (g * np.maximum(1.0, np.abs(xhat)) + b)
    err = np.abs(np.asarray(y, np.float64) - exact)
    bad = ~(err <= limit)
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} float32 elements out of the bound; "
        f"worst {(err / limit)[bad].max():.2f}x the bound")
