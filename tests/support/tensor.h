// The channel kinds' tests (GroupNorm, BatchNorm): a tensor of one dtype
// set from doubles and read exactly, the flat index of an element in a
// layout, and the check of results against exact values within a bound.
#ifndef SIMDNORM_TESTS_SUPPORT_TENSOR_H_
#define SIMDNORM_TESTS_SUPPORT_TENSOR_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "support/half.h"

namespace simdnorm_test {

// A tensor of one dtype, set from doubles (rounded once) and read exactly.
struct Tensor {
  simdnorm_dtype t;
  std::vector<uint8_t> bytes;
  Tensor(simdnorm_dtype type, size_t n)
      : t(type), bytes(n * (type == SIMDNORM_F32 ? 4 : 2)) {}
  size_t size() const { return bytes.size() / (t == SIMDNORM_F32 ? 4 : 2); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  uint32_t Bits(size_t i) const {
    if (t == SIMDNORM_F32) {
      uint32_t u;
      std::memcpy(&u, &bytes[4 * i], 4);
      return u;
    }
    uint16_t u;
    std::memcpy(&u, &bytes[2 * i], 2);
    return u;
  }
  double Get(size_t i) const {
    if (t == SIMDNORM_F32) return FloatFromBits(Bits(i));
    return HalfToDouble(HalfOf(t), static_cast<uint16_t>(Bits(i)));
  }
  void Set(size_t i, double v) {
    if (t == SIMDNORM_F32) {
      const float f = static_cast<float>(v);
      std::memcpy(&bytes[4 * i], &f, 4);
    } else {
      const uint16_t h = RoundToHalf(HalfOf(t), v);
      std::memcpy(&bytes[2 * i], &h, 2);
    }
  }
  bool IsNaN(size_t i) const { return std::isnan(Get(i)); }
};

// The flat index of (sample, channel, position) of an (n, c, hw) tensor.
inline size_t ChannelIndex(size_t c, size_t hw, simdnorm_layout l, size_t i,
                           size_t ch, size_t p) {
  return l == SIMDNORM_NCHW ? (i * c + ch) * hw + p : (i * hw + p) * c + ch;
}

// The fields a channel forward descriptor (simdnorm_group_desc,
// simdnorm_batch_desc) shares: the shape, x, y (f32) and eps; no weights.
template <class Desc>
void FillChannelForward(Desc& d, size_t n, size_t c, size_t hw,
                        simdnorm_layout layout, const Tensor& x, float* y,
                        float eps) {
  d.n = n;
  d.c = c;
  d.hw = hw;
  d.layout = layout;
  d.x = x.data();
  d.x_type = x.t;
  d.y = y;
  d.y_type = SIMDNORM_F32;
  d.eps = eps;
}

// y against exact values: f32 within bound[k]; 16-bit a rounding of some
// value within bound[k] of exact[k]; NaN exact values the default quiet
// NaN. Returns the number of failures (reporting the first few as
// GoogleTest failures).
int CheckWithin(const Tensor& y, const std::vector<double>& exact,
                const std::vector<double>& bound, const char* what);

// The library's reference output `ref` must be the exact values rounded
// once (NaN where they are NaN).
void ExpectRoundedOnce(const Tensor& ref, const std::vector<double>& exact,
                       const char* what);

// A kind of another descriptor: not among the row kinds (AllKinds), and
// refused by simdnorm_normalize and simdnorm_backward.
void ExpectNotARowKind(simdnorm_kind kind);

// A descriptor's sizes through its _sized entry point: below min_size
// INVALID_ARGUMENT; longer with a non-zero unknown field UNSUPPORTED (then
// `untouched` checks that nothing was written); longer with zeros OK.
template <class Desc>
void ExpectDescriptorSizes(simdnorm_status (*sized)(const Desc*, size_t),
                           const Desc& good, size_t min_size,
                           const std::function<void()>& untouched) {
  EXPECT_EQ(sized(&good, min_size - 1), SIMDNORM_INVALID_ARGUMENT);
  struct Longer {
    Desc d;
    uint64_t extra;
  } longer{good, 1};
  EXPECT_EQ(sized(&longer.d, sizeof(longer)), SIMDNORM_UNSUPPORTED);
  untouched();
  longer.extra = 0;
  EXPECT_EQ(sized(&longer.d, sizeof(longer)), SIMDNORM_OK);
}

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_TENSOR_H_
