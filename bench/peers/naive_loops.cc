// The hand-written peer: what one writes without SIMD or a library. Built
// -O3 -march=native without -ffast-math (see CMakeLists.txt), so the float
// sums stay sequential and scalar, as in most hand-rolled inference code.
//
// Nothing here is inline code shared with other translation units (no
// templates from library headers), so -march=native cannot leak into them.
#include "naive_loops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace simdnorm_peers {
namespace detail {
namespace {

struct Bf16 {
  uint16_t bits;
};

inline float load(const float* p, size_t i) { return p[i]; }
inline float load(const Bf16* p, size_t i) {
  const uint32_t u = static_cast<uint32_t>(p[i].bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline void store(float* p, size_t i, float v) { p[i] = v; }
inline void store(Bf16* p, size_t i, float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    p[i].bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    return;
  }
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even
  p[i].bits = static_cast<uint16_t>(u >> 16);
}

// LayerNorm (kCentered: the mean, then the centered sum of squares), or
// RMSNorm and L2 (the sum of squares only).
template <bool kCentered, class X, class Y, class P>
void NormRows(const simdnorm_desc& d, size_t r0, size_t r1) {
  const size_t n = d.cols;
  const size_t xs = d.x_stride ? d.x_stride : n;
  const size_t ys = d.y_stride ? d.y_stride : n;
  const P* gamma = static_cast<const P*>(d.gamma);
  const P* beta = static_cast<const P*>(d.beta);
  for (size_t r = r0; r < r1; ++r) {
    const X* x = static_cast<const X*>(d.x) + r * xs;
    Y* y = static_cast<Y*>(d.y) + r * ys;
    float mean = 0.0f;
    if (kCentered) {
      for (size_t i = 0; i < n; ++i) mean += load(x, i);
      mean /= static_cast<float>(n);
    }
    float sq = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      const float c = kCentered ? load(x, i) - mean : load(x, i);
      sq += c * c;
    }
    const float inv =
        !kCentered && d.kind == SIMDNORM_L2NORM
            ? 1.0f / std::max(std::sqrt(sq), d.eps)
            : 1.0f / std::sqrt(sq / static_cast<float>(n) + d.eps);
    for (size_t i = 0; i < n; ++i) {
      float v = (kCentered ? load(x, i) - mean : load(x, i)) * inv;
      if (gamma) v *= load(gamma, i);
      if (beta) v += load(beta, i);
      store(y, i, v);
    }
  }
}

template <class X, class Y, class P>
void Rows(const simdnorm_desc& d, size_t r0, size_t r1) {
  if (d.kind != SIMDNORM_LAYERNORM) {  // RMSNorm, L2
    NormRows<false, X, Y, P>(d, r0, r1);
  } else {
    NormRows<true, X, Y, P>(d, r0, r1);
  }
}

template <class X, class Y>
bool WithParams(const simdnorm_desc& d, size_t r0, size_t r1) {
  switch (d.param_type) {
    case SIMDNORM_F32:
      Rows<X, Y, float>(d, r0, r1);
      return true;
    case SIMDNORM_BF16:
      Rows<X, Y, Bf16>(d, r0, r1);
      return true;
    default:
      return false;  // F16 and I8: not in the textbook loop
  }
}

template <class X>
bool WithY(const simdnorm_desc& d, size_t r0, size_t r1) {
  switch (d.y_type) {
    case SIMDNORM_F32:
      return WithParams<X, float>(d, r0, r1);
    case SIMDNORM_BF16:
      return WithParams<X, Bf16>(d, r0, r1);
    default:
      return false;
  }
}

}  // namespace

bool naive_rows(const simdnorm_desc& d, size_t r0, size_t r1) {
  switch (d.x_type) {
    case SIMDNORM_F32:
      return WithY<float>(d, r0, r1);
    case SIMDNORM_BF16:
      return WithY<Bf16>(d, r0, r1);
    default:
      return false;
  }
}

}  // namespace detail
}  // namespace simdnorm_peers
