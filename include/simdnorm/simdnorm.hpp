// simdnorm C++ API: typed views over the same core as the C API.
//
//   simdnorm::Rows<const float> x(data, rows, cols);           // dense rows
//   simdnorm::Rows<simdnorm::bf16> y(out, rows, cols, stride);  // strided
//   simdnorm::Status s = simdnorm::layer_norm(x, y, gamma, beta, 1e-5f);
//
// Element types: float or simdnorm::bf16, chosen independently for x, y and
// the parameters. The math, aliasing and threading rules are those of
// simdnorm.h. Nothing here throws or allocates.
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
  kRMSNorm = SIMDNORM_RMSNORM
};

enum class DType : int { kF32 = SIMDNORM_F32, kBF16 = SIMDNORM_BF16 };

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

namespace detail {
template <class T>
struct identity {
  using type = T;
};
}  // namespace detail

template <class T>
constexpr DType dtype_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, bf16>,
                "simdnorm element types are float and simdnorm::bf16");
  return std::is_same_v<U, float> ? DType::kF32 : DType::kBF16;
}

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

// Optional settings of one call.
struct Options {
  float eps = 1e-5f;
  size_t max_threads = 0;  // 0 = arena default, 1 = calling thread only
};

// Fills a C descriptor from typed views; rows and cols are taken from x
// (normalize reports a shape mismatch between x and y as kInvalidShape).
template <class X, class Y, class P = float>
simdnorm_desc make_desc(Kind kind, Rows<const X> x, Rows<Y> y, const P* gamma,
                        const typename detail::identity<P>::type* beta,
                        Options opt) {
  static_assert(!std::is_const_v<Y>, "the output view must be mutable");
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
  return d;
}

// The core entry point (C++ linkage). The C API is a thin layer over it.
SIMDNORM_API Status normalize(const simdnorm_desc& d);
SIMDNORM_API Status normalize_reference(const simdnorm_desc& d);

// The float64 truth for one descriptor, unrounded: out and (optionally) xhat,
// the normalized value before gamma/beta, each rows * cols doubles, dense.
SIMDNORM_API Status reference_f64(const simdnorm_desc& d, double* out,
                                  double* xhat);

namespace detail {
template <class X, class Y>
inline bool same_shape(const Rows<const X>& x, const Rows<Y>& y) {
  return x.rows == y.rows && x.cols == y.cols;
}
}  // namespace detail

template <class X, class Y, class P = float>
Status layer_norm(Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
                  const typename detail::identity<P>::type* beta = nullptr,
                  Options opt = {}) {
  if (!detail::same_shape(x, y)) return Status::kInvalidShape;
  return normalize(make_desc(Kind::kLayerNorm, x, y, gamma, beta, opt));
}

template <class X, class Y, class P = float>
Status rms_norm(Rows<const X> x, Rows<Y> y, const P* gamma = nullptr,
                const typename detail::identity<P>::type* beta = nullptr,
                Options opt = {}) {
  if (!detail::same_shape(x, y)) return Status::kInvalidShape;
  return normalize(make_desc(Kind::kRMSNorm, x, y, gamma, beta, opt));
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
