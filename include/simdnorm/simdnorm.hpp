// simdnorm C++ API: typed views over the same core as the C API.
//
//   simdnorm::Rows<const float> x(data, rows, cols);           // dense rows
//   simdnorm::Rows<simdnorm::bf16> y(out, rows, cols, stride);  // strided
//   simdnorm::Status s = simdnorm::layer_norm(x, y, gamma, beta, opt);
//
// Element types: float, simdnorm::bf16 or simdnorm::f16, chosen
// independently for x, y and the parameters; int8_t outputs go through
// rms_norm_quant / layer_norm_quant. The fused residual add is add_rms_norm /
// add_layer_norm, or fused_add_rms_norm in place (vLLM's op). Any other
// combination of the C descriptor's fields: make_desc, set them, normalize.
// The math, aliasing and threading rules are those of simdnorm.h. Nothing
// here throws or allocates.
#ifndef SIMDNORM_SIMDNORM_HPP_
#define SIMDNORM_SIMDNORM_HPP_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "simdnorm/simdnorm.h"

namespace simdnorm {

enum class Status : int {
  kOk = SIMDNORM_OK,
  kInvalidArgument = SIMDNORM_INVALID_ARGUMENT,
  kInvalidShape = SIMDNORM_INVALID_SHAPE,
  kOverlap = SIMDNORM_OVERLAP,
  kUnsupported = SIMDNORM_UNSUPPORTED,
};

enum class Kind : int {
  kLayerNorm = SIMDNORM_LAYERNORM,
  kRMSNorm = SIMDNORM_RMSNORM,
  kL2Norm = SIMDNORM_L2NORM,
  kGroupNorm = SIMDNORM_GROUPNORM,  // group_norm only (simdnorm_group_desc)
  kBatchNorm = SIMDNORM_BATCHNORM   // batch_norm only (simdnorm_batch_desc)
};

enum class DType : int {
  kF32 = SIMDNORM_F32,
  kBF16 = SIMDNORM_BF16,
  kF16 = SIMDNORM_F16,
  kI8 = SIMDNORM_I8  // outputs only
};

inline const char* to_string(Status s) {
  return simdnorm_status_string(static_cast<simdnorm_status>(s));
}

// Brain float: the top 16 bits of an IEEE binary32. Conversions from float
// round to nearest-even (NaN stays NaN); to float they are exact.
struct bf16 {
  uint16_t bits = 0;

  static constexpr bf16 from_bits(uint16_t b) {
    bf16 v;
    v.bits = b;
    return v;
  }
  static bf16 from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
      return from_bits(static_cast<uint16_t>((u >> 16) | 0x40u));
    u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return from_bits(static_cast<uint16_t>(u >> 16));
  }
  float to_float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  }
  explicit operator float() const { return to_float(); }
};
static_assert(sizeof(bf16) == 2, "bf16 must be 2 bytes");

// IEEE binary16. Conversions from float round to nearest-even, with
// subnormals kept and magnitudes from 65520 up going to infinity (NaN stays
// NaN, quiet); to float they are exact.
struct f16 {
  uint16_t bits = 0;

  static constexpr f16 from_bits(uint16_t b) {
    f16 v;
    v.bits = b;
    return v;
  }
  static f16 from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7FFFFFFFu;
    uint32_t h;
    if (a > 0x7F800000u) {  // NaN: quiet, the top payload bits kept
      h = 0x7E00u | ((a >> 13) & 0x3FFu);
    } else if (a >= 0x477FF000u) {  // >= 65520: infinity
      h = 0x7C00u;
    } else if (a >= 0x38800000u) {  // >= 2^-14: normal
      // Rebias the exponent (127 -> 15) and round off 13 mantissa bits; a
      // carry into the exponent is the right result.
      h = (a - (112u << 23) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
    } else if (a >= 0x33000000u) {  // >= 2^-25: subnormal, multiples of 2^-24
      const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
      const uint32_t shift = 126u - (a >> 23);  // 14..24
      const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
      h = m >> shift;
      if (rest > half || (rest == half && (h & 1u))) ++h;
    } else {
      h = 0;
    }
    return from_bits(static_cast<uint16_t>(sign | h));
  }
  float to_float() const {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exp = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
    uint32_t u;
    if (exp == 0x1F) {
      u = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {
      u = sign | ((exp + 112u) << 23) | (mant << 13);
    } else {  // zero or subnormal: mant * 2^-24, exact in float
      const float m = static_cast<float>(mant) * 0x1p-24f;
      return sign ? -m : m;
    }
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
  }
  explicit operator float() const { return to_float(); }
};
static_assert(sizeof(f16) == 2, "f16 must be 2 bytes");

namespace detail {
template <class T>
struct identity {
  using type = T;
};
}  // namespace detail

template <class T>
constexpr DType dtype_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, bf16> ||
                    std::is_same_v<U, f16> || std::is_same_v<U, int8_t>,
                "simdnorm element types are float, simdnorm::bf16, "
                "simdnorm::f16 and (outputs only) int8_t");
  if constexpr (std::is_same_v<U, float>) return DType::kF32;
  if constexpr (std::is_same_v<U, bf16>) return DType::kBF16;
  if constexpr (std::is_same_v<U, f16>) return DType::kF16;
  return DType::kI8;
}

namespace detail {
template <class T>
inline constexpr bool kIsInt8 = std::is_same_v<std::remove_cv_t<T>, int8_t>;
}  // namespace detail

// A row-major view: `rows` rows of `cols` elements, `stride` elements apart
// (0 = cols). T is `const E` for inputs and `E` for outputs.
template <class T>
struct Rows {
  T* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  size_t stride = 0;

  Rows() = default;
  Rows(T* d, size_t r, size_t c, size_t s = 0)
      : data(d), rows(r), cols(c), stride(s) {}
  // A mutable view converts to a read-only one.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> &&
                                              !std::is_same_v<U, T>>>
  Rows(const Rows<U>& o)
      : data(o.data), rows(o.rows), cols(o.cols), stride(o.stride) {}
};

// Saved statistics (simdnorm.h), the forward writes them, a backward on the
// same x reads them; nullptr = not wanted / none. Rows: rows floats each
// (simdnorm_desc's mean_out and rstd_out, simdnorm_backward_desc's mean and
// rstd); GroupNorm and InstanceNorm: n * groups ([sample][group]: the
// group descriptors' mean_out, rstd_out, mean and rstd); BatchNorm
// training: c (save_mean and save_invstd, rstd being the invstd).
struct Stats {
  float* mean = nullptr;
  float* rstd = nullptr;
};

// Optional settings of one call.
struct Options {
  float eps = 1e-5f;
  size_t max_threads = 0;     // 0 = arena default, 1 = calling thread only
  float gamma_offset = 0.0f;  // the scale is gamma_offset + gamma (Gemma: 1)
  bool round_normalized = false;  // SIMDNORM_ROUND_NORMALIZED (HF's order)
  bool fast_rounding = false;     // SIMDNORM_FAST_ROUNDING (16-bit y)
  Stats stats = {};  // written by the forward, read by the backward
};

// Fills a C descriptor from typed views; rows and cols are taken from x
// (normalize reports a shape mismatch between x and y as kInvalidShape).
template <class X, class Y, class P = float>
simdnorm_desc make_desc(Kind kind, Rows<const X> x, Rows<Y> y, const P* gamma,
                        const typename detail::identity<P>::type* beta,
                        Options opt) {
  static_assert(!std::is_const_v<Y>, "the output view must be mutable");
  static_assert(!detail::kIsInt8<X> && !detail::kIsInt8<P>,
                "int8_t is an output type only");
  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = x.rows;
  d.cols = x.cols;
  d.x = x.data;
  d.x_type = static_cast<simdnorm_dtype>(dtype_of<X>());
  d.x_stride = x.stride;
  d.y = y.data;
  d.y_type = static_cast<simdnorm_dtype>(dtype_of<Y>());
  d.y_stride = y.stride;
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = static_cast<simdnorm_dtype>(dtype_of<P>());
  d.eps = opt.eps;
  d.max_threads = opt.max_threads;
  d.gamma_offset = opt.gamma_offset;
  d.flags = (opt.round_normalized ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u) |
            (opt.fast_rounding ? unsigned{SIMDNORM_FAST_ROUNDING} : 0u);
  d.mean_out = opt.stats.mean;
  d.rstd_out = opt.stats.rstd;
  return d;
}

// The C entry points with this header's descriptor size (simdnorm.h,
// Compatibility).
inline Status normalize(const simdnorm_desc& d) {
  return static_cast<Status>(simdnorm_normalize_sized(&d, sizeof(d)));
}
inline Status normalize_reference(const simdnorm_desc& d) {
  return static_cast<Status>(simdnorm_normalize_reference_sized(&d, sizeof(d)));
}

// The float64 truth for one descriptor of desc_size bytes (simdnorm.h,
// Compatibility), unrounded: out and (optionally) xhat, the normalized value
// before gamma/beta, each rows * cols doubles, dense. The second form passes
// this header's size.
SIMDNORM_API Status reference_f64(const simdnorm_desc* d, size_t desc_size,
                                  double* out, double* xhat);
inline Status reference_f64(const simdnorm_desc& d, double* out, double* xhat) {
  return reference_f64(&d, sizeof(d), out, xhat);
}

namespace detail {
template <class X, class Y>
inline bool same_shape(const Rows<const X>& x, const Rows<Y>& y) {
  return x.rows == y.rows && x.cols == y.cols;
}

// T, in a context that does not take part in template deduction (so that a
// mutable view converts to a read-only one there).
template <class T>
using nodeduce = typename identity<T>::type;

}  // namespace detail

// Any kind of the registry of operations (op_at), for callers that
// enumerate kinds; the named forms below are these with the kind set.
template <class X, class Y, class P = float>
Status norm(Kind kind, Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
            const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  static_assert(!detail::kIsInt8<Y>,
                "int8_t output: use rms_norm_quant or "
                "layer_norm_quant, which take the scales");
  if (!detail::same_shape(x, y)) return Status::kInvalidShape;
  return normalize(make_desc(kind, x, y, gamma, beta, opt));
}

template <class X, class Y, class P = float>
Status add_norm(Kind kind, Rows<const X> x,
                Rows<const detail::nodeduce<X>> residual, Rows<Y> y,
                Rows<detail::nodeduce<X>> sum_out, const P* gamma = nullptr,
                const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  if (!detail::same_shape(x, residual) || !detail::same_shape(x, y) ||
      (sum_out.data != nullptr && !detail::same_shape(x, sum_out))) {
    return Status::kInvalidShape;
  }
  simdnorm_desc d = make_desc(kind, x, y, gamma, beta, opt);
  d.residual = residual.data;
  d.residual_stride = residual.stride;
  d.sum_out = sum_out.data;
  d.sum_out_stride = sum_out.stride;
  return normalize(d);
}

template <class X, class P = float>
Status norm_quant(Kind kind, Rows<const X> x, Rows<int8_t> q, float* scales,
                  size_t group, const P* gamma = nullptr,
                  const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  if (!detail::same_shape(x, q)) return Status::kInvalidShape;
  simdnorm_desc d = make_desc(kind, x, q, gamma, beta, opt);
  d.y_scale = scales;
  d.quant_group = group;
  return normalize(d);
}

template <class X, class Y, class P = float>
Status layer_norm(Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
                  const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  return norm(Kind::kLayerNorm, x, y, gamma, beta, opt);
}

template <class X, class Y, class P = float>
Status rms_norm(Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
                const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  return norm(Kind::kRMSNorm, x, y, gamma, beta, opt);
}

// y = x / max(||x||_2, eps) * gamma (+ beta): torch.nn.functional.normalize
// over each row, with optional weights. The default eps is torch's, 1e-12.
template <class X, class Y, class P = float>
Status l2_norm(Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
               const detail::nodeduce<P>* beta = nullptr,
               Options opt = {1e-12f}) {
  return norm(Kind::kL2Norm, x, y, gamma, beta, opt);
}

// Fused residual add: h = x + residual, rounded once to X, is stored in
// sum_out (unless sum_out.data is null; it may be exactly x or exactly
// residual) and normalized into y. residual, y and sum_out have x's shape.
template <class X, class Y, class P = float>
Status add_layer_norm(Rows<const X> x, Rows<const detail::nodeduce<X>> residual,
                      Rows<Y> y, Rows<detail::nodeduce<X>> sum_out,
                      const P* gamma = nullptr,
                      const detail::nodeduce<P>* beta = nullptr,
                      Options opt = {}) {
  return add_norm(Kind::kLayerNorm, x, residual, y, sum_out, gamma, beta, opt);
}

template <class X, class Y, class P = float>
Status add_rms_norm(Rows<const X> x, Rows<const detail::nodeduce<X>> residual,
                    Rows<Y> y, Rows<detail::nodeduce<X>> sum_out,
                    const P* gamma = nullptr,
                    const detail::nodeduce<P>* beta = nullptr,
                    Options opt = {}) {
  return add_norm(Kind::kRMSNorm, x, residual, y, sum_out, gamma, beta, opt);
}

// vLLM's fused_add_rms_norm, both in place: residual becomes x + residual
// (rounded to X), x becomes the RMSNorm of that. Same shapes.
template <class X, class P = float>
Status fused_add_rms_norm(Rows<X> x, Rows<detail::nodeduce<X>> residual,
                          const P* gamma = nullptr, Options opt = {}) {
  static_assert(!std::is_const_v<X>, "both views are updated in place");
  return add_norm(Kind::kRMSNorm, Rows<const X>(x), Rows<const X>(residual), x,
                  residual, gamma, static_cast<const P*>(nullptr), opt);
}

// Floats of scales per row for int8 output in groups of `group` elements (0
// = the whole row): ceil(cols / group). cols > 0.
constexpr size_t quant_scales_per_row(size_t cols, size_t group) {
  return group == 0 || group >= cols ? 1 : (cols - 1) / group + 1;
}

// Normalization quantized to symmetric int8 per group of `group` elements of
// a row (0 = the whole row): scale = max|y| / 127, q = round(y / scale).
// `scales` holds rows * quant_scales_per_row(cols, group) floats, dense.
template <class X, class P = float>
Status layer_norm_quant(Rows<const X> x, Rows<int8_t> q, float* scales,
                        size_t group, const P* gamma = nullptr,
                        const detail::nodeduce<P>* beta = nullptr,
                        Options opt = {}) {
  return norm_quant(Kind::kLayerNorm, x, q, scales, group, gamma, beta, opt);
}

template <class X, class P = float>
Status rms_norm_quant(Rows<const X> x, Rows<int8_t> q, float* scales,
                      size_t group, const P* gamma = nullptr,
                      const detail::nodeduce<P>* beta = nullptr,
                      Options opt = {}) {
  return norm_quant(Kind::kRMSNorm, x, q, scales, group, gamma, beta, opt);
}

// ------------------------------------------------------------ Backward
//
// The gradients of a normalization (simdnorm.h, "Backward"): dx from x (the
// forward's input) and dy, and optionally dgamma and dbeta (cols floats
// each, overwritten with the sums over all rows). dx may be exactly dy (in
// place). Of Options, eps, max_threads and gamma_offset apply (the
// forward's); round_normalized and fast_rounding do not.

// Fills a C backward descriptor from typed views; rows and cols are x's.
template <class X, class DY, class DX, class P = float>
simdnorm_backward_desc make_backward_desc(Kind kind, Rows<const X> x,
                                          Rows<const DY> dy, Rows<DX> dx,
                                          const P* gamma, float* dgamma,
                                          float* dbeta, Options opt) {
  static_assert(!std::is_const_v<DX>, "the dx view must be mutable");
  static_assert(!detail::kIsInt8<X> && !detail::kIsInt8<DY> &&
                    !detail::kIsInt8<DX> && !detail::kIsInt8<P>,
                "the backward has no int8 operands");
  simdnorm_backward_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = x.rows;
  d.cols = x.cols;
  d.x = x.data;
  d.x_type = static_cast<simdnorm_dtype>(dtype_of<X>());
  d.x_stride = x.stride;
  d.dy = dy.data;
  d.dy_type = static_cast<simdnorm_dtype>(dtype_of<DY>());
  d.dy_stride = dy.stride;
  d.dx = dx.data;
  d.dx_type = static_cast<simdnorm_dtype>(dtype_of<DX>());
  d.dx_stride = dx.stride;
  d.gamma = gamma;
  d.param_type = static_cast<simdnorm_dtype>(dtype_of<P>());
  d.gamma_offset = opt.gamma_offset;
  d.eps = opt.eps;
  d.dgamma = dgamma;
  d.dbeta = dbeta;
  d.max_threads = opt.max_threads;
  d.mean = opt.stats.mean;
  d.rstd = opt.stats.rstd;
  return d;
}

// The C entry points with this header's descriptor size.
inline Status backward(const simdnorm_backward_desc& d) {
  return static_cast<Status>(simdnorm_backward_sized(&d, sizeof(d)));
}
inline Status backward_reference(const simdnorm_backward_desc& d) {
  return static_cast<Status>(simdnorm_backward_reference_sized(&d, sizeof(d)));
}

// Any kind of the registry that has a backward (op_info::has_backward);
// dy and dx have x's shape.
template <class X, class DY, class DX, class P = float>
Status norm_backward(Kind kind, Rows<const X> x, Rows<const DY> dy, Rows<DX> dx,
                     const P* gamma = nullptr, float* dgamma = nullptr,
                     float* dbeta = nullptr, Options opt = {}) {
  if (!detail::same_shape(x, dy) || !detail::same_shape(x, dx)) {
    return Status::kInvalidShape;
  }
  return backward(
      make_backward_desc(kind, x, dy, dx, gamma, dgamma, dbeta, opt));
}

template <class X, class DY, class DX, class P = float>
Status layer_norm_backward(Rows<const X> x, Rows<const DY> dy, Rows<DX> dx,
                           const P* gamma = nullptr, float* dgamma = nullptr,
                           float* dbeta = nullptr, Options opt = {}) {
  return norm_backward(Kind::kLayerNorm, x, dy, dx, gamma, dgamma, dbeta, opt);
}

template <class X, class DY, class DX, class P = float>
Status rms_norm_backward(Rows<const X> x, Rows<const DY> dy, Rows<DX> dx,
                         const P* gamma = nullptr, float* dgamma = nullptr,
                         float* dbeta = nullptr, Options opt = {}) {
  return norm_backward(Kind::kRMSNorm, x, dy, dx, gamma, dgamma, dbeta, opt);
}

// The default eps is torch's, 1e-12, as for l2_norm.
template <class X, class DY, class DX, class P = float>
Status l2_norm_backward(Rows<const X> x, Rows<const DY> dy, Rows<DX> dx,
                        const P* gamma = nullptr, float* dgamma = nullptr,
                        float* dbeta = nullptr, Options opt = {1e-12f}) {
  return norm_backward(Kind::kL2Norm, x, dy, dx, gamma, dgamma, dbeta, opt);
}

// GroupNorm and InstanceNorm over x of shape (n, c, *spatial), hw = the
// spatial product, in `layout` (simdnorm.h, simdnorm_group_desc); y has
// x's shape and layout and may be x. 16-bit y are correctly rounded
// (opt.fast_rounding: the fp32 result rounded); gamma_offset and
// round_normalized do not apply (kInvalidArgument when set).
enum class Layout : int { kNCHW = SIMDNORM_NCHW, kNHWC = SIMDNORM_NHWC };

inline Status group_norm(const simdnorm_group_desc& d) {
  return static_cast<Status>(simdnorm_group_norm_sized(&d, sizeof(d)));
}
inline Status group_norm_reference(const simdnorm_group_desc& d) {
  return static_cast<Status>(
      simdnorm_group_norm_reference_sized(&d, sizeof(d)));
}

template <class X, class Y, class P = float>
simdnorm_group_desc make_group_desc(
    const X* x, Y* y, size_t n, size_t c, size_t hw, size_t groups,
    Layout layout, const P* gamma,
    const typename detail::identity<P>::type* beta, Options opt) {
  simdnorm_group_desc d{};
  d.n = n;
  d.c = c;
  d.hw = hw;
  d.groups = groups;
  d.layout = static_cast<simdnorm_layout>(layout);
  d.x = x;
  d.x_type = static_cast<simdnorm_dtype>(dtype_of<X>());
  d.y = y;
  d.y_type = static_cast<simdnorm_dtype>(dtype_of<Y>());
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = static_cast<simdnorm_dtype>(dtype_of<P>());
  d.eps = opt.eps;
  d.max_threads = opt.max_threads;
  d.flags = opt.fast_rounding ? unsigned{SIMDNORM_FAST_ROUNDING} : 0u;
  d.mean_out = opt.stats.mean;
  d.rstd_out = opt.stats.rstd;
  return d;
}

template <class X, class Y, class P = float>
Status group_norm(const X* x, Y* y, size_t n, size_t c, size_t hw,
                  size_t groups, Layout layout = Layout::kNCHW,
                  const P* gamma = nullptr,
                  const detail::nodeduce<P>* beta = nullptr, Options opt = {}) {
  if (opt.gamma_offset != 0.0f || opt.round_normalized) {
    return Status::kInvalidArgument;
  }
  return group_norm(
      make_group_desc(x, y, n, c, hw, groups, layout, gamma, beta, opt));
}

// InstanceNorm: group_norm with one group per channel.
template <class X, class Y, class P = float>
Status instance_norm(const X* x, Y* y, size_t n, size_t c, size_t hw,
                     Layout layout = Layout::kNCHW, const P* gamma = nullptr,
                     const detail::nodeduce<P>* beta = nullptr,
                     Options opt = {}) {
  return group_norm(x, y, n, c, hw, c, layout, gamma, beta, opt);
}

// BatchNorm over x of shape (n, c, *spatial) in `layout` (simdnorm.h,
// simdnorm_batch_desc). Inference (training == false) reads running_mean
// and running_var (required); training normalizes by the batch's
// statistics, updates the running statistics when given and writes
// save_mean / save_invstd when given (when both are nullptr, opt.stats's
// mean and rstd instead). y may be x. 16-bit y as for group_norm;
// gamma_offset and round_normalized do not apply.
inline Status batch_norm(const simdnorm_batch_desc& d) {
  return static_cast<Status>(simdnorm_batch_norm_sized(&d, sizeof(d)));
}
inline Status batch_norm_reference(const simdnorm_batch_desc& d) {
  return static_cast<Status>(
      simdnorm_batch_norm_reference_sized(&d, sizeof(d)));
}

template <class X, class Y, class P = float>
Status batch_norm(const X* x, Y* y, size_t n, size_t c, size_t hw,
                  Layout layout, float* running_mean, float* running_var,
                  bool training, float momentum = 0.1f,
                  const P* gamma = nullptr,
                  const detail::nodeduce<P>* beta = nullptr, Options opt = {},
                  float* save_mean = nullptr, float* save_invstd = nullptr) {
  if (opt.gamma_offset != 0.0f || opt.round_normalized) {
    return Status::kInvalidArgument;
  }
  const simdnorm_group_desc g =
      make_group_desc(x, y, n, c, hw, 1, layout, gamma, beta, opt);
  simdnorm_batch_desc d{};
  d.n = n;
  d.c = c;
  d.hw = hw;
  d.layout = g.layout;
  d.x = x;
  d.x_type = g.x_type;
  d.y = y;
  d.y_type = g.y_type;
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = g.param_type;
  d.running_mean = running_mean;
  d.running_var = running_var;
  const bool given = save_mean != nullptr || save_invstd != nullptr;
  d.save_mean = given ? save_mean : opt.stats.mean;
  d.save_invstd = given ? save_invstd : opt.stats.rstd;
  d.momentum = momentum;
  d.eps = opt.eps;
  d.training = training ? 1 : 0;
  d.max_threads = g.max_threads;
  d.flags = g.flags;
  return batch_norm(d);
}

// The channel kinds' backward passes (simdnorm.h): dx from x (the
// forward's input) and dy, all three of x's shape (n, c, *spatial), hw =
// the spatial product, and layout; dx may be exactly dy (same type: in
// place). dgamma and dbeta: c floats each, overwritten with the sums
// (nullptr = not wanted). Of Options, eps and max_threads apply (the
// forward's), and stats: the forward's saved statistics, read instead of
// recomputed (both or neither); gamma_offset does not (kInvalidArgument
// when set), round_normalized and fast_rounding are ignored.
inline Status group_norm_backward(const simdnorm_group_backward_desc& d) {
  return static_cast<Status>(simdnorm_group_norm_backward_sized(&d, sizeof(d)));
}
inline Status batch_norm_backward(const simdnorm_batch_backward_desc& d) {
  return static_cast<Status>(simdnorm_batch_norm_backward_sized(&d, sizeof(d)));
}

namespace detail {
// The fields the channel backward descriptors (group, batch) share.
template <class Desc, class X, class DY, class DX, class P>
Desc channel_grad_desc(const X* x, const DY* dy, DX* dx, size_t n, size_t c,
                       size_t hw, Layout layout, const P* gamma, float* dgamma,
                       float* dbeta, const Options& opt) {
  static_assert(!kIsInt8<X> && !kIsInt8<DY> && !kIsInt8<DX> && !kIsInt8<P>,
                "the backward has no int8 operands");
  Desc d{};
  d.n = n;
  d.c = c;
  d.hw = hw;
  d.layout = static_cast<simdnorm_layout>(layout);
  d.x = x;
  d.x_type = static_cast<simdnorm_dtype>(dtype_of<X>());
  d.dy = dy;
  d.dy_type = static_cast<simdnorm_dtype>(dtype_of<DY>());
  d.dx = dx;
  d.dx_type = static_cast<simdnorm_dtype>(dtype_of<DX>());
  d.gamma = gamma;
  d.param_type = static_cast<simdnorm_dtype>(dtype_of<P>());
  d.eps = opt.eps;
  d.dgamma = dgamma;
  d.dbeta = dbeta;
  d.max_threads = opt.max_threads;
  return d;
}
}  // namespace detail

// GroupNorm's (InstanceNorm's: groups = c) backward; opt.stats: n * groups
// floats each, as group_norm wrote them.
template <class X, class DY, class DX, class P = float>
Status group_norm_backward(const X* x, const DY* dy, DX* dx, size_t n, size_t c,
                           size_t hw, size_t groups,
                           Layout layout = Layout::kNCHW,
                           const P* gamma = nullptr, float* dgamma = nullptr,
                           float* dbeta = nullptr, Options opt = {}) {
  if (opt.gamma_offset != 0.0f) return Status::kInvalidArgument;
  auto d = detail::channel_grad_desc<simdnorm_group_backward_desc>(
      x, dy, dx, n, c, hw, layout, gamma, dgamma, dbeta, opt);
  d.groups = groups;
  d.mean = opt.stats.mean;
  d.rstd = opt.stats.rstd;
  return group_norm_backward(d);
}

// BatchNorm's backward: inference (training == false) reads running_mean
// and running_var (required); training recomputes the batch's statistics,
// or reads opt.stats (c floats each: batch_norm's save_mean and
// save_invstd).
template <class X, class DY, class DX, class P = float>
Status batch_norm_backward(const X* x, const DY* dy, DX* dx, size_t n, size_t c,
                           size_t hw, Layout layout, const float* running_mean,
                           const float* running_var, bool training,
                           const P* gamma = nullptr, float* dgamma = nullptr,
                           float* dbeta = nullptr, Options opt = {}) {
  if (opt.gamma_offset != 0.0f) return Status::kInvalidArgument;
  auto d = detail::channel_grad_desc<simdnorm_batch_backward_desc>(
      x, dy, dx, n, c, hw, layout, gamma, dgamma, dbeta, opt);
  d.running_mean = running_mean;
  d.running_var = running_var;
  d.training = training ? 1 : 0;
  d.save_mean = opt.stats.mean;
  d.save_invstd = opt.stats.rstd;
  return batch_norm_backward(d);
}

// The registry of operations (simdnorm.h): every kind, with what it accepts.
inline size_t op_count() { return simdnorm_op_count(); }
inline const simdnorm_op_info* op_at(size_t i) { return simdnorm_op_at(i); }
inline const simdnorm_op_info* op_of(Kind k) {
  return simdnorm_op_of(static_cast<simdnorm_kind>(k));
}

// ISA control: see simdnorm.h.
inline size_t isa_count() { return simdnorm_isa_count(); }
inline std::string_view isa_name(size_t i) {
  const char* n = simdnorm_isa_name(i);
  return n ? std::string_view(n) : std::string_view();
}
inline Status set_isa(const char* name) {
  return static_cast<Status>(simdnorm_set_isa(name));
}
inline std::string_view active_isa() { return simdnorm_active_isa(); }

}  // namespace simdnorm

#endif  // SIMDNORM_SIMDNORM_HPP_
