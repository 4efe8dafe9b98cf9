#!/usr/bin/env python3
"""Writes the seed corpus of simdnorm_fuzz (tests/fuzz/corpus/).

Each seed is the 31-byte header of normalize_fuzz.cc, then (when bit 0x40
of its last byte is set) the 12-byte extension of the issue #7 fields, then
optional 7-byte patches; see the layout at the top of normalize_fuzz.cc.

    python3 tests/fuzz/make_corpus.py [out_dir]
"""
import os
import struct
import sys

F32, BF16 = 0x00, 0x01
LAYERNORM, RMSNORM = 0x00, 0x01
# Extension dtype overrides (2 bits each: x, y << 2, param << 4).
KEEP, OV_F16, OV_I8, OV_F32 = 0, 1, 2, 3


def header(isa=0, kind=LAYERNORM, xt=F32, yt=F32, pt=F32, rows=4,
           cols=17, x_stride=(0, 0), y_stride=(0, 0), eps=(0, 0),
           layout=(0, 0, 0), flags=0x30, max_threads=0, x_family=(0, 0, 0),
           w_family=0, seed=1, base_shift=0):
    """cols is the raw 16-bit field: < 0x8000 gives cols & 0x7F % 130."""
    b = bytes([isa, kind, xt, yt, pt, rows_byte(rows)])
    b += struct.pack('<H', cols)
    b += bytes([x_stride[0], x_stride[1], y_stride[0], y_stride[1]])
    b += bytes([eps[0]]) + struct.pack('<I', eps[1])
    b += bytes([layout[0], layout[1] & 0xFF, layout[2], flags, max_threads])
    b += bytes(x_family) + bytes([w_family]) + struct.pack('<I', seed)
    b += bytes([base_shift])
    assert len(b) == 31
    return b


def ext(x=KEEP, y=KEEP, param=KEEP, residual=0, sum_out=0,
        residual_stride=(0, 0), sum_out_stride=(0, 0), gamma_offset=0,
        flags=0, group=(0, 0), scales=0, delta=0):
    """The 12-byte extension; append it to a header(..., base_shift=0x40).

    residual: 0 NULL, 1 separate, 2 = x, 3 = y + delta, 4 = x + delta;
    sum_out: 0 NULL, 1 separate, 2 = residual, 3 = x, 4 = y, 5 = residual +
    delta, 6 = x + delta, 7 = gamma + delta (deltas in x elements);
    gamma_offset: index of (0, 1, -0, -1, NaN, inf, 0.5, FLT_MAX);
    group: (mode, arg) of DecodeGroup; scales: 0 separate for I8, 1 NULL,
    2 separate always, 3 = y, 4 = x, 5 = sum_out, 6 = gamma, 7 = residual
    (each + delta floats)."""
    b = bytes([x | (y << 2) | (param << 4), residual | (sum_out << 4)])
    b += bytes(residual_stride) + bytes(sum_out_stride)
    b += bytes([gamma_offset, flags, group[0], group[1], scales,
                delta & 0xFF])
    assert len(b) == 12
    return b


def rows_byte(n):
    """The rows field for n in 0..64."""
    if n <= 8:
        return n
    return next(b for b in range(0x80, 0xF0) if b % 65 == n)


def patch(which, col, bits):
    return bytes([which]) + struct.pack('<HI', col, bits)


def big_cols(n):
    """The raw cols field for n in 0..4100 (mode 10)."""
    return 0x8000 | n


SEEDS = {
    # Dense LayerNorm, fp32, gamma and beta, eps 1e-5.
    'layernorm_f32_dense': header(),
    # RMSNorm all bf16 in place (y = x, y stride = x stride), 896 wide.
    'rmsnorm_bf16_in_place': header(kind=RMSNORM, xt=BF16, yt=BF16, pt=BF16,
                                    rows=3, cols=big_cols(896),
                                    x_stride=(2, 5), y_stride=(7, 0),
                                    layout=(2, 0, 0)),
    # bf16 in, fp32 out, padded strides, 2 threads, rows split over TBB.
    'layernorm_strided_threads': header(xt=BF16, rows=64,
                                        cols=big_cols(4097),
                                        x_stride=(2, 3), y_stride=(2, 9),
                                        max_threads=2, flags=0x10),
    # y starts one element into x: SIMDNORM_OVERLAP.
    'overlap_y_in_x': header(rows=2, cols=16, layout=(3, 1, 0)),
    # Unknown kind and NaN eps: SIMDNORM_INVALID_ARGUMENT.
    'bad_enum_nan_eps': header(kind=0xF3, eps=(6, 0)),
    # eps 0 and constant rows (some zero): NaN rows, as 0/0.
    'eps0_constant_rows': header(kind=RMSNORM, rows=8, cols=33, eps=(1, 0),
                                 x_family=(2, 0, 0), flags=0x00),
    # Specials in the rows and weights, plus NaN, inf and a subnormal.
    'specials_and_patches': header(rows=5, cols=big_cols(129), pt=BF16,
                                   x_family=(3, 0, 0), w_family=1) +
    patch(0, 7, 0x7FC00000) + patch(3, 128, 0x7F800000) +
    patch(1, 0, 0x00000001) + patch(2, 64, 0xFF800000),
    # Huge magnitudes, large mean: 2^100 + 2^90 N(0,1) rows.
    'huge_mean_rows': header(rows=6, cols=big_cols(1000), eps=(1, 0),
                             x_family=(1, 251, 241)),
    # rows 0 with x NULL: OK, nothing written.
    'rows0_null_x': header(rows=0, flags=0x01),
    # x stride SIZE_MAX/2: the byte size overflows, SIMDNORM_INVALID_SHAPE.
    'huge_stride': header(rows=3, x_stride=(5, 1)),
    # Issue #7 (the extension). vLLM fused_add_rms_norm in f16: residual =
    # sum_out, y = x, 896 wide.
    'vllm_fused_add_f16_in_place':
    header(kind=RMSNORM, rows=3, cols=big_cols(896), y_stride=(7, 0),
           layout=(2, 0, 0), flags=0x10, base_shift=0x40) +
    ext(x=OV_F16, y=OV_F16, param=OV_F16, residual=1, sum_out=2,
        sum_out_stride=(7, 0)),
    # Gemma-style: bf16 x, fused add into x, offset 1, HF rounding order,
    # int8 output in groups of 32.
    'gemma_bf16_add_int8': header(kind=RMSNORM, xt=BF16, pt=BF16, rows=5,
                                  cols=big_cols(130), flags=0x10,
                                  base_shift=0x40) +
    ext(y=OV_I8, residual=1, sum_out=3, gamma_offset=1, flags=1,
        group=(3, 0)),
    # LayerNorm to int8, groups of 7 (the last one short), 2 threads.
    'int8_short_last_group': header(rows=6, cols=100, max_threads=2,
                                    base_shift=0x40) +
    ext(y=OV_I8, group=(2, 6)),
    # int8 output of rows with specials (NaN rows, infinite groups).
    'int8_specials': header(rows=8, cols=64, x_family=(3, 0, 0), w_family=1,
                            base_shift=0x40) +
    ext(y=OV_I8, group=(2, 15)),
    # f16 LayerNorm with ROUND_NORMALIZED, bf16 weights, fp32 output.
    'round_normalized_f16': header(pt=BF16, rows=4, cols=big_cols(257),
                                   base_shift=0x40) +
    ext(x=OV_F16, flags=1, gamma_offset=6),
    # sum_out == y: SIMDNORM_OVERLAP.
    'sum_out_is_y': header(rows=2, cols=16, base_shift=0x40) +
    ext(residual=1, sum_out=4),
    # The scales start 2 floats into x: SIMDNORM_OVERLAP.
    'scales_overlap_x': header(rows=2, cols=16, base_shift=0x40) +
    ext(y=OV_I8, scales=4, delta=2),
    # An unknown flag bit: SIMDNORM_INVALID_ARGUMENT.
    'unknown_flag': header(base_shift=0x40) + ext(flags=0x82),
    # I8 as x_type: SIMDNORM_UNSUPPORTED.
    'i8_x_unsupported': header(base_shift=0x40) + ext(x=OV_I8, y=OV_I8),
}


# Inputs the fuzzer found, kept as regression seeds (raw bytes):
# - inf_gamma_near_zero_xhat: gamma = beta = -inf with |xhat| ~ 1e-39: the
#   truth is NaN, the kernel's xhat has the other sign, y = -inf (allowed);
# - subnormal_output: gamma = -2^-149, |y| below the smallest subnormal (the
#   harness allows one subnormal step beyond the relative fp32 bound);
# - fixed_*: the three library bugs it found (regression tests at the end
#   of tests/numerical_faults_test.cc): a huge constant LayerNorm row with
#   eps > 0 gave NaN, the bf16 reference rounded an infinite truth to NaN,
#   xhat * gamma overflowed on ISAs without FMA.
REGRESSIONS = {
    'inf_gamma_near_zero_xhat':
    '00007e0000811c021001a0900200000000000000ff3d272157bd7b13000000',
    'subnormal_output':
    '000000000006e88300000000010000000000000030006001fbf1000100000000',
    'fixed_affine_overflow_no_fma':
    '103e3e1e3ebc3e3e3e3e000000005d007e7e7e7e7e7e000081ffffff7e7e817e7e7e'
    '7e7e7e7e7e7e7e7e7e7e3f2a0001000000040a',
    'fixed_constant_row_huge_x':
    '0000000000010101270103454d5531323800000000000200003100002f0000000100'
    '000006e88300000000000001000000000000',
    'fixed_bf16_reference_inf':
    '0000003b0105897f0000000000000000000000823000030000010100000000b90700'
    '0000c07f0380000000807f01000001000000024000000080ff',
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), 'corpus')
    os.makedirs(out, exist_ok=True)
    seeds = dict(SEEDS)
    seeds.update((k, bytes.fromhex(v)) for k, v in REGRESSIONS.items())
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print('%d seeds in %s' % (len(seeds), out))


if __name__ == '__main__':
    main()
