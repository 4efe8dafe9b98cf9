// Shared helpers of the simdnorm test suite: deterministic data, guarded
// buffers, bf16 helpers, the checkers against the float64 reference and the
// per-ISA test fixture.
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
  return t == SIMDNORM_F32 ? "F32" : "BF16";
}
inline size_t ElemSize(simdnorm_dtype t) { return t == SIMDNORM_BF16 ? 2 : 4; }

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

// ---------------------------------------------------------------- bf16

inline float Bf16ToFloat(uint16_t b) { return bf16::from_bits(b).to_float(); }
inline uint16_t Bf16Bits(float f) { return bf16::from_float(f).bits; }
inline bool Bf16IsNaN(uint16_t b) { return (b & 0x7FFFu) > 0x7F80u; }
inline bool Bf16IsFinite(uint16_t b) { return (b & 0x7F80u) != 0x7F80u; }

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

// Position of a bf16 on the number line as an integer (+0 and -0 both 0), so
// that neighbours differ by 1 and ulp distances are differences.
inline int32_t Bf16Ordered(uint16_t b) {
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  return (b & 0x8000u) ? -mag : mag;
}
inline int32_t Bf16UlpDistance(uint16_t a, uint16_t b) {
  return std::abs(Bf16Ordered(a) - Bf16Ordered(b));
}

// What a truncating conversion (Highway's DemoteTo) produces.
inline uint16_t Bf16Truncate(float f) {
  return static_cast<uint16_t>(FloatBits(f) >> 16);
}

// Rounds a double to bf16 ONCE (nearest, ties to even), without going
// through float (double -> float -> bf16 would round twice).
inline uint16_t RoundToBf16(double d) {
  const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  if (std::isnan(d)) return static_cast<uint16_t>(sign | 0x7FC0u);
  const double a = std::fabs(d);
  if (a == 0.0) return sign;
  // Largest bf16 is 0x1.FEp127; halfway to 2^128 rounds to even = infinity.
  if (a >= std::ldexp(511.0, 119)) return static_cast<uint16_t>(sign | 0x7F80u);
  int e2;
  std::frexp(a, &e2);                    // a = m * 2^e2, m in [0.5, 1)
  const int e = std::max(e2 - 1, -126);  // exponent of the bf16 binade
  const int q = e - 7;                   // 7 stored mantissa bits
  const double r = std::ldexp(a, -q);    // exact: a power-of-two scaling
  double n = std::floor(r);
  const double frac = r - n;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(n, 2.0) != 0.0)) n += 1.0;
  const float v = static_cast<float>(std::ldexp(n, q));  // exact
  return static_cast<uint16_t>(sign | (FloatBits(v) >> 16));
}

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
  float GetF(size_t r, size_t c) const {
    if (type_ == SIMDNORM_BF16) return Bf16ToFloat(Bits16(r, c));
    float f;
    std::memcpy(&f, At(r, c), 4);
    return f;
  }
  double Get(size_t r, size_t c) const { return GetF(r, c); }
  bool IsNaN(size_t r, size_t c) const { return std::isnan(GetF(r, c)); }
  bool IsFinite(size_t r, size_t c) const { return std::isfinite(GetF(r, c)); }

  // Stores v, rounded to nearest-even for BF16.
  void Set(size_t r, size_t c, float v) {
    if (type_ == SIMDNORM_BF16) {
      const uint16_t b = Bf16Bits(v);
      std::memcpy(At(r, c), &b, 2);
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
    return type_ == SIMDNORM_BF16 ? Bf16ToFloat(Bf16Bits(v)) : v;
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

// The fp32 error bound of the spec, relative to the float64 truth.
inline double F32Bound(double xhat, double gamma, double beta) {
  return 32.0 * std::ldexp(1.0, -23) *
         (std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) + std::fabs(beta));
}

// The bf16 rule. The spec's literal rule is: every element within 1 bf16
// ulp of the reference rounded once, and exactly equal to it in >= 99.9% of
// the elements of a test. Two parts of it cannot be met by any kernel that
// computes in fp32 (even one whose fp32 result is the truth correctly
// rounded), so by default the suite applies it as follows:
//  - Where the output cancels (y = xhat*gamma + beta much smaller than
//    |gamma xhat| + |beta|), an fp32 error within the spec's fp32 bound B is
//    many bf16 ulps of y. So an element also passes when it is the rounding
//    of some value within B of the truth: got in [RNE(ref-B), RNE(ref+B)].
//  - Where [ref-B, ref+B] holds a bf16 rounding boundary, an fp32 kernel
//    cannot know on which side the truth lies (with bf16 gamma/beta and
//    xhat = +-1, g + b is often exactly a bf16 tie). The 99.9% rate is
//    counted over the other elements, where every result within the fp32
//    bound rounds to the reference: truncation still fails it (~50%).
// SIMDNORM_TEST_LITERAL_BF16=1 applies the literal rule instead.
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
  size_t nan_checked = 0;  // elements whose reference is NaN
  size_t failures = 0;     // elements (or buffers) out of spec
  size_t reported = 0;     // failures reported in detail

  // Set by families where many exact results sit on a bf16 rounding tie
  // (see RunFamily in hard_rows_test.cc).
  bool ties_expected = false;

  // >= 99.9% of all bf16 outputs equal the once-rounded reference. Where
  // ties are expected, the share is taken over the elements that have no
  // rounding boundary within the fp32 bound of the truth.
  bool Bf16RateOk() const {
    if (LiteralBf16Rule() || !ties_expected) {
      return static_cast<double>(bf16_exact) >=
             0.999 * static_cast<double>(bf16_checked);
    }
    return static_cast<double>(bf16_conditioned_exact) >=
           0.999 * static_cast<double>(bf16_conditioned);
  }
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

// bf16 output element: `want` is the reference rounded once to bf16 (from
// simdnorm_normalize_reference), `ref` the float64 truth, `bound` the fp32
// bound of the element (F32Bound). See LiteralBf16Rule for the rule.
inline bool CheckBf16(uint16_t got, uint16_t want, double ref, double bound,
                      Stats* st, std::string* why) {
  if (Bf16IsNaN(want)) {
    ++st->nan_checked;
    if (Bf16IsNaN(got)) return true;
    *why = "got " + Hex(got, 4) + " = " + Num(Bf16ToFloat(got)) +
           ", want NaN (the reference is NaN)";
    return false;
  }
  if (!Bf16IsFinite(want)) {
    if (!Bf16IsFinite(got)) return true;
    *why = "got " + Hex(got, 4) + ", want non-finite " + Hex(want, 4);
    return false;
  }
  ++st->bf16_checked;
  const int32_t ulps = Bf16IsFinite(got) ? Bf16UlpDistance(got, want) : 1 << 30;
  const int32_t lo = Bf16Ordered(RoundToBf16(ref - bound));
  const int32_t hi = Bf16Ordered(RoundToBf16(ref + bound));
  if (ulps == 0) ++st->bf16_exact;
  if (lo == hi) {
    ++st->bf16_conditioned;
    if (ulps == 0) ++st->bf16_conditioned_exact;
  }
  if (ulps <= 1) {
    st->bf16_worst_ulps = std::max(st->bf16_worst_ulps, ulps);
    return true;
  }
  const int32_t o = Bf16Ordered(got);
  if (!LiteralBf16Rule() && Bf16IsFinite(got) && o >= lo && o <= hi) {
    ++st->bf16_window_only;
    st->bf16_worst_ulps = std::max(st->bf16_worst_ulps, ulps);
    return true;
  }
  *why = "got " + Hex(got, 4) + " = " + Num(Bf16ToFloat(got)) + ", want " +
         Hex(want, 4) + " = " + Num(Bf16ToFloat(want)) + " (" +
         std::to_string(ulps) + " bf16 ulps apart, at most 1 allowed; truth " +
         Num(ref) + ", fp32 bound " + Num(bound) + " gives [" +
         Num(Bf16ToFloat(RoundToBf16(ref - bound))) + ", " +
         Num(Bf16ToFloat(RoundToBf16(ref + bound))) + "])";
  return false;
}

inline double Percent(size_t a, size_t b) {
  return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 100.0;
}

// The end-of-test verdict: no element out of spec, and the bf16 rate.
inline void ExpectClean(const Stats& st) {
  EXPECT_GT(st.f32_checked + st.bf16_checked + st.nan_checked, 0u)
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
  EXPECT_TRUE(st.Bf16RateOk())
      << "bf16 rate below 99.9% (" << summary.str() << ")";
}

// ---------------------------------------------------------------- cases

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
    return os.str();
  }
};

// Runs c on the given rows * cols values and checks every output element,
// the untouched padding/guards of y, and that x, gamma, beta are unchanged.
inline void RunCaseOn(const Case& c, const std::vector<float>& values,
                      Stats* st) {
  ASSERT_EQ(values.size(), c.rows * c.cols);
  ASSERT_TRUE(!c.in_place || c.t.x == c.t.y) << "bad test case";
  Matrix x(c.t.x, c.rows, c.cols, c.x_stride, c.x_offset);
  x.Fill(values);
  Matrix gamma(c.t.param, 1, c.cols, 0, c.param_offset);
  gamma.Fill(ParamData(true, c.cols));
  Matrix beta(c.t.param, 1, c.cols, 0, c.param_offset);
  beta.Fill(ParamData(false, c.cols));
  Matrix y(c.t.y, c.in_place ? 0 : c.rows, c.cols, c.y_stride, c.y_offset);

  simdnorm_desc d{};
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

  // The truth, computed before the call (which may overwrite x).
  Matrix ref_y(c.t.y, c.rows, c.cols);
  simdnorm_desc rd = d;
  rd.y = ref_y.data();
  rd.y_stride = 0;
  std::vector<double> ref(c.rows * c.cols), xhat(c.rows * c.cols);
  ASSERT_EQ(simdnorm::reference_f64(rd, ref.data(), xhat.data()),
            simdnorm::Status::kOk)
      << c.Describe();
  ASSERT_EQ(simdnorm_normalize_reference(&rd), SIMDNORM_OK) << c.Describe();

  const std::vector<unsigned char> x_before = x.bytes();
  const std::vector<unsigned char> gamma_before = gamma.bytes();
  const std::vector<unsigned char> beta_before = beta.bytes();

  const simdnorm_status s = simdnorm_normalize(&d);
  ASSERT_EQ(s, SIMDNORM_OK)
      << c.Describe() << ": " << simdnorm_status_string(s);

  const Matrix& out = c.in_place ? x : y;
  std::string where;
  if (!out.PaddingIntact(&where) && st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": " << where;
  }
  if (!c.in_place && x.bytes() != x_before && st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": x was modified";
  }
  if ((gamma.bytes() != gamma_before || beta.bytes() != beta_before) &&
      st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": gamma or beta was modified";
  }

  std::string why;
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t col = 0; col < c.cols; ++col) {
      const size_t i = r * c.cols + col;
      bool ok;
      const double g = c.gamma ? gamma.Get(0, col) : 1.0;
      const double b = c.beta ? beta.Get(0, col) : 0.0;
      if (c.t.y == SIMDNORM_F32) {
        ok = CheckF32(out.GetF(r, col), ref[i], xhat[i], g, b, st, &why);
      } else {
        ok = CheckBf16(out.Bits16(r, col), ref_y.Bits16(r, col), ref[i],
                       F32Bound(xhat[i], g, b), st, &why);
      }
      if (!ok && st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col
                      << " (x = " << Num(x.Stored(values[i])) << "): " << why;
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
