// Shared helpers of the simdnorm test suite: deterministic data, guarded
// buffers of every dtype (F32, BF16, F16, I8), bf16 and f16 helpers, the
// checkers against the float64 reference, the runner of one call (Case,
// Call, RunCaseOn) and the per-ISA test fixture.
#ifndef SIMDNORM_TESTS_TEST_UTIL_H_
#define SIMDNORM_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_test {

using simdnorm::bf16;

// ---------------------------------------------------------------- names

inline const char* KindName(simdnorm_kind k) {
  return k == SIMDNORM_LAYERNORM ? "LayerNorm" : "RMSNorm";
}
inline const char* DTypeName(simdnorm_dtype t) {
  switch (t) {
    case SIMDNORM_F32:
      return "F32";
    case SIMDNORM_BF16:
      return "BF16";
    case SIMDNORM_F16:
      return "F16";
    case SIMDNORM_I8:
      return "I8";
  }
  return "?";
}
inline size_t ElemSize(simdnorm_dtype t) {
  return t == SIMDNORM_F32 ? 4 : t == SIMDNORM_I8 ? 1 : 2;
}
// BF16 or F16: the two 16-bit float types.
inline bool Is16(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 || t == SIMDNORM_F16;
}

struct DTypes {
  simdnorm_dtype x, y, param;
};

// The 8 combinations of (x_type, y_type, param_type).
inline std::vector<DTypes> AllDTypes() {
  std::vector<DTypes> v;
  for (simdnorm_dtype x : {SIMDNORM_F32, SIMDNORM_BF16}) {
    for (simdnorm_dtype y : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (simdnorm_dtype p : {SIMDNORM_F32, SIMDNORM_BF16}) {
        v.push_back({x, y, p});
      }
    }
  }
  return v;
}

// The 19 combinations of (x_type, y_type, param_type) over F32, BF16 and F16
// that involve F16 (the other 8 are AllDTypes()).
inline std::vector<DTypes> F16DTypes() {
  std::vector<DTypes> v;
  for (simdnorm_dtype x : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
    for (simdnorm_dtype y : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
      for (simdnorm_dtype p : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
        if (x == SIMDNORM_F16 || y == SIMDNORM_F16 || p == SIMDNORM_F16) {
          v.push_back({x, y, p});
        }
      }
    }
  }
  return v;
}

// Row lengths of the spec: 1..17, 31..33, 63..65, 127..129, 896, 897, 4096,
// 4097, 16384.
inline const std::vector<size_t>& AllCols() {
  static const std::vector<size_t> cols = [] {
    std::vector<size_t> c;
    for (size_t i = 1; i <= 17; ++i) c.push_back(i);
    for (size_t base : {32u, 64u, 128u}) {
      c.push_back(base - 1);
      c.push_back(base);
      c.push_back(base + 1);
    }
    for (size_t n : {896u, 897u, 4096u, 4097u, 16384u}) c.push_back(n);
    return c;
  }();
  return cols;
}

// ---------------------------------------------------------------- bf16, f16

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The two 16-bit float formats. Both are sign-magnitude with the biased
// exponent above the stored mantissa bits, like IEEE binary32, so one set of
// functions serves both:
//  - bf16: the top half of a binary32; 8 significant bits, normal
//    exponents -126..127, subnormals below 2^-126.
//  - f16: IEEE binary16; 11 significant bits, normal exponents -14..15,
//    subnormals below 2^-14, largest finite 65504.
enum class Half { kBf16, kF16 };

struct HalfFormat {
  const char* name;
  int digits;      // significant bits, the implicit leading one included
  int emin, emax;  // exponents of the smallest and largest normal binades
  uint16_t inf;    // bits of +infinity (= the exponent field's mask)
  uint16_t qnan;   // the default quiet NaN
};

inline const HalfFormat& FormatOf(Half h) {
  static const HalfFormat kBf16{"bf16", 8, -126, 127, 0x7F80u, 0x7FC0u};
  static const HalfFormat kF16{"f16", 11, -14, 15, 0x7C00u, 0x7E00u};
  return h == Half::kBf16 ? kBf16 : kF16;
}
inline Half HalfOf(simdnorm_dtype t) {
  return t == SIMDNORM_F16 ? Half::kF16 : Half::kBf16;
}

inline bool HalfIsNaN(Half h, uint16_t b) {
  return (b & 0x7FFFu) > FormatOf(h).inf;
}
inline bool HalfIsFinite(Half h, uint16_t b) {
  const uint16_t inf = FormatOf(h).inf;
  return (b & inf) != inf;
}

// The value of a 16-bit float, exactly (both formats widen exactly to
// float, and to double).
inline double HalfToDouble(Half h, uint16_t b) {
  const HalfFormat& f = FormatOf(h);
  const int mbits = f.digits - 1;
  const uint16_t mag = b & 0x7FFFu;
  const double sign = (b & 0x8000u) ? -1.0 : 1.0;
  if (mag > f.inf) return std::nan("");
  if (mag == f.inf) return sign * HUGE_VAL;
  const int field = mag >> mbits;  // biased exponent; bias = 1 - emin
  const int m = mag & ((1 << mbits) - 1);
  if (field == 0) return sign * std::ldexp(m, f.emin - mbits);  // subnormal
  return sign * std::ldexp(m + (1 << mbits), field - 1 + f.emin - mbits);
}

// Rounds a double to the format ONCE (nearest, ties to even), without going
// through float (double -> float -> 16 bits would round twice). Overflow
// gives infinity, subnormals are kept, NaN gives the default quiet NaN.
inline uint16_t RoundToHalf(Half h, double d) {
  const HalfFormat& f = FormatOf(h);
  const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  if (std::isnan(d)) return static_cast<uint16_t>(sign | f.qnan);
  const double a = std::fabs(d);
  if (a == 0.0) return sign;
  // Halfway from the largest finite value (2 - 2^(1-digits)) 2^emax to
  // 2^(emax+1) rounds to even, which is infinity.
  const double overflow =
      std::ldexp(std::ldexp(1.0, f.digits + 1) - 1.0, f.emax - f.digits);
  if (a >= overflow) return static_cast<uint16_t>(sign | f.inf);
  int e2;
  std::frexp(a, &e2);                  // a = m * 2^e2, m in [0.5, 1)
  int e = std::max(e2 - 1, f.emin);    // exponent of the binade
  const int q = e - (f.digits - 1);    // exponent of its ulp
  const double r = std::ldexp(a, -q);  // exact: a power-of-two scaling
  double n = std::floor(r);
  const double frac = r - n;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0.0)) n += 1.0;
  const double implicit = std::ldexp(1.0, f.digits - 1);
  if (n < implicit) {  // subnormal (or zero): exponent field 0
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(n));
  }
  if (n == 2.0 * implicit) {  // rounded up into the next binade
    n = implicit;
    ++e;
  }
  const unsigned field = static_cast<unsigned>(e - f.emin + 1);
  return static_cast<uint16_t>(sign | (field << (f.digits - 1)) |
                               static_cast<uint16_t>(n - implicit));
}

// Position of a 16-bit float on the number line as an integer (+0 and -0
// both 0), so that neighbours differ by 1 and ulp distances are differences.
// The same for both formats.
inline int32_t HalfOrdered(uint16_t b) {
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  return (b & 0x8000u) ? -mag : mag;
}
// The inverse of HalfOrdered (0 gives +0).
inline uint16_t HalfFromOrdered(int32_t o) {
  return static_cast<uint16_t>(o >= 0 ? o : (0x8000 | -o));
}

// bf16
inline float Bf16ToFloat(uint16_t b) { return bf16::from_bits(b).to_float(); }
inline uint16_t Bf16Bits(float f) { return bf16::from_float(f).bits; }
inline bool Bf16IsNaN(uint16_t b) { return HalfIsNaN(Half::kBf16, b); }
inline bool Bf16IsFinite(uint16_t b) { return HalfIsFinite(Half::kBf16, b); }
inline int32_t Bf16Ordered(uint16_t b) { return HalfOrdered(b); }
inline int32_t Bf16UlpDistance(uint16_t a, uint16_t b) {
  return std::abs(HalfOrdered(a) - HalfOrdered(b));
}
// What a truncating conversion (Highway's DemoteTo) produces.
inline uint16_t Bf16Truncate(float f) {
  return static_cast<uint16_t>(FloatBits(f) >> 16);
}
inline uint16_t RoundToBf16(double d) { return RoundToHalf(Half::kBf16, d); }

// f16 (IEEE binary16)
inline float F16ToFloat(uint16_t b) {
  return static_cast<float>(HalfToDouble(Half::kF16, b));  // exact
}
inline uint16_t RoundToF16(double d) { return RoundToHalf(Half::kF16, d); }
// float -> f16, nearest-even (float -> double is exact: one rounding).
inline uint16_t F16Bits(float f) { return RoundToF16(f); }
inline bool F16IsNaN(uint16_t b) { return HalfIsNaN(Half::kF16, b); }
inline bool F16IsFinite(uint16_t b) { return HalfIsFinite(Half::kF16, b); }

// ---------------------------------------------------------------- random

// Deterministic generator: std::mt19937 (fixed output by the standard) and
// our own Box-Muller, so data are the same with every standard library.
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}

  // Uniform in (0, 1) with 53 random bits.
  double Uniform() {
    const uint64_t a = gen_() >> 5;
    const uint64_t b = gen_() >> 6;
    return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b) +
            0.5) /
           9007199254740992.0;
  }

  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(Uniform()));
    const double t = 6.283185307179586 * Uniform();
    spare_ = r * std::sin(t);
    has_spare_ = true;
    return r * std::cos(t);
  }

 private:
  std::mt19937 gen_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// ---------------------------------------------------------------- data

enum class Family {
  kTypical,    // per-row mean in [-2, 2], std in [0.5, 3]
  kStdNormal,  // N(0, 1)
  kLargeMean,  // 1e4 + 1e-2 * N(0, 1)
  kOutliers,   // N(0, 1) with +-3000 in some channels
  kHuge,       // 1e25 * N(0, 1)
  kTiny,       // 1e-25 * N(0, 1)
  kConstant,   // every row constant (3, -7.25, 1e4, 0.1, 0, ...)
  kSubnormal,  // 1e-40 * N(0, 1): subnormal floats
  kLlm,        // LLM hidden state: per-channel scales, massive channels
};

inline const char* FamilyName(Family f) {
  switch (f) {
    case Family::kTypical:
      return "typical";
    case Family::kStdNormal:
      return "N(0,1)";
    case Family::kLargeMean:
      return "1e4+1e-2*N(0,1)";
    case Family::kOutliers:
      return "N(0,1)+outliers(+-3000)";
    case Family::kHuge:
      return "1e25*N(0,1)";
    case Family::kTiny:
      return "1e-25*N(0,1)";
    case Family::kConstant:
      return "constant rows";
    case Family::kSubnormal:
      return "1e-40*N(0,1) (subnormal)";
    case Family::kLlm:
      return "LLM-like (channel scales, massive channels)";
  }
  return "?";
}

inline bool IsOutlierChannel(size_t c, size_t cols) {
  return c % 61 == 7 || c + 1 == cols;
}

// rows * cols float values of a family, row-major dense.
inline std::vector<float> MakeRows(Family f, size_t rows, size_t cols,
                                   uint32_t seed) {
  static const float kConstants[] = {3.0f, -7.25f, 1e4f,  0.1f,
                                     0.0f, 1e-3f,  -2e5f, 1.0f};
  Rng rng(seed);
  std::vector<float> v(rows * cols);
  // kLlm: a fixed scale per channel (log-normal, 0.1x to 10x) and every
  // 509th channel (from 3) massive, a few hundred to a few thousand, with a
  // fixed sign, as in the hidden states of large transformers. Values stay
  // well inside the f16 range, also when two of them are added.
  std::vector<double> channel;
  if (f == Family::kLlm) {
    Rng crng(static_cast<uint32_t>(4242u + cols));
    for (size_t c = 0; c < cols; ++c) {
      const double s = std::exp(0.8 * crng.Normal());
      channel.push_back(c % 509 == 3 ? (c % 2 ? -1.0 : 1.0) * 300.0 * (1 + s)
                                     : s);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const double mean = 4.0 * rng.Uniform() - 2.0;
    const double sd = 0.5 + 2.5 * rng.Uniform();
    for (size_t c = 0; c < cols; ++c) {
      double x = 0.0;
      switch (f) {
        case Family::kTypical:
          x = mean + sd * rng.Normal();
          break;
        case Family::kStdNormal:
          x = rng.Normal();
          break;
        case Family::kLargeMean:
          x = 1e4 + 1e-2 * rng.Normal();
          break;
        case Family::kOutliers:
          x = rng.Normal();
          if (IsOutlierChannel(c, cols)) x = ((r + c) % 2) ? 3000.0 : -3000.0;
          break;
        case Family::kHuge:
          x = 1e25 * rng.Normal();
          break;
        case Family::kTiny:
          x = 1e-25 * rng.Normal();
          break;
        case Family::kConstant:
          x = kConstants[r % (sizeof(kConstants) / sizeof(kConstants[0]))];
          break;
        case Family::kSubnormal:
          x = 1e-40 * rng.Normal();
          break;
        case Family::kLlm:
          x = c % 509 == 3 ? channel[c] * (1.0 + 0.05 * rng.Normal())
                           : channel[c] * rng.Normal();
          break;
      }
      v[r * cols + c] = static_cast<float>(x);
    }
  }
  return v;
}

// Cached MakeRows with a seed derived from the arguments (tests share data).
inline const std::vector<float>& RowData(Family f, size_t rows, size_t cols) {
  static std::map<std::tuple<int, size_t, size_t>, std::vector<float>> cache;
  const auto key = std::make_tuple(static_cast<int>(f), rows, cols);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const uint32_t seed = static_cast<uint32_t>(
        12345u + 1000003u * static_cast<uint32_t>(f) + 7919u * rows + cols);
    it = cache.emplace(key, MakeRows(f, rows, cols, seed)).first;
  }
  return it->second;
}

// gamma ~ 1 + 0.5 N(0,1) (some negative), beta ~ 0.5 N(0,1); cols values.
inline const std::vector<float>& ParamData(bool gamma, size_t cols) {
  static std::map<std::pair<bool, size_t>, std::vector<float>> cache;
  const auto key = std::make_pair(gamma, cols);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Rng rng(static_cast<uint32_t>((gamma ? 777u : 999u) + 31u * cols));
    std::vector<float> v(cols);
    for (float& p : v) {
      p = static_cast<float>(gamma ? 1.0 + 0.5 * rng.Normal()
                                   : 0.5 * rng.Normal());
    }
    it = cache.emplace(key, std::move(v)).first;
  }
  return it->second;
}

// ---------------------------------------------------------------- buffers

constexpr unsigned char kSentinel = 0xA5;

// rows x cols elements of one dtype, `stride` elements apart (0 = cols),
// starting `offset` elements after a 64-byte aligned address, surrounded by
// guard bytes. Every byte that is not an element holds kSentinel, so writes
// outside the elements (padding between rows, before, after) are detected.
class Matrix {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr size_t kAlign = 64;

  Matrix(simdnorm_dtype type, size_t rows, size_t cols, size_t stride = 0,
         size_t offset = 0)
      : type_(type),
        es_(ElemSize(type)),
        rows_(rows),
        cols_(cols),
        stride_(stride ? stride : cols) {
    span_ = rows_ ? (rows_ - 1) * stride_ + cols_ : 0;
    buf_.assign(kGuard + kAlign + offset * es_ + span_ * es_ + kGuard,
                kSentinel);
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf_.data()) + kGuard;
    first_ = kGuard + (kAlign - p % kAlign) % kAlign + offset * es_;
  }
  Matrix(Matrix&&) = default;
  Matrix& operator=(Matrix&&) = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  simdnorm_dtype type() const { return type_; }
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t stride() const { return stride_; }
  void* data() { return buf_.data() + first_; }
  const void* data() const { return buf_.data() + first_; }
  const std::vector<unsigned char>& bytes() const { return buf_; }

  unsigned char* At(size_t r, size_t c) {
    return buf_.data() + first_ + (r * stride_ + c) * es_;
  }
  const unsigned char* At(size_t r, size_t c) const {
    return buf_.data() + first_ + (r * stride_ + c) * es_;
  }

  uint16_t Bits16(size_t r, size_t c) const {
    uint16_t b;
    std::memcpy(&b, At(r, c), 2);
    return b;
  }
  int8_t I8(size_t r, size_t c) const { return static_cast<int8_t>(*At(r, c)); }
  // The element's value (exact for every dtype).
  float GetF(size_t r, size_t c) const {
    switch (type_) {
      case SIMDNORM_BF16:
        return Bf16ToFloat(Bits16(r, c));
      case SIMDNORM_F16:
        return F16ToFloat(Bits16(r, c));
      case SIMDNORM_I8:
        return I8(r, c);
      default:
        break;
    }
    float f;
    std::memcpy(&f, At(r, c), 4);
    return f;
  }
  double Get(size_t r, size_t c) const { return GetF(r, c); }
  bool IsNaN(size_t r, size_t c) const { return std::isnan(GetF(r, c)); }
  bool IsFinite(size_t r, size_t c) const { return std::isfinite(GetF(r, c)); }

  // Stores v, rounded to nearest-even for BF16 and F16 (for I8: rounded
  // and clamped to [-128, 127]).
  void Set(size_t r, size_t c, float v) {
    if (Is16(type_)) {
      const uint16_t b = type_ == SIMDNORM_BF16 ? Bf16Bits(v) : F16Bits(v);
      std::memcpy(At(r, c), &b, 2);
    } else if (type_ == SIMDNORM_I8) {
      const float q = std::nearbyint(std::min(127.0f, std::max(-128.0f, v)));
      *At(r, c) = static_cast<unsigned char>(static_cast<int8_t>(q));
    } else {
      std::memcpy(At(r, c), &v, 4);
    }
  }
  void SetBits16(size_t r, size_t c, uint16_t b) {
    std::memcpy(At(r, c), &b, 2);
  }

  // values: rows * cols, row-major dense.
  void Fill(const std::vector<float>& values) {
    for (size_t r = 0; r < rows_; ++r) {
      for (size_t c = 0; c < cols_; ++c) Set(r, c, values[r * cols_ + c]);
    }
  }

  // The stored value of a float after conversion to this dtype.
  float Stored(float v) const {
    switch (type_) {
      case SIMDNORM_BF16:
        return Bf16ToFloat(Bf16Bits(v));
      case SIMDNORM_F16:
        return F16ToFloat(F16Bits(v));
      case SIMDNORM_I8:
        return std::nearbyint(std::min(127.0f, std::max(-128.0f, v)));
      default:
        return v;
    }
  }

  // The same elements in a new dense matrix without offset.
  Matrix DenseCopy() const {
    Matrix m(type_, rows_, cols_);
    for (size_t r = 0; r < rows_; ++r) {
      std::memcpy(m.At(r, 0), At(r, 0), cols_ * es_);
    }
    return m;
  }

  // The element bytes, rows * cols * element size, dense.
  std::vector<unsigned char> ElementBytes() const {
    std::vector<unsigned char> v(rows_ * cols_ * es_);
    for (size_t r = 0; r < rows_; ++r) {
      std::memcpy(v.data() + r * cols_ * es_, At(r, 0), cols_ * es_);
    }
    return v;
  }

  bool RowBytesEqual(const Matrix& o, size_t r, size_t o_r) const {
    return es_ == o.es_ && cols_ == o.cols_ &&
           std::memcmp(At(r, 0), o.At(o_r, 0), cols_ * es_) == 0;
  }

  // True when every byte outside the elements still holds kSentinel;
  // otherwise *where says which.
  bool PaddingIntact(std::string* where) const {
    auto check = [&](size_t from, size_t to, const char* what) {
      for (size_t i = from; i < to; ++i) {
        if (buf_[i] != kSentinel) {
          std::ostringstream os;
          os << "byte written " << what << " (buffer byte " << i
             << ", element base at " << first_ << ")";
          *where = os.str();
          return false;
        }
      }
      return true;
    };
    if (!check(0, first_, "before the first row")) return false;
    for (size_t r = 0; r + 1 < rows_; ++r) {
      const size_t from = first_ + (r * stride_ + cols_) * es_;
      const size_t to = first_ + (r + 1) * stride_ * es_;
      if (!check(from, to, "in the padding between rows")) return false;
    }
    return check(first_ + span_ * es_, buf_.size(), "after the last row");
  }

 private:
  simdnorm_dtype type_;
  size_t es_;
  size_t rows_, cols_, stride_;
  size_t span_ = 0;   // elements from the first to past the last element
  size_t first_ = 0;  // byte index of element (0, 0) in buf_
  std::vector<unsigned char> buf_;
};

// ---------------------------------------------------------------- checkers

// The size of the terms of y = xhat * gamma + beta that the fp32 bound is
// relative to (docs/accuracy.md, "scaled ulps").
inline double Terms(double xhat, double gamma, double beta) {
  return std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) + std::fabs(beta);
}

// The fp32 error bound of the spec, relative to the float64 truth.
inline double F32Bound(double xhat, double gamma, double beta) {
  return 32.0 * std::ldexp(1.0, -23) * Terms(xhat, gamma, beta);
}

// The bf16 rule (and the f16 rule: the same with f16's format). The spec's
// literal rule is: every element within 1 bf16 ulp of the reference rounded
// once, and exactly equal to it in >= 99.9% of the elements of a test. Two
// parts of it cannot be met by any kernel that computes in fp32 (even one
// whose fp32 result is the truth correctly rounded), so by default the suite
// applies it as follows:
//  - Where the output cancels (y = xhat*gamma + beta much smaller than
//    |gamma xhat| + |beta|), an fp32 error within the spec's fp32 bound B is
//    many bf16 ulps of y. So an element also passes when it is the rounding
//    of some value within B of the truth: got in [RNE(ref-B), RNE(ref+B)]
//    (infinity included when RNE(ref+B) is infinite: f16 overflows at 65520).
//  - Where [ref-B, ref+B] holds a bf16 rounding boundary, an fp32 kernel
//    cannot know on which side the truth lies (with bf16 gamma/beta and
//    xhat = +-1, g + b is often exactly a bf16 tie). The 99.9% rate is
//    counted over the other elements, where every result within the fp32
//    bound rounds to the reference: truncation still fails it (~50%).
// SIMDNORM_TEST_LITERAL_BF16=1 applies the literal rule instead (to f16
// output too).
inline bool LiteralBf16Rule() {
  static const bool literal = [] {
    const char* e = std::getenv("SIMDNORM_TEST_LITERAL_BF16");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return literal;
}

// Accumulated over one test.
struct Stats {
  size_t f32_checked = 0;
  double f32_worst = 0.0;   // max |y - ref| / bound
  size_t bf16_checked = 0;  // finite references
  size_t bf16_exact = 0;
  size_t bf16_window_only = 0;  // > 1 ulp off, within the fp32-bound window
  size_t bf16_conditioned = 0;  // no rounding boundary within +-B of ref
  size_t bf16_conditioned_exact = 0;
  int32_t bf16_worst_ulps = 0;
  // The same for f16 output.
  size_t f16_checked = 0;
  size_t f16_exact = 0;
  size_t f16_window_only = 0;
  size_t f16_conditioned = 0;
  size_t f16_conditioned_exact = 0;
  int32_t f16_worst_ulps = 0;
  // I8 output (CheckI8Group).
  size_t i8_groups = 0;          // groups with a finite non-zero scale
  size_t i8_scaled_only = 0;     // scale > 1e-6 off, within the scaled rule
  size_t i8_special_groups = 0;  // groups of zeros or with a non-finite max
  size_t i8_q_checked = 0;       // q of the i8_groups
  size_t i8_q_exact = 0;         // equal to the float64 q
  double i8_worst_scale = 0.0;   // max |scale - scale64| / scale64
  size_t nan_checked = 0;        // elements whose reference is NaN
  size_t failures = 0;           // elements (or buffers) out of spec
  size_t reported = 0;           // failures reported in detail

  // Set by families where many exact results sit on a bf16 rounding tie
  // (see RunFamily in hard_rows_test.cc).
  bool ties_expected = false;

  // The counters of one 16-bit output format.
  struct HalfTally {
    size_t& checked;
    size_t& exact;
    size_t& window_only;
    size_t& conditioned;
    size_t& conditioned_exact;
    int32_t& worst_ulps;
  };
  HalfTally Tally(Half h) {
    if (h == Half::kBf16) {
      return {bf16_checked,           bf16_exact,
              bf16_window_only,       bf16_conditioned,
              bf16_conditioned_exact, bf16_worst_ulps};
    }
    return {f16_checked,           f16_exact,
            f16_window_only,       f16_conditioned,
            f16_conditioned_exact, f16_worst_ulps};
  }

  // >= 99.9% of all bf16 (f16) outputs equal the once-rounded reference.
  // Where ties are expected, the share is taken over the elements that have
  // no rounding boundary within the fp32 bound of the truth.
  bool HalfRateOk(Half h) const {
    const bool b = h == Half::kBf16;
    const double checked = static_cast<double>(b ? bf16_checked : f16_checked);
    const double exact = static_cast<double>(b ? bf16_exact : f16_exact);
    const double cond =
        static_cast<double>(b ? bf16_conditioned : f16_conditioned);
    const double cond_exact =
        static_cast<double>(b ? bf16_conditioned_exact : f16_conditioned_exact);
    if (LiteralBf16Rule() || !ties_expected) return exact >= 0.999 * checked;
    return cond_exact >= 0.999 * cond;
  }
  bool Bf16RateOk() const { return HalfRateOk(Half::kBf16); }
  bool F16RateOk() const { return HalfRateOk(Half::kF16); }
  // A failure is reported in detail for the first few only.
  bool ShouldReport() {
    ++failures;
    return reported++ < 8;
  }
};

inline std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%0*X", digits, v);
  return buf;
}
inline std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// fp32 output element against the float64 truth. False (with *why) when out
// of spec. A NaN reference needs a NaN; an infinite one a non-finite value.
inline bool CheckF32(float got, double ref, double xhat, double gamma,
                     double beta, Stats* st, std::string* why) {
  if (std::isnan(ref)) {
    ++st->nan_checked;
    if (std::isnan(got)) return true;
    *why = "got " + Num(got) + ", want NaN (the reference is NaN)";
    return false;
  }
  if (std::isinf(ref)) {
    if (!std::isfinite(got)) return true;
    *why = "got " + Num(got) + ", want non-finite (reference " + Num(ref) + ")";
    return false;
  }
  ++st->f32_checked;
  const double bound = F32Bound(xhat, gamma, beta);
  const double err = std::fabs(static_cast<double>(got) - ref);
  if (err <= bound) {
    st->f32_worst = std::max(st->f32_worst, err / bound);
    return true;
  }
  *why = "got " + Num(got) + " (" + Hex(FloatBits(got), 8) + "), want " +
         Num(ref) + " +- " + Num(bound) + " (error " + Num(err) + " = " +
         Num(err / bound) + " x bound; xhat " + Num(xhat) + ", gamma " +
         Num(gamma) + ", beta " + Num(beta) + ")";
  return false;
}

// 16-bit float output element: `want` is the reference rounded once to the
// format (from simdnorm_normalize_reference), `ref` the float64 truth,
// `bound` the fp32 bound of the element (F32Bound). See LiteralBf16Rule for
// the rule.
inline bool CheckHalf(Half h, uint16_t got, uint16_t want, double ref,
                      double bound, Stats* st, std::string* why) {
  const char* name = FormatOf(h).name;
  auto value = [h](uint16_t b) { return Num(HalfToDouble(h, b)); };
  if (HalfIsNaN(h, want)) {
    ++st->nan_checked;
    if (HalfIsNaN(h, got)) return true;
    *why = "got " + Hex(got, 4) + " = " + value(got) +
           ", want NaN (the reference is NaN)";
    return false;
  }
  if (!HalfIsFinite(h, want)) {
    if (!HalfIsFinite(h, got)) return true;
    *why = "got " + Hex(got, 4) + ", want non-finite " + Hex(want, 4);
    return false;
  }
  Stats::HalfTally t = st->Tally(h);
  ++t.checked;
  const bool got_finite = HalfIsFinite(h, got);
  const int32_t ulps =
      got_finite ? std::abs(HalfOrdered(got) - HalfOrdered(want)) : 1 << 30;
  const uint16_t lo_bits = RoundToHalf(h, ref - bound);
  const uint16_t hi_bits = RoundToHalf(h, ref + bound);
  const int32_t lo = HalfOrdered(lo_bits);
  const int32_t hi = HalfOrdered(hi_bits);
  if (ulps == 0) ++t.exact;
  if (lo == hi) {
    ++t.conditioned;
    if (ulps == 0) ++t.conditioned_exact;
  }
  if (ulps <= 1) {
    t.worst_ulps = std::max(t.worst_ulps, ulps);
    return true;
  }
  // An infinite result is the rounding of a value within the bound only
  // where the window reaches the overflow threshold.
  const int32_t o = HalfOrdered(got);
  if (!LiteralBf16Rule() && !HalfIsNaN(h, got) && o >= lo && o <= hi &&
      (got_finite || got == lo_bits || got == hi_bits)) {
    ++t.window_only;
    if (got_finite) t.worst_ulps = std::max(t.worst_ulps, ulps);
    return true;
  }
  *why = "got " + Hex(got, 4) + " = " + value(got) + ", want " + Hex(want, 4) +
         " = " + value(want) + " (" +
         (got_finite ? std::to_string(ulps) : std::string("inf")) + " " + name +
         " ulps apart, at most 1 allowed; truth " + Num(ref) + ", fp32 bound " +
         Num(bound) + " gives [" + value(lo_bits) + ", " + value(hi_bits) +
         "])";
  return false;
}

inline bool CheckBf16(uint16_t got, uint16_t want, double ref, double bound,
                      Stats* st, std::string* why) {
  return CheckHalf(Half::kBf16, got, want, ref, bound, st, why);
}
inline bool CheckF16(uint16_t got, uint16_t want, double ref, double bound,
                     Stats* st, std::string* why) {
  return CheckHalf(Half::kF16, got, want, ref, bound, st, why);
}

// The rule of SIMDNORM_ROUND_NORMALIZED, y = round_y(round_x(xhat) * scale
// + beta). The kernel computes xhat in fp32 and rounds that to x_type; where
// the true xhat T lies within the fp32 bound Bx = F32Bound(T, 1, 0) of an
// x_type rounding boundary it may round to the neighbour of round_x(T). So
// an element passes when, for SOME r = round_x(v) with |v - T| <= Bx, it
// passes the normal output rule (CheckF32 / CheckHalf) against the truth
// r * scale + beta (float64), with the fp32 bound F32Bound(r, scale, beta)
// on top. Those r are a run of consecutive x_type values, usually one or
// two; when the run is long (x_type F32, or T within Bx of 0) it is taken
// as the interval it spans (the outputs of neighbouring r are then much
// closer together than the output bound). `got`: the output's bits (float
// bits for F32); `want`: the reference's once-rounded output bits (16-bit
// y: the exact share is counted against it); `ref`: the reference's
// unrounded y (NaN or infinite: the usual non-finite rules).
inline bool CheckRoundNormalized(simdnorm_dtype x_type, simdnorm_dtype y_type,
                                 uint32_t got, uint16_t want, double ref,
                                 double T, double scale, double beta, Stats* st,
                                 std::string* why) {
  const bool half_y = Is16(y_type);
  const Half hy = HalfOf(y_type);
  const uint16_t got16 = static_cast<uint16_t>(got);
  const float got32 = FloatFromBits(got);
  const bool got_nan = half_y ? HalfIsNaN(hy, got16) : std::isnan(got32);
  const bool got_finite =
      half_y ? HalfIsFinite(hy, got16) : std::isfinite(got32);
  const std::string got_text =
      half_y ? Hex(got16, 4) + " = " + Num(HalfToDouble(hy, got16))
             : Num(got32) + " (" + Hex(got, 8) + ")";
  if (std::isnan(ref) || std::isnan(T)) {
    ++st->nan_checked;
    if (got_nan) return true;
    *why = "got " + got_text + ", want NaN (the reference is NaN)";
    return false;
  }
  if (!std::isfinite(ref) || !std::isfinite(T) ||
      (half_y && !HalfIsFinite(hy, want))) {
    if (!got_finite) return true;
    *why = "got " + got_text + ", want non-finite (reference " + Num(ref) + ")";
    return false;
  }
  // The candidate r, as intervals [first, second].
  const double bx = F32Bound(T, 1.0, 0.0);
  std::vector<std::pair<double, double>> spans;
  if (Is16(x_type)) {
    const Half hx = HalfOf(x_type);
    const int32_t lo = HalfOrdered(RoundToHalf(hx, T - bx));
    const int32_t hi = HalfOrdered(RoundToHalf(hx, T + bx));
    if (hi - lo < 64) {
      for (int32_t o = lo; o <= hi; ++o) {
        const double r = HalfToDouble(hx, HalfFromOrdered(o));
        spans.emplace_back(r, r);
      }
    } else {
      spans.emplace_back(HalfToDouble(hx, HalfFromOrdered(lo)),
                         HalfToDouble(hx, HalfFromOrdered(hi)));
    }
  } else {
    spans.emplace_back(static_cast<float>(T - bx), static_cast<float>(T + bx));
  }
  // The normal output rule against every y in [ya, yb] (with bound b).
  const bool literal = LiteralBf16Rule();
  double best_ratio = HUGE_VAL;  // F32 y: min over spans of error / bound
  int32_t best_ulps = 1 << 30;   // 16-bit y: min ulps to a span's rounding
  bool window_only = false;
  bool pass = false;
  for (const auto& span : spans) {
    const double ya = span.first * scale + beta;
    const double yb = span.second * scale + beta;
    const double ylo = std::min(ya, yb), yhi = std::max(ya, yb);
    const double b = F32Bound(
        std::max(std::fabs(span.first), std::fabs(span.second)), scale, beta);
    if (!half_y) {
      const double g = got32;
      const double err = g < ylo ? ylo - g : g > yhi ? g - yhi : 0.0;
      if (got_finite && err <= b) {
        pass = true;
        best_ratio = std::min(best_ratio, err / b);
      }
      // +-inf where the window reaches the values that round to it.
      constexpr double kOverflow = 0x1.ffffffp127;
      if (!got_finite && !got_nan &&
          (got32 > 0 ? yhi + b >= kOverflow : ylo - b <= -kOverflow)) {
        pass = true;
      }
      continue;
    }
    const int32_t o = HalfOrdered(got16);
    const int32_t rlo = HalfOrdered(RoundToHalf(hy, ylo));
    const int32_t rhi = HalfOrdered(RoundToHalf(hy, yhi));
    const int32_t ulps = o < rlo ? rlo - o : o > rhi ? o - rhi : 0;
    if (got_finite && ulps <= 1) {
      pass = true;
      best_ulps = std::min(best_ulps, ulps);
      continue;
    }
    const uint16_t wlo = RoundToHalf(hy, ylo - b);
    const uint16_t whi = RoundToHalf(hy, yhi + b);
    if (!literal && !got_nan && o >= HalfOrdered(wlo) &&
        o <= HalfOrdered(whi) && (got_finite || got16 == whi || got16 == wlo)) {
      pass = true;
      window_only = true;
    }
  }
  if (half_y) {
    Stats::HalfTally t = st->Tally(hy);
    ++t.checked;
    const bool exact = got_finite && HalfOrdered(got16) == HalfOrdered(want);
    if (exact) ++t.exact;
    if (spans.size() == 1 && spans[0].first == spans[0].second) {
      const double y = spans[0].first * scale + beta;
      const double b = F32Bound(spans[0].first, scale, beta);
      if (RoundToHalf(hy, y - b) == RoundToHalf(hy, y + b)) {
        ++t.conditioned;
        if (exact) ++t.conditioned_exact;
      }
    }
    if (pass && best_ulps <= 1) {
      t.worst_ulps = std::max(t.worst_ulps, best_ulps);
    } else if (pass && window_only) {
      ++t.window_only;
    }
  } else {
    ++st->f32_checked;
    if (pass) st->f32_worst = std::max(st->f32_worst, best_ratio);
  }
  if (pass) return true;
  std::ostringstream os;
  os << "got " << got_text << ", want one of the outputs of round_x(v), |v - "
     << Num(T) << "| <= " << Num(bx) << ": r in";
  for (size_t i = 0; i < spans.size() && i < 4; ++i) {
    os << " [" << Num(spans[i].first) << ", " << Num(spans[i].second) << "]";
  }
  os << " (scale " << Num(scale) << ", beta " << Num(beta)
     << "); the reference's y " << Num(ref);
  if (half_y) {
    os << " rounds to " << Hex(want, 4) << " = " << Num(HalfToDouble(hy, want));
  }
  *why = os.str();
  return false;
}

// I8 output, one group of n elements. y64: the float64 truth (unrounded y,
// reference_f64) of the group; terms: Terms(xhat, scale, beta) of each
// element (NULL: the literal rule only); ref_q, ref_scale: the reference's
// stored q and scale (simdnorm_normalize_reference); got_q, got_scale: the
// library's. With s64 = max|y64| / 127 (float64):
//  - s64 finite and > 0: |got_scale - s64| <= 1e-6 s64 and every q within 1
//    of the reference's q. Like the bf16 rule, the 1e-6 is applied to the
//    scaled magnitude of the largest element, 1e-6 max(|y|, Terms) / 127:
//    where that y cancels (|y| far below |gamma| max(1, |xhat|) + |beta|,
//    e.g. a short last group, or |xhat| << 1 in LayerNorm, whose xhat has
//    an absolute fp32 error), an fp32 kernel cannot reach 1e-6 of |y| (an
//    fp32 xhat alone is off by ~2^-24 max(1, |xhat|)). Elsewhere Terms ~ |y|
//    and the rule is the literal one. SIMDNORM_TEST_LITERAL_BF16=1 applies
//    the literal 1e-6 s64 everywhere;
//  - s64 == 0 (a group of zeros): got_scale == 0 and every q == 0;
//  - s64 NaN (a NaN in the row): got_scale NaN; s64 infinite: got_scale
//    +inf; every q == 0.
// The premise is checked too: the reference's stored scale must be the
// exact max|y| / 127 rounded to float (within half an fp32 ulp of s64, or
// the scale's rule where y cancels) and its q = RNE(y / that scale) clamped
// to [-127, 127] from the exact y (within 1 of it from y64).
inline bool CheckI8Group(const int8_t* got_q, float got_scale,
                         const int8_t* ref_q, float ref_scale,
                         const double* y64, const double* terms, size_t n,
                         Stats* st, std::string* why) {
  double m = 0.0;
  double m_terms = 0.0;  // Terms of the largest |y| (the largest if tied)
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(y64[i])) {
      m = y64[i];
      break;
    }
    const double a = std::fabs(y64[i]);
    const double t = terms ? terms[i] : 0.0;
    if (a > m || (a == m && t > m_terms)) m_terms = t;
    m = std::max(m, a);
  }
  const double s64 = m / 127.0;
  auto fail = [&](const std::string& what) {
    *why = what + " (float64 scale " + Num(s64) + ", library scale " +
           Num(got_scale) + ", reference's stored scale " + Num(ref_scale) +
           ")";
    return false;
  };
  // The reference rounds the exact max|y| / 127 once to fp32: within half
  // an fp32 ulp of it where y64 is accurate, and within the scale's rule
  // below where y cancels (y64 then has a larger relative error).
  const double ref_tol =
      std::max(0x1p-24 * s64, 1e-6 * std::max(m, m_terms) / 127);
  const bool ref_ok =
      std::isnan(s64)
          ? std::isnan(ref_scale)
          : (ref_scale == static_cast<float>(s64) ||
             std::fabs(static_cast<double>(ref_scale) - s64) <= ref_tol);
  if (!ref_ok) return fail("the reference's scale is not fl32(max|y64|/127)");
  if (!std::isfinite(s64) || s64 == 0.0) {
    ++st->i8_special_groups;
    if (std::isnan(s64)) ++st->nan_checked;
    const bool scale_ok = std::isnan(s64)   ? std::isnan(got_scale)
                          : std::isinf(s64) ? got_scale == HUGE_VALF
                                            : got_scale == 0.0f;
    if (!scale_ok) return fail("wrong scale for a special group");
    for (size_t i = 0; i < n; ++i) {
      if (got_q[i] != 0 || ref_q[i] != 0) {
        return fail("element " + std::to_string(i) + ": q " +
                    std::to_string(got_q[i]) + " (reference " +
                    std::to_string(ref_q[i]) + "), want 0");
      }
    }
    return true;
  }
  ++st->i8_groups;
  const double err = std::fabs(static_cast<double>(got_scale) - s64);
  const double rel = err / s64;
  const double scaled = LiteralBf16Rule() ? s64 : std::max(m, m_terms) / 127;
  if (!(err <= 1e-6 * scaled)) {
    return fail("scale off by " + Num(rel) + " relative, at most 1e-6 (of " +
                Num(scaled) + ": " + Num(err / scaled) + ")");
  }
  if (rel > 1e-6) ++st->i8_scaled_only;
  st->i8_worst_scale = std::max(st->i8_worst_scale, rel);
  for (size_t i = 0; i < n; ++i) {
    // q = RNE(y / scale) with the fp32 scale, from the exact y, which y64
    // may not resolve next to a half-integer: that or a neighbour.
    const double v = y64[i] / static_cast<double>(ref_scale);
    const double q64 = std::min(127.0, std::max(-127.0, std::nearbyint(v)));
    if (std::fabs(static_cast<double>(ref_q[i]) - q64) > 1.0) {
      return fail("element " + std::to_string(i) + ": the reference's q " +
                  std::to_string(ref_q[i]) + " is not RNE(" + Num(y64[i]) +
                  " / scale) = " + Num(q64));
    }
    ++st->i8_q_checked;
    const int d = std::abs(static_cast<int>(got_q[i]) - ref_q[i]);
    if (d == 0) ++st->i8_q_exact;
    if (d > 1 || got_q[i] == -128) {
      return fail("element " + std::to_string(i) + ": q " +
                  std::to_string(got_q[i]) + ", want " +
                  std::to_string(ref_q[i]) + " +- 1 (y64 " + Num(y64[i]) + ")");
    }
  }
  return true;
}

// The literal rule only (no Terms known): |got_scale - s64| <= 1e-6 s64.
inline bool CheckI8Group(const int8_t* got_q, float got_scale,
                         const int8_t* ref_q, float ref_scale,
                         const double* y64, size_t n, Stats* st,
                         std::string* why) {
  return CheckI8Group(got_q, got_scale, ref_q, ref_scale, y64, nullptr, n, st,
                      why);
}

inline double Percent(size_t a, size_t b) {
  return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 100.0;
}

// The end-of-test verdict: no element out of spec, and the bf16 and f16
// rates.
inline void ExpectClean(const Stats& st) {
  EXPECT_GT(st.f32_checked + st.bf16_checked + st.f16_checked +
                st.i8_q_checked + st.i8_special_groups + st.nan_checked,
            0u)
      << "the test checked nothing";
  EXPECT_EQ(st.failures, 0u)
      << st.failures << " elements or buffers out of spec (first "
      << std::min<size_t>(st.failures, 8) << " reported above)";
  std::ostringstream summary;
  summary << "bf16 outputs: " << st.bf16_checked << ", equal to the "
          << "once-rounded reference: "
          << Percent(st.bf16_exact, st.bf16_checked)
          << "%; without a rounding boundary within the fp32 bound: "
          << st.bf16_conditioned << ", equal: "
          << Percent(st.bf16_conditioned_exact, st.bf16_conditioned)
          << "%; > 1 ulp but within the fp32-bound window (cancellation): "
          << st.bf16_window_only << "; worst " << st.bf16_worst_ulps
          << " ulps. fp32 outputs: " << st.f32_checked << ", worst error "
          << st.f32_worst << " x bound."
          << (LiteralBf16Rule() ? " [literal bf16 rule]" : "");
  if (st.bf16_checked > 0 || st.f32_checked > 0) {
    std::printf("%s\n", summary.str().c_str());
  }
  std::ostringstream f16;
  f16 << "f16 outputs: " << st.f16_checked << ", equal to the once-rounded "
      << "reference: " << Percent(st.f16_exact, st.f16_checked)
      << "%; without a rounding boundary within the fp32 bound: "
      << st.f16_conditioned
      << ", equal: " << Percent(st.f16_conditioned_exact, st.f16_conditioned)
      << "%; within the window only: " << st.f16_window_only << "; worst "
      << st.f16_worst_ulps << " ulps.";
  if (st.f16_checked > 0) std::printf("%s\n", f16.str().c_str());
  if (st.i8_groups + st.i8_special_groups > 0) {
    std::printf(
        "i8 groups: %zu (+%zu of zeros or non-finite), worst scale error "
        "%.3g relative (%zu groups > 1e-6, within the scaled rule); q: %zu, "
        "equal to the float64 q: %.4f%%\n",
        st.i8_groups, st.i8_special_groups, st.i8_worst_scale,
        st.i8_scaled_only, st.i8_q_checked,
        Percent(st.i8_q_exact, st.i8_q_checked));
  }
  EXPECT_TRUE(st.Bf16RateOk())
      << "bf16 rate below 99.9% (" << summary.str() << ")";
  EXPECT_TRUE(st.F16RateOk()) << "f16 rate below 99.9% (" << f16.str() << ")";
}

// ---------------------------------------------------------------- cases

// Where the h of a fused add is stored (simdnorm_desc.sum_out).
enum class SumOut {
  kNone,        // sum_out NULL
  kSeparate,    // its own buffer, sum_out_stride apart
  kIsResidual,  // sum_out == residual (same pointer and stride)
  kIsX,         // sum_out == x (same pointer and stride)
};

inline const char* SumOutName(SumOut s) {
  switch (s) {
    case SumOut::kNone:
      return "none";
    case SumOut::kSeparate:
      return "separate";
    case SumOut::kIsResidual:
      return "residual";
    case SumOut::kIsX:
      return "x";
  }
  return "?";
}

// The residual rows of a fused add: the family's distribution, other values
// than RowData's.
inline const std::vector<float>& ResidualData(Family f, size_t rows,
                                              size_t cols) {
  static std::map<std::tuple<int, size_t, size_t>, std::vector<float>> cache;
  const auto key = std::make_tuple(static_cast<int>(f), rows, cols);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const uint32_t seed = static_cast<uint32_t>(
        987654u + 1000003u * static_cast<uint32_t>(f) + 7919u * rows + cols);
    it = cache.emplace(key, MakeRows(f, rows, cols, seed)).first;
  }
  return it->second;
}

// One call of simdnorm_normalize, checked against the reference.
struct Case {
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  DTypes t{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32};
  size_t rows = 1;
  size_t cols = 1;
  size_t x_stride = 0;  // as passed to the library (0 = cols)
  size_t y_stride = 0;
  size_t x_offset = 0;  // elements after a 64-byte aligned address
  size_t y_offset = 0;
  size_t param_offset = 0;
  bool gamma = true;
  bool beta = true;
  bool in_place = false;  // y = x (requires t.x == t.y; uses x_stride)
  float eps = 1e-5f;
  size_t max_threads = 0;
  Family family = Family::kTypical;
  // The variants of issue #7; the defaults give the plain call.
  bool residual = false;       // fused add of ResidualData (x_offset too)
  size_t residual_stride = 0;  // as passed (0 = cols)
  SumOut sum_out = SumOut::kNone;
  size_t sum_out_stride = 0;  // kSeparate (0 = cols; y_offset too)
  float gamma_offset = 0.0f;
  unsigned flags = 0;
  size_t quant_group = 0;    // y_type I8 (0 = cols)
  double param_scale = 1.0;  // gamma and beta data are multiplied by it

  size_t Group() const { return quant_group ? quant_group : cols; }
  size_t Groups() const { return (cols + Group() - 1) / Group(); }

  std::string Describe() const {
    std::ostringstream os;
    const char* isa = simdnorm_active_isa();
    os << "[ISA " << (isa ? isa : "?") << "] " << KindName(kind)
       << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
       << " param=" << DTypeName(t.param) << " rows=" << rows
       << " cols=" << cols << " x_stride=" << x_stride;
    if (in_place) {
      os << " IN PLACE";
    } else {
      os << " y_stride=" << y_stride;
    }
    os << " offsets(x,y,param)=(" << x_offset << "," << y_offset << ","
       << param_offset << ") gamma=" << (gamma ? "yes" : "no")
       << " beta=" << (beta ? "yes" : "no") << " eps=" << eps
       << " max_threads=" << max_threads << " data=" << FamilyName(family);
    if (residual) os << " residual(stride " << residual_stride << ")";
    if (sum_out != SumOut::kNone) {
      os << " sum_out=" << SumOutName(sum_out);
      if (sum_out == SumOut::kSeparate)
        os << "(stride " << sum_out_stride << ")";
    }
    if (gamma_offset != 0.0f) os << " gamma_offset=" << gamma_offset;
    if (flags != 0) os << " flags=" << flags;
    if (t.y == SIMDNORM_I8) os << " quant_group=" << quant_group;
    if (param_scale != 1.0) os << " params x" << param_scale;
    return os.str();
  }
};

// The scale the contract applies: fl32(gamma_offset + gamma), and gamma
// itself (even -0) when the offset is 0.
inline double EffectiveScale(float gamma_offset, double gamma) {
  if (gamma_offset == 0.0f) return gamma;
  return static_cast<float>(gamma_offset + static_cast<float>(gamma));
}

// True when two elements of x_type hold the same bits, or both a NaN.
inline bool SameElement(simdnorm_dtype t, const unsigned char* a,
                        const unsigned char* b) {
  if (std::memcmp(a, b, ElemSize(t)) == 0) return true;
  if (t == SIMDNORM_F32) {
    float fa, fb;
    std::memcpy(&fa, a, 4);
    std::memcpy(&fb, b, 4);
    return std::isnan(fa) && std::isnan(fb);
  }
  uint16_t ha, hb;
  std::memcpy(&ha, a, 2);
  std::memcpy(&hb, b, 2);
  return HalfIsNaN(HalfOf(t), ha) && HalfIsNaN(HalfOf(t), hb);
}

// The operands of one call of case c, filled, and its descriptor.
struct Call {
  Case c;
  Matrix x, res, sum, gamma, beta, y, scales;
  simdnorm_desc d{};

  // values: rows * cols; residual_values: the same (NULL = ResidualData).
  Call(const Case& the_case, const std::vector<float>& values,
       const std::vector<float>* residual_values = nullptr)
      : c(the_case),
        x(c.t.x, c.rows, c.cols, c.x_stride, c.x_offset),
        res(c.t.x, c.residual ? c.rows : 0, c.cols, c.residual_stride,
            c.x_offset),
        sum(c.t.x, c.sum_out == SumOut::kSeparate ? c.rows : 0, c.cols,
            c.sum_out_stride, c.y_offset),
        gamma(c.t.param, 1, c.cols, 0, c.param_offset),
        beta(c.t.param, 1, c.cols, 0, c.param_offset),
        y(c.t.y, c.in_place ? 0 : c.rows, c.cols, c.y_stride, c.y_offset),
        scales(SIMDNORM_F32, c.t.y == SIMDNORM_I8 ? c.rows : 0, c.Groups()) {
    x.Fill(values);
    if (c.residual) {
      res.Fill(residual_values ? *residual_values
                               : ResidualData(c.family, c.rows, c.cols));
    }
    std::vector<float> g = ParamData(true, c.cols);
    std::vector<float> b = ParamData(false, c.cols);
    for (float& v : g) v = static_cast<float>(v * c.param_scale);
    for (float& v : b) v = static_cast<float>(v * c.param_scale);
    gamma.Fill(g);
    beta.Fill(b);

    d.kind = c.kind;
    d.rows = c.rows;
    d.cols = c.cols;
    d.x = x.data();
    d.x_type = c.t.x;
    d.x_stride = c.x_stride;
    d.y = c.in_place ? x.data() : y.data();
    d.y_type = c.t.y;
    d.y_stride = c.in_place ? c.x_stride : c.y_stride;
    d.gamma = c.gamma ? gamma.data() : nullptr;
    d.beta = c.beta ? beta.data() : nullptr;
    d.param_type = c.t.param;
    d.eps = c.eps;
    d.max_threads = c.max_threads;
    d.residual = c.residual ? res.data() : nullptr;
    d.residual_stride = c.residual_stride;
    switch (c.sum_out) {
      case SumOut::kNone:
        break;
      case SumOut::kSeparate:
        d.sum_out = sum.data();
        d.sum_out_stride = c.sum_out_stride;
        break;
      case SumOut::kIsResidual:
        d.sum_out = res.data();
        d.sum_out_stride = c.residual_stride;
        break;
      case SumOut::kIsX:
        d.sum_out = x.data();
        d.sum_out_stride = c.x_stride;
        break;
    }
    d.gamma_offset = c.gamma_offset;
    d.flags = c.flags;
    d.y_scale =
        c.t.y == SIMDNORM_I8 ? static_cast<float*>(scales.data()) : nullptr;
    d.quant_group = c.quant_group;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  const Matrix& Out() const { return c.in_place ? x : y; }
  const Matrix& SumOutMatrix() const {
    return c.sum_out == SumOut::kSeparate     ? sum
           : c.sum_out == SumOut::kIsResidual ? res
                                              : x;
  }
  // The elements of every output (y, sum_out, y_scale), dense, after the
  // call.
  std::vector<unsigned char> OutputBytes() const {
    std::vector<unsigned char> v = Out().ElementBytes();
    if (c.sum_out != SumOut::kNone) {
      const std::vector<unsigned char> s = SumOutMatrix().ElementBytes();
      v.insert(v.end(), s.begin(), s.end());
    }
    const std::vector<unsigned char> q = scales.ElementBytes();
    v.insert(v.end(), q.begin(), q.end());
    return v;
  }
};

// Runs c on the given rows * cols values (and residual values; NULL =
// ResidualData) and checks every output element (y, and sum_out bit for
// bit against the reference's h, NaN for NaN), the untouched padding and
// guards of every output, and that the inputs are unchanged. The reference
// runs on dense copies of the inputs with outputs of its own, so aliasing
// is the library's alone. outputs (optional) receives Call::OutputBytes().
inline void RunCaseOn(const Case& c, const std::vector<float>& values,
                      Stats* st,
                      const std::vector<float>* residual_values = nullptr,
                      std::vector<unsigned char>* outputs = nullptr) {
  ASSERT_EQ(values.size(), c.rows * c.cols);
  ASSERT_TRUE(!c.in_place || c.t.x == c.t.y) << "bad test case";
  ASSERT_TRUE(c.sum_out != SumOut::kIsResidual || c.residual)
      << "bad test case";
  ASSERT_TRUE(c.sum_out != SumOut::kIsX || !c.in_place) << "bad test case";
  ASSERT_TRUE(residual_values == nullptr ||
              residual_values->size() == c.rows * c.cols)
      << "bad test case";
  const bool i8 = c.t.y == SIMDNORM_I8;
  const bool round_normalized = (c.flags & SIMDNORM_ROUND_NORMALIZED) != 0;
  Call call(c, values, residual_values);
  const Matrix& x = call.x;
  const Matrix& res = call.res;
  const Matrix& sum = call.sum;
  const Matrix& gamma = call.gamma;
  const Matrix& beta = call.beta;
  const Matrix& y = call.y;
  const Matrix& scales = call.scales;
  const simdnorm_desc& d = call.d;

  // The truth, on dense copies of the inputs, before the call (which may
  // overwrite x and the residual).
  const Matrix ref_x = x.DenseCopy();
  const Matrix ref_res = res.DenseCopy();
  Matrix ref_sum(c.t.x, c.sum_out != SumOut::kNone ? c.rows : 0, c.cols);
  Matrix ref_y(c.t.y, c.rows, c.cols);
  Matrix ref_scales(SIMDNORM_F32, i8 ? c.rows : 0, c.Groups());
  simdnorm_desc rd = d;
  rd.x = ref_x.data();
  rd.x_stride = 0;
  rd.residual = c.residual ? ref_res.data() : nullptr;
  rd.residual_stride = 0;
  rd.sum_out = c.sum_out != SumOut::kNone ? ref_sum.data() : nullptr;
  rd.sum_out_stride = 0;
  rd.y = ref_y.data();
  rd.y_stride = 0;
  rd.y_scale = i8 ? static_cast<float*>(ref_scales.data()) : nullptr;
  std::vector<double> ref(c.rows * c.cols), xhat(c.rows * c.cols);
  ASSERT_EQ(simdnorm::reference_f64(rd, ref.data(), xhat.data()),
            simdnorm::Status::kOk)
      << c.Describe();
  // ROUND_NORMALIZED: the unrounded xhat, from the same call without it.
  std::vector<double> true_xhat;
  if (round_normalized) {
    simdnorm_desc plain = rd;
    plain.flags &= ~static_cast<unsigned>(SIMDNORM_ROUND_NORMALIZED);
    std::vector<double> scratch(c.rows * c.cols);
    true_xhat.resize(c.rows * c.cols);
    ASSERT_EQ(simdnorm::reference_f64(plain, scratch.data(), true_xhat.data()),
              simdnorm::Status::kOk)
        << c.Describe();
  }
  ASSERT_EQ(simdnorm_normalize_reference(&rd), SIMDNORM_OK) << c.Describe();

  // The premises the checks rest on, from the contract directly: the
  // reference's h is x + residual rounded once to x_type (x without a
  // residual), and its y is xhat * EffectiveScale + beta.
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t col = 0; col < c.cols; ++col) {
      const size_t i = r * c.cols + col;
      const double g =
          EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
      const double b = c.beta ? beta.Get(0, col) : 0.0;
      const double want = xhat[i] * g + b;
      if (std::isfinite(want) &&
          !(std::fabs(ref[i] - want) <= 1e-12 * Terms(xhat[i], g, b)) &&
          st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col
                      << ": the reference's y " << Num(ref[i])
                      << " is not xhat * scale + beta = " << Num(xhat[i])
                      << " * " << Num(g) << " + " << Num(b);
      }
      if (c.sum_out == SumOut::kNone) continue;
      double h = ref_x.GetF(r, col);
      if (c.residual) h += ref_res.GetF(r, col);
      unsigned char mine[4];
      if (Is16(c.t.x)) {
        const uint16_t bits = RoundToHalf(HalfOf(c.t.x), h);
        std::memcpy(mine, &bits, 2);
      } else {
        const float f = static_cast<float>(h);
        std::memcpy(mine, &f, 4);
      }
      if (!SameElement(c.t.x, mine, ref_sum.At(r, col)) && st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col
                      << ": the reference's h " << Num(ref_sum.GetF(r, col))
                      << " is not x + residual rounded once (" << Num(h) << ")";
      }
    }
  }

  const std::vector<unsigned char> x_before = x.bytes();
  const std::vector<unsigned char> res_before = res.bytes();
  const std::vector<unsigned char> gamma_before = gamma.bytes();
  const std::vector<unsigned char> beta_before = beta.bytes();

  const simdnorm_status s = simdnorm_normalize(&d);
  ASSERT_EQ(s, SIMDNORM_OK)
      << c.Describe() << ": " << simdnorm_status_string(s);

  if (outputs) *outputs = call.OutputBytes();
  const Matrix& out = call.Out();
  auto intact = [&](const Matrix& m, const char* what) {
    std::string where;
    if (!m.PaddingIntact(&where) && st->ShouldReport()) {
      ADD_FAILURE() << c.Describe() << ": " << what << ": " << where;
    }
  };
  intact(out, "y");
  if (c.sum_out == SumOut::kSeparate) intact(sum, "sum_out");
  if (c.sum_out == SumOut::kIsResidual) intact(res, "residual = sum_out");
  if (c.sum_out == SumOut::kIsX) intact(x, "x = sum_out");
  if (i8) intact(scales, "y_scale");
  const bool x_written = c.in_place || c.sum_out == SumOut::kIsX;
  if (!x_written && x.bytes() != x_before && st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": x was modified";
  }
  if (c.sum_out != SumOut::kIsResidual && res.bytes() != res_before &&
      st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": the residual was modified";
  }
  if ((gamma.bytes() != gamma_before || beta.bytes() != beta_before) &&
      st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": gamma or beta was modified";
  }

  auto input_text = [&](size_t r, size_t col) {
    std::string s = "x = " + Num(ref_x.GetF(r, col));
    if (c.residual) s += ", residual = " + Num(ref_res.GetF(r, col));
    return s;
  };

  // sum_out: h bit for bit (any NaN where the reference's h is NaN).
  if (c.sum_out != SumOut::kNone) {
    const Matrix& so = call.SumOutMatrix();
    for (size_t r = 0; r < c.rows; ++r) {
      for (size_t col = 0; col < c.cols; ++col) {
        if (!SameElement(c.t.x, so.At(r, col), ref_sum.At(r, col)) &&
            st->ShouldReport()) {
          ADD_FAILURE() << c.Describe() << ": sum_out row " << r << " col "
                        << col << " (" << input_text(r, col) << "): got "
                        << Num(so.GetF(r, col))
                        << ", want h = " << Num(ref_sum.GetF(r, col))
                        << " bit for bit";
        }
      }
    }
  }

  std::string why;
  if (i8) {
    const size_t group = c.Group();
    std::vector<double> terms(c.cols);
    for (size_t r = 0; r < c.rows; ++r) {
      for (size_t col = 0; col < c.cols; ++col) {
        const double g =
            EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
        terms[col] =
            Terms(xhat[r * c.cols + col], g, c.beta ? beta.Get(0, col) : 0.0);
      }
      for (size_t g = 0; g < c.Groups(); ++g) {
        const size_t begin = g * group;
        const size_t n = std::min(c.cols, begin + group) - begin;
        const bool ok = CheckI8Group(
            reinterpret_cast<const int8_t*>(y.At(r, begin)), scales.GetF(r, g),
            reinterpret_cast<const int8_t*>(ref_y.At(r, begin)),
            ref_scales.GetF(r, g), &ref[r * c.cols + begin], &terms[begin], n,
            st, &why);
        if (!ok && st->ShouldReport()) {
          ADD_FAILURE() << c.Describe() << ": row " << r << " group " << g
                        << " (cols " << begin << ".." << begin + n - 1
                        << "): " << why;
        }
      }
    }
    return;
  }
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t col = 0; col < c.cols; ++col) {
      const size_t i = r * c.cols + col;
      bool ok;
      const double g =
          EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
      const double b = c.beta ? beta.Get(0, col) : 0.0;
      if (round_normalized) {
        const uint32_t got = c.t.y == SIMDNORM_F32 ? FloatBits(out.GetF(r, col))
                                                   : out.Bits16(r, col);
        const uint16_t want =
            c.t.y == SIMDNORM_F32 ? uint16_t{0} : ref_y.Bits16(r, col);
        ok = CheckRoundNormalized(c.t.x, c.t.y, got, want, ref[i], true_xhat[i],
                                  g, b, st, &why);
      } else if (c.t.y == SIMDNORM_F32) {
        ok = CheckF32(out.GetF(r, col), ref[i], xhat[i], g, b, st, &why);
      } else {
        ok = CheckHalf(HalfOf(c.t.y), out.Bits16(r, col), ref_y.Bits16(r, col),
                       ref[i], F32Bound(xhat[i], g, b), st, &why);
      }
      if (!ok && st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col << " ("
                      << input_text(r, col) << "): " << why;
      }
    }
  }
}

inline void RunCase(const Case& c, Stats* st) {
  RunCaseOn(c, RowData(c.family, c.rows, c.cols), st);
}

// ---------------------------------------------------------------- per ISA

// The ISAs this machine supports, as listed by the library.
inline std::vector<std::string> SupportedIsas() {
  std::vector<std::string> v;
  for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
    const char* n = simdnorm_isa_name(i);
    if (n) v.push_back(n);
  }
  return v;
}

inline std::string IsaTestName(
    const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s) {
    const bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                       (ch >= 'A' && ch <= 'Z');
    if (!alnum) ch = '_';
  }
  return s.empty() ? "unnamed" : s;
}

// Forces the ISA of the test parameter for the duration of the test.
class IsaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_EQ(simdnorm_set_isa(GetParam().c_str()), SIMDNORM_OK) << GetParam();
    const char* active = simdnorm_active_isa();
    ASSERT_NE(active, nullptr);
    ASSERT_STREQ(active, GetParam().c_str());
  }
  void TearDown() override { EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK); }
};

}  // namespace simdnorm_test

// Declares a per-ISA fixture; instantiate it at the end of the file with
// SIMDNORM_INSTANTIATE_PER_ISA. Test names read PerIsa/Fixture.Test/AVX3.
#define SIMDNORM_ISA_FIXTURE(Fixture) \
  class Fixture : public ::simdnorm_test::IsaTest {}

#define SIMDNORM_INSTANTIATE_PER_ISA(Fixture)                                 \
  INSTANTIATE_TEST_SUITE_P(                                                   \
      PerIsa, Fixture, ::testing::ValuesIn(::simdnorm_test::SupportedIsas()), \
      ::simdnorm_test::IsaTestName)

#endif  // SIMDNORM_TESTS_TEST_UTIL_H_
