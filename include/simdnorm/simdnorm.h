/* simdnorm: SIMD LayerNorm, RMSNorm and L2 normalization over rows, stable
 * C API.
 *
 * Math (statistics over the last axis of each row, n = cols, population
 * variance, eps inside the square root for the first two):
 *   LayerNorm: y = (x - mean) / sqrt(var + eps) * gamma + beta
 *   RMSNorm:   y = x / sqrt(mean(x^2) + eps) * gamma (+ beta when given)
 *   L2:        y = x / max(sqrt(sum(x^2)), eps) * gamma (+ beta when given)
 *              (torch.nn.functional.normalize, p = 2, over the last axis)
 * simdnorm_op_count() and simdnorm_op_at() list these kinds with what each
 * accepts (the registry of operations). GroupNorm and InstanceNorm, over
 * (N, C, *spatial) tensors, have their own descriptor: simdnorm_group_desc;
 * BatchNorm has simdnorm_batch_desc (and simdnorm_batch_backward_desc for
 * its gradients).
 * NULL gamma means 1, NULL beta means 0. bf16 and f16 inputs widen exactly
 * to float; results are rounded once, to nearest-even, to y_type.
 *
 * Aliasing: y may be exactly x (same pointer, same element size, same
 * stride): in place; sum_out may be exactly x or exactly residual. Any other
 * overlap of an output (y, sum_out, y_scale) with any operand is rejected
 * with SIMDNORM_OVERLAP. Overlap is judged on the byte ranges the rows span
 * (first byte of the first row to last byte of the last row).
 *
 * Errors: every call validates its descriptor first; on any status other
 * than SIMDNORM_OK nothing has been written.
 *
 * Threads: all functions are thread-safe. Rows are split over oneTBB worker
 * threads (at most max_threads of them, 0 = the current arena's default);
 * results are bitwise identical whatever the thread count. The environment
 * variable SIMDNORM_NUM_THREADS=N, read once, caps every call at N threads
 * (1 = never use oneTBB's scheduler).
 *
 * Compatibility: within a major version (and, before 1.0, a minor version)
 * the library keeps its ABI. simdnorm_desc only grows by fields appended at
 * its end whose zero keeps the behaviour of the older layout. A program
 * passes the size of the descriptor it was compiled with
 * (simdnorm_normalize does it for you: sizeof in the caller's header), so a
 * newer library reads exactly the fields the program knows and takes the
 * rest as zero; an older library serves a newer program's descriptor as long
 * as every field it does not know is zero, and otherwise answers
 * SIMDNORM_UNSUPPORTED (never reading past the caller's struct). Callers that
 * zero the descriptor and set the fields they know need nothing else; FFI
 * callers pass their struct's size to simdnorm_normalize_sized.
 */
#ifndef SIMDNORM_SIMDNORM_H_
#define SIMDNORM_SIMDNORM_H_

#include <stddef.h>

#include "simdnorm/export.h"

/* The version of this header; simdnorm_version() is the library's. */
#define SIMDNORM_VERSION_MAJOR 0
#define SIMDNORM_VERSION_MINOR 4
#define SIMDNORM_VERSION_PATCH 0
#define SIMDNORM_VERSION                                           \
  (SIMDNORM_VERSION_MAJOR * 10000 + SIMDNORM_VERSION_MINOR * 100 + \
   SIMDNORM_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef enum simdnorm_status {
  SIMDNORM_OK = 0,
  SIMDNORM_INVALID_ARGUMENT = 1, /* NULL pointer, bad enum/eps/flags */
  SIMDNORM_INVALID_SHAPE = 2,    /* cols == 0, stride < cols, size overflow;
                                    groups: c, hw or groups == 0,
                                    c % groups != 0; batch: c or hw == 0,
                                    training with n * hw == 1 */
  SIMDNORM_OVERLAP = 3,    /* y overlaps x, gamma or beta (not in place) */
  SIMDNORM_UNSUPPORTED = 4 /* unknown ISA; I8 other than as y_type; a
                              descriptor field this library does not know;
                              groups: I8, or 16-bit y without
                              SIMDNORM_FAST_ROUNDING */
} simdnorm_status;

typedef enum simdnorm_dtype {
  SIMDNORM_F32 = 0,
  SIMDNORM_BF16 = 1,
  SIMDNORM_F16 = 2, /* IEEE binary16 */
  SIMDNORM_I8 = 3   /* y_type only: symmetric int8 with y_scale (below) */
} simdnorm_dtype;

/* simdnorm_desc.flags */
enum {
  /* Round xhat (the normalized value) to x_type before it is multiplied by
   * the scale, as Hugging Face's LlamaRMSNorm does (`.to(input_dtype)`).
   * For bf16 and f16 x; f32 x is not rounded. */
  SIMDNORM_ROUND_NORMALIZED = 1,
  /* How y is written. By default the library decides per call: y goes
   * around the caches (non-temporal stores) only when the call moves more
   * than half the last-level cache the CPU reports, where y would be evicted
   * before the call returns anyway. SIMDNORM_Y_STREAM says "y is not read
   * soon": always non-temporal; SIMDNORM_Y_CACHED says "y is read next":
   * never. Not both. The environment variable SIMDNORM_STREAM=always|never
   * (read once) overrides the default, for profiling. The bits of y are the
   * same either way. */
  SIMDNORM_Y_STREAM = 2,
  SIMDNORM_Y_CACHED = 4,
  /* bf16 and f16 outputs are correctly rounded by default: each is the
   * exact result of the contract (on the inputs as given, eps as a float,
   * the scale gamma_offset + gamma summed in fp32) rounded once to
   * nearest-even, so every ISA and machine writes the same bits. A zero
   * result is +0 when xhat * scale is not zero, and otherwise has the IEEE
   * sign of (xhat * scale) + beta, with xhat = +0 for LayerNorm's x equal to
   * the mean, x * (+r) for RMSNorm, and a missing beta taken as -0. NaN
   * results are the default quiet NaN (0x7FC0, 0x7E00). This flag turns it
   * off: fp32 results rounded to 16 bits, within one ulp of the exact
   * result and about 3x faster (docs/performance.md), the bits possibly
   * differing between ISAs; int8 scales and q from the fp32 results. f32
   * outputs are not affected. */
  SIMDNORM_FAST_ROUNDING = 8
};

typedef enum simdnorm_kind {
  SIMDNORM_LAYERNORM = 0,
  SIMDNORM_RMSNORM = 1,
  SIMDNORM_L2NORM = 2,
  /* Over (sample, group) blocks: simdnorm_group_desc only (below), never
   * in a simdnorm_desc or simdnorm_backward_desc. */
  SIMDNORM_GROUPNORM = 3,
  /* Over channels across the batch: simdnorm_batch_desc only (below). */
  SIMDNORM_BATCHNORM = 4
} simdnorm_kind;

/* All-zero = LayerNorm, F32, dense rows, no gamma/beta, eps 0, default
 * threads. Later versions only append fields whose zero keeps this meaning
 * (see Compatibility above). */
typedef struct simdnorm_desc {
  simdnorm_kind kind;
  size_t rows;
  size_t cols;
  const void* x;
  simdnorm_dtype x_type;
  size_t x_stride; /* in elements between row starts; 0 = cols */
  void* y;
  simdnorm_dtype y_type;
  size_t y_stride;   /* in elements; 0 = cols */
  const void* gamma; /* cols elements of param_type, NULL = 1 */
  const void* beta;  /* cols elements of param_type, NULL = 0 */
  simdnorm_dtype param_type;
  float eps;          /* >= 0 and finite */
  size_t max_threads; /* 0 = arena default, 1 = calling thread only */

  /* Fused residual add. Non-NULL residual (x_type, residual_stride elements
   * apart, 0 = cols): h = x + residual, rounded once to x_type, is what gets
   * normalized. Non-NULL sum_out (x_type, 0 = cols): h is stored there; it
   * may be exactly residual or exactly x (same pointer and stride: in
   * place), and is h = x when residual is NULL. vLLM's fused_add_rms_norm is
   * residual = sum_out and y = x. */
  const void* residual;
  size_t residual_stride;
  void* sum_out;
  size_t sum_out_stride;
  /* The scale is (gamma_offset + gamma), summed in fp32 (NULL gamma: 1).
   * Gemma uses 1. Finite. */
  float gamma_offset;
  unsigned flags; /* SIMDNORM_ROUND_NORMALIZED, _Y_STREAM, _Y_CACHED,
                     _FAST_ROUNDING, or 0 */
  /* y_type SIMDNORM_I8: per group of quant_group elements of a row (0 = the
   * whole row; the last group may be shorter), scale = fl32(max|y| / 127)
   * and q = round-half-even(y / scale) in [-127, 127], both from the exact
   * y (so the same on every ISA; with SIMDNORM_FAST_ROUNDING from the fp32
   * results); a group of zeros has scale 0 and q = 0, and a group whose
   * max|y| is not finite has scale max|y| (inf or NaN) and q = 0. y_scale
   * holds rows * ceil(cols / group) floats, dense, row-major, and overlaps
   * nothing else. NULL and 0 for other y types. */
  float* y_scale;
  size_t quant_group;
  /* Saved statistics for a later simdnorm_backward (training), as torch's
   * native_layer_norm returns them: rows floats each, dense, NULL = not
   * wanted, overwritten. mean_out[r]: the row's mean (LayerNorm; 0 for
   * RMSNorm and L2, whose center is 0); rstd_out[r]: 1 / the kind's
   * denominator (LayerNorm 1/sqrt(var + eps), RMSNorm 1/sqrt(mean(x^2) +
   * eps), L2 1/max(||x||, eps)). Of h = x + residual with a residual. Each
   * is the kernel's float64 statistic rounded once to fp32: within 2^-23
   * relative (the mean also within 2^-30 standard deviations), not the same
   * bits on every ISA; NaN for a row holding a NaN (LayerNorm: or an inf),
   * rstd inf where the denominator is 0. They overlap nothing else. */
  float* mean_out;
  float* rstd_out;
} simdnorm_desc;

/* The smallest descriptor a caller may pass: the fields up to max_threads
 * (those of simdnorm 0.1). Fields after them read as zero when the caller's
 * struct ends before them. */
#define SIMDNORM_DESC_MIN_SIZE \
  (offsetof(simdnorm_desc, max_threads) + sizeof(size_t))

/* Normalizes d->rows rows with the active ISA's kernels. desc_size is
 * sizeof the caller's simdnorm_desc: below SIMDNORM_DESC_MIN_SIZE gives
 * SIMDNORM_INVALID_ARGUMENT; above this library's, the bytes it does not
 * know must be zero (else SIMDNORM_UNSUPPORTED). */
SIMDNORM_API simdnorm_status simdnorm_normalize_sized(const simdnorm_desc* d,
                                                      size_t desc_size);

/* Same contract, computed in float64 by a plain scalar loop and rounded once
 * to y_type: the truth the kernels are tested against. Single-threaded. */
SIMDNORM_API simdnorm_status
simdnorm_normalize_reference_sized(const simdnorm_desc* d, size_t desc_size);

/* The usual entry points: the descriptor of this header. */
static inline simdnorm_status simdnorm_normalize(const simdnorm_desc* d) {
  return simdnorm_normalize_sized(d, sizeof(simdnorm_desc));
}
static inline simdnorm_status simdnorm_normalize_reference(
    const simdnorm_desc* d) {
  return simdnorm_normalize_reference_sized(d, sizeof(simdnorm_desc));
}

/* ------------------------------------------------------------ Backward
 *
 * The gradients of a normalization (training and fine-tuning on CPU). For
 * one row of n = cols elements, with xhat the normalized row (before the
 * weights), scale = gamma_offset + gamma summed in fp32 as in the forward
 * (NULL gamma: 1 + gamma_offset), g = dy * scale and r = 1 / denominator:
 *   LayerNorm: dx = r * (g - mean(g) - xhat * mean(g * xhat)),
 *              r = 1 / sqrt(var + eps)
 *   RMSNorm:   dx = r * (g - xhat * mean(g * xhat)),
 *              r = 1 / sqrt(mean(x^2) + eps)
 *   L2:        dx = (g - xhat * sum(g * xhat)) / ||x||   where ||x|| > eps
 *              dx = g / eps                            where ||x|| <= eps
 * (the derivation is in docs/accuracy.md, "Backward"), and over all rows
 *   dgamma = sum(dy * xhat),  dbeta = sum(dy).
 * beta does not enter any of them. x is the forward's input (h = x +
 * residual for a fused add: the residual's gradient is dx too).
 *
 * Types: x, dy and dx are each F32, BF16 or F16; gamma is param_type.
 * dx is computed in fp32 and rounded once, to nearest-even, to dx_type:
 * 16-bit dx are NOT correctly rounded as the forward's 16-bit y are; they
 * are within half an ulp plus the fp32 bound (docs/accuracy.md).
 * dgamma and dbeta are fp32, summed in fp32 over fixed blocks of 32 rows
 * and over blocks in double: bitwise identical for every thread count.
 *
 * Aliasing: dx may be exactly dy (same pointer, element size and stride):
 * in place. Any other overlap of an output (dx, dgamma, dbeta) with any
 * other buffer is SIMDNORM_OVERLAP.
 *
 * Non-finite values: a row whose x or dy holds an inf or NaN, or whose r
 * is infinite (var + eps = 0), gets dx = NaN throughout (the default quiet
 * NaN); its terms of dgamma (dy * xhat) are NaN too. Other rows are not
 * affected.
 *
 * Errors as for simdnorm_normalize: the descriptor is validated first and
 * on any status other than SIMDNORM_OK nothing has been written. rows = 0
 * is valid: then x, dy and dx may be NULL, and dgamma and dbeta (when not
 * NULL) are set to zeros (the sums over no rows).
 *
 * Allocation: at most one heap allocation per call (the blocks' partial
 * sums when dgamma or dbeta is wanted, and the fp32 scale when gamma is
 * not F32 or gamma_offset is not 0). */
typedef struct simdnorm_backward_desc {
  simdnorm_kind kind;
  size_t rows;
  size_t cols;
  const void* x; /* the forward's input */
  simdnorm_dtype x_type;
  size_t x_stride; /* in elements between row starts; 0 = cols */
  const void* dy;  /* the gradient of the forward's output y */
  simdnorm_dtype dy_type;
  size_t dy_stride; /* 0 = cols */
  void* dx;         /* the gradient of x; may be exactly dy */
  simdnorm_dtype dx_type;
  size_t dx_stride;  /* 0 = cols */
  const void* gamma; /* cols elements of param_type, NULL = 1 */
  simdnorm_dtype param_type;
  float gamma_offset; /* finite; the scale is gamma_offset + gamma */
  float eps;          /* >= 0 and finite, the forward's */
  /* cols floats each, NULL = not wanted: overwritten (not added to) with
   * the sums over all rows. */
  float* dgamma;
  float* dbeta;
  size_t max_threads; /* 0 = arena default, 1 = calling thread only */
  /* 0, SIMDNORM_Y_STREAM or SIMDNORM_Y_CACHED: how dx is written, as y
   * by simdnorm_normalize (by default non-temporal, f32 dx only, when the
   * call moves more than half the last-level cache); the same bits either
   * way. */
  unsigned flags;
  /* The forward's saved statistics (simdnorm_desc's mean_out and
   * rstd_out on the same x, eps and kind), rows floats each, NULL = none:
   * then the kernels skip recomputing them (one pass over x fewer).
   * LayerNorm reads both (both or neither: INVALID_ARGUMENT), RMSNorm reads
   * rstd (mean is not read), L2 takes none (UNSUPPORTED: whether ||x|| >
   * eps is not known from an fp32 rstd near 1/eps). xhat = (x - mean -
   * c) * rstd with c = mean(x - mean) summed with the gradients, so an fp32
   * mean far from 0 costs no accuracy: the bound of docs/accuracy.md
   * holds. The reference ignores them (it recomputes in float64). */
  const float* mean;
  const float* rstd;
} simdnorm_backward_desc;

/* The smallest backward descriptor a caller may pass: that of 0.4. Later
 * versions append fields whose zero keeps this meaning (Compatibility). */
#define SIMDNORM_BACKWARD_DESC_MIN_SIZE \
  (offsetof(simdnorm_backward_desc, flags) + sizeof(unsigned))

/* dx (and dgamma, dbeta) with the active ISA's kernels; desc_size as for
 * simdnorm_normalize_sized. */
SIMDNORM_API simdnorm_status
simdnorm_backward_sized(const simdnorm_backward_desc* d, size_t desc_size);

/* The same contract from the formulas above in float64, by a plain scalar
 * loop (x, dy and gamma widened exactly, the scale summed in fp32), each
 * output rounded once: the truth the kernels are tested against.
 * Single-threaded. */
SIMDNORM_API simdnorm_status simdnorm_backward_reference_sized(
    const simdnorm_backward_desc* d, size_t desc_size);

static inline simdnorm_status simdnorm_backward(
    const simdnorm_backward_desc* d) {
  return simdnorm_backward_sized(d, sizeof(simdnorm_backward_desc));
}
static inline simdnorm_status simdnorm_backward_reference(
    const simdnorm_backward_desc* d) {
  return simdnorm_backward_reference_sized(d, sizeof(simdnorm_backward_desc));
}

/* ------------------------------------------------------------ GroupNorm
 *
 * GroupNorm and InstanceNorm over x of shape (n, c, *spatial), hw = the
 * product of the spatial sizes (1 when there are none). The c channels
 * form `groups` groups of cg = c / groups consecutive channels; for each
 * sample i and group g, over its m = cg * hw elements (population
 * variance, eps inside the square root):
 *   mean = sum(x) / m,  var = sum((x - mean)^2) / m,
 *   y = (x - mean) / sqrt(var + eps) * gamma[ch] + beta[ch]
 * with ch the element's channel (torch.nn.functional.group_norm;
 * InstanceNorm, torch's instance_norm with use_input_stats, is groups = c).
 * NULL gamma means 1, NULL beta means 0.
 *
 * Layouts, read in place (no copies):
 *   SIMDNORM_NCHW: x[(i * c + ch) * hw + p], channels first (torch's
 *     contiguous format): a group is one contiguous block of cg * hw.
 *   SIMDNORM_NHWC: x[(i * hw + p) * c + ch], channels last (torch's
 *     channels_last): a group is hw runs of cg elements, c apart.
 * y has x's layout and shape.
 *
 * Types: x, y and the weights are each F32, BF16 or F16 (never I8).
 * Statistics are computed as LayerNorm's (docs/accuracy.md): shifted by the
 * group's first element (NHWC: the mean of its channels at the first
 * position), fp32 partial sums of at most 32 terms per lane
 * added in double, power-of-two rescaling of groups whose sums of squares
 * would overflow or vanish; f32 y is within the registry's f32_bound
 * (scaled ulps, as for rows). 16-bit y (BF16, F16) are correctly rounded
 * by default, as the row kinds' are: the exact result of the formula
 * rounded once to nearest-even, the same bits on every ISA (and equal to
 * simdnorm_group_norm_reference's). SIMDNORM_FAST_ROUNDING gives the fp32
 * result rounded once instead (within half an ulp plus the fp32 bound, the
 * bits possibly differing between ISAs), somewhat faster.
 *
 * Non-finite values: a group holding an inf or NaN, or whose var + eps is
 * 0, is the default quiet NaN throughout; other groups are not affected.
 *
 * Aliasing: y may be exactly x (same pointer and element size): in place.
 * Any other overlap of y with x, gamma or beta is SIMDNORM_OVERLAP, and so
 * is any overlap of mean_out or rstd_out (below) with another buffer.
 *
 * Errors: validated first, in this order: enums (I8: UNSUPPORTED), eps,
 * flags (INVALID_ARGUMENT); then, when n > 0, NULL x or y (INVALID_ARGUMENT),
 * shapes (c, hw or groups 0, c % groups != 0, sizes that overflow:
 * INVALID_SHAPE), overlaps. On any status other than SIMDNORM_OK nothing
 * has been written. n = 0 is valid and does nothing.
 *
 * Threads as for simdnorm_normalize: (sample, group) blocks (NCHW) or
 * samples (NHWC) are split over at most max_threads threads, and the
 * results are bitwise identical whatever the thread count.
 *
 * Allocation: the working arrays (fp32 weights, per-channel constants and
 * sums) come from a block each thread keeps between calls (up to 16 MiB),
 * so a thread's calls allocate nothing after its first of a given size;
 * correctly rounded 16-bit y also allocates the groups' exact-sums caches
 * (NHWC), and in place a unit's copy of x. */
typedef enum simdnorm_layout {
  SIMDNORM_NCHW = 0, /* channels first */
  SIMDNORM_NHWC = 1  /* channels last */
} simdnorm_layout;

/* All-zero = NCHW, F32, no gamma/beta, eps 0, default threads. Later
 * versions only append fields whose zero keeps this meaning. */
typedef struct simdnorm_group_desc {
  size_t n;      /* samples */
  size_t c;      /* channels */
  size_t hw;     /* elements per channel and sample (spatial product) */
  size_t groups; /* divides c; c: InstanceNorm */
  simdnorm_layout layout;
  const void* x;
  simdnorm_dtype x_type;
  void* y; /* may be exactly x */
  simdnorm_dtype y_type;
  const void* gamma; /* c elements of param_type, NULL = 1 */
  const void* beta;  /* c elements of param_type, NULL = 0 */
  simdnorm_dtype param_type;
  float eps;          /* >= 0 and finite */
  size_t max_threads; /* 0 = arena default, 1 = calling thread only */
  unsigned flags;     /* 0 or SIMDNORM_FAST_ROUNDING */
  /* Saved statistics for a later simdnorm_group_norm_backward (training),
   * as torch's native_group_norm returns them: n * groups floats each,
   * [sample][group] (index i * groups + g), dense, NULL = not wanted,
   * overwritten; either may come alone. mean_out: the group's mean;
   * rstd_out: 1 / sqrt(var + eps). Each is the kernel's float64 statistic
   * rounded once to fp32: within 2^-20 of the reference's (rstd relative,
   * the mean relative to |mean| + the group's standard deviation;
   * docs/accuracy.md), not the same bits on every ISA nor with and without
   * SIMDNORM_FAST_ROUNDING; both NaN for a group holding an inf or NaN,
   * rstd inf where var + eps = 0. Asking for them changes no bit of y.
   * They overlap nothing else (SIMDNORM_OVERLAP). */
  float* mean_out;
  float* rstd_out;
} simdnorm_group_desc;

/* The smallest group descriptor a caller may pass: that of 0.4. */
#define SIMDNORM_GROUP_DESC_MIN_SIZE \
  (offsetof(simdnorm_group_desc, flags) + sizeof(unsigned))

/* GroupNorm with the active ISA's kernels; desc_size as for
 * simdnorm_normalize_sized. */
SIMDNORM_API simdnorm_status
simdnorm_group_norm_sized(const simdnorm_group_desc* d, size_t desc_size);

/* The same contract from the formula above in float64 (x and the weights
 * widened exactly, mean and variance by two passes), each output rounded
 * once to y_type: the truth the kernels are tested against (16-bit y: the
 * correctly rounded bits every ISA writes by default). Validated as
 * simdnorm_group_norm. Single-threaded. */
SIMDNORM_API simdnorm_status simdnorm_group_norm_reference_sized(
    const simdnorm_group_desc* d, size_t desc_size);

static inline simdnorm_status simdnorm_group_norm(
    const simdnorm_group_desc* d) {
  return simdnorm_group_norm_sized(d, sizeof(simdnorm_group_desc));
}
static inline simdnorm_status simdnorm_group_norm_reference(
    const simdnorm_group_desc* d) {
  return simdnorm_group_norm_reference_sized(d, sizeof(simdnorm_group_desc));
}

/* GroupNorm's (and InstanceNorm's) backward pass. For each sample i and
 * group G, over its m = cg * hw elements, with the forward's statistics
 * (recomputed from x by the forward's own code: mean, var, population,
 * eps inside the square root; or the forward's saved ones, mean and rstd
 * below), r = 1 / sqrt(var + eps), xhat = (x - mean) * r and g = dy *
 * gamma[ch]:
 *   dx = r * (g - mean_G(g) - xhat * mean_G(g * xhat))
 * (LayerNorm's formula over the group; docs/accuracy.md, "Backward"), and
 * over all samples and positions of each channel ch
 *   dgamma[ch] = sum(dy * xhat),  dbeta[ch] = sum(dy).
 * beta does not enter them.
 *
 * Layouts and shapes as simdnorm_group_desc's; x, dy and dx share the
 * layout. Types: x, dy and dx each F32, BF16 or F16; gamma param_type.
 * dx is computed in fp32 and rounded once, to nearest-even, to dx_type
 * (NOT correctly rounded: within half an ulp plus the fp32 bound). dgamma
 * and dbeta are fp32: each sample's sum per channel in fp32 blocks added
 * in double, rounded to fp32, and the samples' added in double in sample
 * order: bitwise identical for every thread count.
 *
 * Aliasing: dx may be exactly dy (same pointer and element size): in
 * place. Any other overlap of an output (dx, dgamma, dbeta) with any other
 * buffer is SIMDNORM_OVERLAP.
 *
 * Non-finite values: a group of a sample whose x or dy holds an inf or
 * NaN, or whose var + eps is 0, gets dx = the default quiet NaN throughout
 * and adds NaN to dgamma of each of its channels (its dy still adds to
 * dbeta); other groups are not affected.
 *
 * Errors: validated first, in this order: enums (I8 anywhere:
 * UNSUPPORTED), eps, flags, one of mean and rstd without the other
 * (INVALID_ARGUMENT); NULL x, dy or dx when n > 0 (INVALID_ARGUMENT);
 * shapes (c, hw or groups 0, c % groups != 0, sizes that overflow:
 * INVALID_SHAPE; checked when n > 0 or dgamma or dbeta is wanted);
 * overlaps. On any status other than SIMDNORM_OK nothing has been
 * written. n = 0 is valid: then x, dy and dx may be NULL (and mean and
 * rstd are not read), and dgamma and dbeta (when not NULL) are set to
 * zeros.
 *
 * Threads as for the forward: (sample, group) units (NCHW) or samples
 * (NHWC) over at most max_threads threads. Allocation: one heap allocation
 * per call (the fp32 gamma and the samples' partial sums), and per-thread
 * scratch: NCHW a group's per-channel sums; NHWC, as in the forward,
 * per-channel constants and sums and fp32 blocks of dy and dx. */
typedef struct simdnorm_group_backward_desc {
  size_t n;      /* samples */
  size_t c;      /* channels */
  size_t hw;     /* elements per channel and sample */
  size_t groups; /* divides c; c: InstanceNorm */
  simdnorm_layout layout;
  const void* x; /* the forward's input */
  simdnorm_dtype x_type;
  const void* dy; /* the gradient of the forward's output y */
  simdnorm_dtype dy_type;
  void* dx; /* the gradient of x; may be exactly dy */
  simdnorm_dtype dx_type;
  const void* gamma; /* c elements of param_type, NULL = 1 */
  simdnorm_dtype param_type;
  float eps; /* >= 0 and finite, the forward's */
  /* c floats each, NULL = not wanted: overwritten (not added to) with the
   * sums over all samples and positions. */
  float* dgamma;
  float* dbeta;
  size_t max_threads; /* 0 = arena default, 1 = calling thread only */
  unsigned flags;     /* 0 (none defined yet) */
  /* The forward's saved statistics (simdnorm_group_desc's mean_out and
   * rstd_out on the same x, groups and eps), n * groups floats each,
   * [sample][group], NULL = none: then the kernels skip recomputing them
   * (one pass over x fewer, three on groups the forward's general path
   * takes). Both or neither (INVALID_ARGUMENT). With d = x - mean in fp32
   * and c = mean_G(d) summed with the gradients (what the fp32 mean
   * missed), xhat = (d - c) * rstd and r = rstd in the formulas above, so
   * an fp32 mean far from 0 costs no accuracy: the bound of
   * docs/accuracy.md holds. A group whose saved rstd is not positive and
   * finite (or whose mean is not finite: the forward's NaN groups) is
   * recomputed. The reference ignores them (it recomputes in float64). */
  const float* mean;
  const float* rstd;
} simdnorm_group_backward_desc;

/* The smallest group backward descriptor a caller may pass: that of 0.4. */
#define SIMDNORM_GROUP_BACKWARD_DESC_MIN_SIZE \
  (offsetof(simdnorm_group_backward_desc, flags) + sizeof(unsigned))

/* dx (and dgamma, dbeta) with the active ISA's kernels; desc_size as for
 * simdnorm_normalize_sized. */
SIMDNORM_API simdnorm_status simdnorm_group_norm_backward_sized(
    const simdnorm_group_backward_desc* d, size_t desc_size);

/* The same contract from the formulas above in float64, by a plain scalar
 * loop (x, dy and gamma widened exactly, mean and variance by two passes),
 * each output rounded once: the truth the kernels are tested against.
 * Single-threaded. */
SIMDNORM_API simdnorm_status simdnorm_group_norm_backward_reference_sized(
    const simdnorm_group_backward_desc* d, size_t desc_size);

static inline simdnorm_status simdnorm_group_norm_backward(
    const simdnorm_group_backward_desc* d) {
  return simdnorm_group_norm_backward_sized(
      d, sizeof(simdnorm_group_backward_desc));
}
static inline simdnorm_status simdnorm_group_norm_backward_reference(
    const simdnorm_group_backward_desc* d) {
  return simdnorm_group_norm_backward_reference_sized(
      d, sizeof(simdnorm_group_backward_desc));
}

/* ------------------------------------------------------------ BatchNorm
 *
 * BatchNorm over x of shape (n, c, *spatial), hw = the spatial product, in
 * either layout of simdnorm_group_desc (torch.nn.functional.batch_norm).
 * Each channel ch is normalized over its m = n * hw elements, across the
 * batch:
 *   inference (training == 0):
 *     y = (x - running_mean[ch]) / sqrt(running_var[ch] + eps) * gamma[ch]
 *         + beta[ch]
 *   training (training != 0), per channel over its m elements:
 *     mean = sum(x) / m,  var = sum((x - mean)^2) / m  (population),
 *     y = (x - mean) / sqrt(var + eps) * gamma[ch] + beta[ch];
 *     when running_mean and running_var are given (both or neither), they
 *     are updated in place:
 *       running_mean = (1 - momentum) * running_mean + momentum * mean
 *       running_var  = (1 - momentum) * running_var
 *                      + momentum * var * m / (m - 1)   (unbiased)
 *     and when given, save_mean[ch] = mean and save_invstd[ch] =
 *     1 / sqrt(var + eps) (torch's native_batch_norm outputs, for a
 *     backward pass). The updates are computed in float64 and rounded once.
 * NULL gamma means 1, NULL beta means 0. momentum is torch's (0.1 there;
 * 0 here leaves the running statistics as they are).
 *
 * Types: x, y and the weights each F32, BF16 or F16 (never I8); the
 * running statistics and save_* are float (c each).
 * Numerics: training statistics as GroupNorm's and LayerNorm's (shifted by
 * the channel's first element, fp32 partial sums of at most 32 terms per
 * lane added in double, power-of-two rescaling where sums of squares would
 * overflow or vanish). Inference computes x - running_mean in fp32 first
 * (exact when x is near it), then * 1 / sqrt(running_var + eps) and the
 * weights: no error proportional to |running_mean| (docs/accuracy.md).
 * f32 y is within the registry's f32_bound (scaled ulps); 16-bit y, as
 * GroupNorm's, are correctly rounded by default (inference: the exact
 * value of the formula with the given fp32 running statistics, rounded
 * once; training: with the batch's exact statistics), the same bits on
 * every ISA; SIMDNORM_FAST_ROUNDING rounds the fp32 result instead.
 *
 * Non-finite values: training: a channel holding an inf or NaN, or whose
 * var + eps is 0, is the default quiet NaN throughout, its save_mean,
 * save_invstd and running statistics NaN; other channels are not affected.
 * Inference is an affine map per channel: a NaN or inf in x gives that
 * element's result only; a channel whose running_var + eps is 0, negative
 * or NaN is the default quiet NaN throughout.
 *
 * Aliasing: y may be exactly x (in place). Any other overlap among y, x,
 * gamma, beta, running_mean, running_var, save_mean and save_invstd (other
 * than inputs overlapping each other) is SIMDNORM_OVERLAP.
 *
 * Errors: validated first, in this order: enums (I8: UNSUPPORTED), eps,
 * momentum (finite), flags (INVALID_ARGUMENT), only one of running_mean and
 * running_var, or neither for inference (INVALID_ARGUMENT); then, when
 * n > 0, NULL x or y (INVALID_ARGUMENT), shapes (c or hw 0, sizes that
 * overflow, training with m = 1: INVALID_SHAPE, as torch's "Expected more
 * than 1 value per channel"), overlaps. On any status other than
 * SIMDNORM_OK nothing has been written (y, running statistics, save_*).
 * n = 0 is valid and does nothing.
 *
 * Threads: channels (NCHW) or blocks of channels (NHWC) are split over at
 * most max_threads threads; the results are bitwise identical whatever the
 * thread count.
 *
 * Allocation: as simdnorm_group_norm's (a per-thread block kept between
 * calls); correctly rounded 16-bit y in NHWC inference also allocates the
 * channels' exact-sums caches, and in place a unit's copy of x. */
/* All-zero = NCHW, F32, no weights, inference (which then needs the
 * running statistics), eps 0, momentum 0, default threads. Later versions
 * only append fields whose zero keeps this meaning. */
typedef struct simdnorm_batch_desc {
  size_t n;  /* samples */
  size_t c;  /* channels */
  size_t hw; /* elements per channel and sample (spatial product) */
  simdnorm_layout layout;
  const void* x;
  simdnorm_dtype x_type;
  void* y; /* may be exactly x */
  simdnorm_dtype y_type;
  const void* gamma; /* c elements of param_type, NULL = 1 */
  const void* beta;  /* c elements of param_type, NULL = 0 */
  simdnorm_dtype param_type;
  float* running_mean; /* c floats: read (inference) or updated (training) */
  float* running_var;  /* c floats; both or neither; required in inference */
  float* save_mean;    /* training: c floats written, or NULL; */
  float* save_invstd;  /* ignored (not written) in inference */
  float momentum;      /* finite; torch's default is 0.1 */
  float eps;           /* >= 0 and finite */
  int training;        /* 0: inference, else training */
  size_t max_threads;  /* 0 = arena default, 1 = calling thread only */
  unsigned flags;      /* 0 or SIMDNORM_FAST_ROUNDING */
} simdnorm_batch_desc;

/* The smallest batch descriptor a caller may pass: that of 0.4. */
#define SIMDNORM_BATCH_DESC_MIN_SIZE \
  (offsetof(simdnorm_batch_desc, flags) + sizeof(unsigned))

/* BatchNorm with the active ISA's kernels; desc_size as for
 * simdnorm_normalize_sized. */
SIMDNORM_API simdnorm_status
simdnorm_batch_norm_sized(const simdnorm_batch_desc* d, size_t desc_size);

/* The same contract in float64 (two-pass mean and variance per channel),
 * each output rounded once to its type: the truth the kernels are tested
 * against. Validated as simdnorm_batch_norm. Single-threaded. */
SIMDNORM_API simdnorm_status simdnorm_batch_norm_reference_sized(
    const simdnorm_batch_desc* d, size_t desc_size);

static inline simdnorm_status simdnorm_batch_norm(
    const simdnorm_batch_desc* d) {
  return simdnorm_batch_norm_sized(d, sizeof(simdnorm_batch_desc));
}
static inline simdnorm_status simdnorm_batch_norm_reference(
    const simdnorm_batch_desc* d) {
  return simdnorm_batch_norm_reference_sized(d, sizeof(simdnorm_batch_desc));
}

/* ------------------------------------------------- BatchNorm backward
 *
 * The gradients of simdnorm_batch_norm with respect to x, gamma and beta,
 * for x of shape (n, c, *spatial) in either layout. Per channel ch, over
 * its M = n * hw elements, with g = dy * gamma[ch] (NULL gamma: 1):
 *   training (the statistics are the batch's, functions of x):
 *     mean and var (population) recomputed from x exactly as
 *     simdnorm_batch_norm computes them (or the forward's saved ones:
 *     save_mean and save_invstd below), r = 1 / sqrt(var + eps),
 *     xhat = (x - mean) * r,
 *     dx = r * (g - mean_ch(g) - xhat * mean_ch(g * xhat))
 *   inference (running_mean and running_var are constants):
 *     r = 1 / sqrt(running_var[ch] + eps), xhat = (x - running_mean) * r,
 *     dx = g * r
 *   both:
 *     dgamma[ch] = sum(dy * xhat),  dbeta[ch] = sum(dy)
 * (torch.nn.functional.batch_norm's gradients; the derivation is
 * LayerNorm's over the channel's M elements, docs/accuracy.md,
 * "Backward"). beta does not enter them.
 *
 * Types: x, dy and dx are each F32, BF16 or F16, gamma is param_type. dx
 * is computed in fp32 and rounded once to dx_type (16-bit dx are NOT
 * correctly rounded: within half an ulp plus the fp32 bound,
 * docs/accuracy.md). dgamma and dbeta are fp32 (c floats each, NULL = not
 * wanted), each channel's sums in fp32 blocks added in double, in an order
 * fixed by the shape: dx, dgamma and dbeta are bitwise identical for every
 * thread count.
 *
 * Aliasing: dx may be exactly dy (same pointer and element size): in
 * place. Any other overlap of an output (dx, dgamma, dbeta) with any other
 * buffer is SIMDNORM_OVERLAP.
 *
 * Non-finite values, as the forward: training: a channel holding an inf
 * or NaN in x or dy, or whose var + eps is 0 (or whose fp32 sums
 * overflow), gets dx = the default quiet NaN throughout and dgamma NaN
 * (dbeta is its sum of dy as it comes); other channels are not affected.
 * Inference is a map per element: a NaN or inf in dy gives that element's
 * dx only (x does not enter dx), and a channel whose running_var + eps is
 * 0, negative or NaN, or whose running_mean is NaN, gets dx NaN throughout
 * and dgamma NaN.
 *
 * Errors: validated first, in this order: enums (I8 anywhere:
 * UNSUPPORTED), eps, flags (INVALID_ARGUMENT), inference without both
 * running statistics, training with one of save_mean and save_invstd
 * without the other (INVALID_ARGUMENT); then, when n > 0, NULL x, dy or
 * dx (INVALID_ARGUMENT), shapes (c or hw 0, sizes that overflow, training
 * with M = 1: INVALID_SHAPE), overlaps. On any status other than
 * SIMDNORM_OK nothing has been written. n = 0 is valid: x, dy and dx may
 * be NULL, and dgamma and dbeta (when not NULL) are set to zeros.
 *
 * Allocation: one heap allocation per call (the fp32 gamma), and in NHWC
 * training the forward's per-thread statistics scratch.
 * Threads: channels (NCHW) or blocks of 64 channels (NHWC) are split over
 * at most max_threads threads; no result depends on the split. */
/* All-zero = NCHW, F32, no gamma, inference (which then needs the running
 * statistics), eps 0, default threads. Later versions only append fields
 * whose zero keeps this meaning. */
typedef struct simdnorm_batch_backward_desc {
  size_t n;  /* samples */
  size_t c;  /* channels */
  size_t hw; /* elements per channel and sample (spatial product) */
  simdnorm_layout layout;
  const void* x; /* the forward's input */
  simdnorm_dtype x_type;
  const void* dy; /* the gradient of the forward's output y */
  simdnorm_dtype dy_type;
  void* dx; /* the gradient of x; may be exactly dy */
  simdnorm_dtype dx_type;
  const void* gamma; /* c elements of param_type, NULL = 1 */
  simdnorm_dtype param_type;
  /* Inference only (both required, c floats each); not read in training. */
  const float* running_mean;
  const float* running_var;
  float eps;    /* >= 0 and finite, the forward's */
  int training; /* 0: inference, else training (batch statistics) */
  /* c floats each, NULL = not wanted: overwritten (not added to). */
  float* dgamma;
  float* dbeta;
  size_t max_threads; /* 0 = arena default, 1 = calling thread only */
  unsigned flags;     /* 0 (none defined yet) */
  /* Training: the forward's saved statistics (simdnorm_batch_desc's
   * save_mean and save_invstd on the same x and eps), c floats each,
   * NULL = none: then the kernels skip recomputing them, as
   * simdnorm_group_backward_desc's mean and rstd (the same correction c,
   * the same bound). Both or neither (INVALID_ARGUMENT). A channel whose
   * save_invstd is not positive and finite (or whose save_mean is not
   * finite) is recomputed. Inference does not read them (as the forward
   * writes none there): not checked, not read. The reference ignores
   * them. */
  const float* save_mean;
  const float* save_invstd;
} simdnorm_batch_backward_desc;

/* The smallest batch backward descriptor a caller may pass: that of 0.4. */
#define SIMDNORM_BATCH_BACKWARD_DESC_MIN_SIZE \
  (offsetof(simdnorm_batch_backward_desc, flags) + sizeof(unsigned))

/* dx (and dgamma, dbeta) with the active ISA's kernels; desc_size as for
 * simdnorm_normalize_sized. */
SIMDNORM_API simdnorm_status simdnorm_batch_norm_backward_sized(
    const simdnorm_batch_backward_desc* d, size_t desc_size);

/* The same contract from the formulas above in float64, by a plain scalar
 * loop (two-pass mean and variance per channel), each output rounded once:
 * the truth the kernels are tested against. Validated as
 * simdnorm_batch_norm_backward. Single-threaded. */
SIMDNORM_API simdnorm_status simdnorm_batch_norm_backward_reference_sized(
    const simdnorm_batch_backward_desc* d, size_t desc_size);

static inline simdnorm_status simdnorm_batch_norm_backward(
    const simdnorm_batch_backward_desc* d) {
  return simdnorm_batch_norm_backward_sized(
      d, sizeof(simdnorm_batch_backward_desc));
}
static inline simdnorm_status simdnorm_batch_norm_backward_reference(
    const simdnorm_batch_backward_desc* d) {
  return simdnorm_batch_norm_backward_reference_sized(
      d, sizeof(simdnorm_batch_backward_desc));
}

/* The registry of operations: every kind this library computes and what it
 * accepts, for tools, tests and bindings to enumerate rather than name.
 * Entries are static and never change; later versions may append fields.
 * Callers that fill a simdnorm_desc for each kind take only the entries
 * whose descriptor is SIMDNORM_ROW_DESC. */
typedef enum simdnorm_descriptor {
  SIMDNORM_ROW_DESC = 0,   /* simdnorm_desc: simdnorm_normalize (and
                              simdnorm_backward where has_backward) */
  SIMDNORM_GROUP_DESC = 1, /* simdnorm_group_desc: simdnorm_group_norm
                              (backward: simdnorm_group_backward_desc,
                              simdnorm_group_norm_backward) */
  SIMDNORM_BATCH_DESC = 2  /* simdnorm_batch_desc: simdnorm_batch_norm
                              (backward: simdnorm_batch_backward_desc,
                              simdnorm_batch_norm_backward) */
} simdnorm_descriptor;

typedef struct simdnorm_op_info {
  simdnorm_kind kind;
  /* Lowercase, as tools and bindings spell it: "rmsnorm". */
  const char* name;
  /* As documents spell it: "RMSNorm". */
  const char* title;
  /* The contract: "y = x / sqrt(mean(x^2) + eps) * gamma + beta". */
  const char* formula;
  /* The PyTorch function it matches. */
  const char* torch;
  /* 1: its statistics are of x - mean(x). */
  int centered;
  /* Bit (1u << dtype) per accepted x_type, y_type and param_type. */
  unsigned x_types, y_types, param_types;
  /* The flags it accepts (of its descriptor). */
  unsigned flags;
  /* The documented bound of fp32 outputs, in scaled ulps: |y - exact| <=
   * f32_bound * 2^-23 * (|gamma| * max(1, |xhat|) + |beta|) (docs/accuracy.md).
   * 16-bit outputs are correctly rounded (see SIMDNORM_FAST_ROUNDING),
   * except GroupNorm's and BatchNorm's (see their descriptors). */
  double f32_bound;
  /* 1: it has a backward pass (since 0.4): simdnorm_backward for
   * SIMDNORM_ROW_DESC kinds, simdnorm_group_norm_backward for
   * SIMDNORM_GROUP_DESC, simdnorm_batch_norm_backward for
   * SIMDNORM_BATCH_DESC. */
  int has_backward;
  /* The descriptor it takes (since 0.4). */
  simdnorm_descriptor descriptor;
} simdnorm_op_info;

/* The number of operations, and the i-th (NULL past the end). */
SIMDNORM_API size_t simdnorm_op_count(void);
SIMDNORM_API const simdnorm_op_info* simdnorm_op_at(size_t i);
/* The entry of a kind (NULL for a value that is not one). */
SIMDNORM_API const simdnorm_op_info* simdnorm_op_of(simdnorm_kind kind);

/* The library's version, SIMDNORM_VERSION as it was built (may differ from
 * this header's), and as "MAJOR.MINOR.PATCH". */
SIMDNORM_API unsigned simdnorm_version(void);
SIMDNORM_API const char* simdnorm_version_string(void);

/* A static, human-readable name of the status ("SIMDNORM_OVERLAP: ..."). */
SIMDNORM_API const char* simdnorm_status_string(simdnorm_status s);

/* ISAs compiled in and supported by this CPU, best first. Names are
 * Highway's target names: "AVX3", "AVX2", "SSE4", "NEON", "SVE", ... */
SIMDNORM_API size_t simdnorm_isa_count(void);
SIMDNORM_API const char* simdnorm_isa_name(size_t i); /* NULL past the end */

/* Forces an ISA process-wide (case-insensitive; NULL or "auto" = best).
 * Unknown or unsupported names: SIMDNORM_UNSUPPORTED, nothing changes.
 * At start-up the environment variable SIMDNORM_ISA is applied the same way
 * (an invalid value there is ignored, with a message on stderr).
 * A call already running keeps the ISA it started with. */
SIMDNORM_API simdnorm_status simdnorm_set_isa(const char* name);

/* The listed name of the ISA in use. */
SIMDNORM_API const char* simdnorm_active_isa(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SIMDNORM_SIMDNORM_H_ */
