// AVX3_BF16 narrows bf16 results with the AVX512_BF16 instructions, which
// flush subnormal inputs to zero (convert-inl.h redoes those vectors in
// software). Its bytes must be AVX3's (and, correctly rounded, every
// ISA's): here for every bf16 value a result can round to, with every kind
// of low half, through the public API, and on realistic rows with every
// dtype combination that writes bf16 and every variant. Skipped where the
// library lists no ISA with those stores (Bf16Isa).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/isas.h"
#include "support/matrix.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

constexpr char kAvx3[] = "AVX3";

bool Listed(const char* isa) {
  for (const std::string& n : SupportedIsas()) {
    if (n == isa) return true;
  }
  return false;
}

// The ISA whose bf16 stores use AVX512_BF16: simdnorm's AVX3_BF16 on
// Highway 1.0.3; a newer Highway's AVX3_SPR or AVX3_ZEN4, which have the
// instructions (the library then builds no AVX3_BF16 of its own). Empty
// where none is listed.
const char* Bf16Isa() {
  static const char* const isa = [] {
    for (const char* name : {"AVX3_BF16", "AVX3_SPR", "AVX3_ZEN4"}) {
      if (Listed(name)) return name;
    }
    return "";
  }();
  return isa;
}
// The fast results are compared where they are known to equal AVX3's:
// simdnorm's AVX3_BF16 (AVX3 with other stores) and Highway's AVX3_ZEN4
// (checked against Highway 1.4, where its f16 conversions are F16C's as
// AVX3's are). AVX3_SPR has not been run; SIMDNORM_FAST_ROUNDING allows
// differences between ISAs.
bool ComparesFast() {
  const std::string isa = Bf16Isa();
  return isa == "AVX3_BF16" || isa == "AVX3_ZEN4";
}

// Runs d on `isa` and returns the bytes it wrote to y (bf16) and, with
// sum_out, to h, from buffers `offset` elements off a 64-byte boundary.
struct Written {
  std::vector<unsigned char> y, sum_out;
};
std::vector<unsigned char> Elements(const Matrix& m) {
  const auto* p = static_cast<const unsigned char*>(m.data());
  return {p, p + m.rows() * m.cols() * ElemSize(m.type())};
}
Written RunOn(const std::string& isa, simdnorm_desc d, size_t offset,
              bool sum_out) {
  Matrix y(SIMDNORM_BF16, d.rows, d.cols, 0, offset);
  Matrix h(d.x_type, sum_out ? d.rows : 0, d.cols, 0, offset);
  d.y = y.data();
  if (sum_out) d.sum_out = h.data();
  EXPECT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK) << isa;
  EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_OK) << isa;
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  return {Elements(y), Elements(h)};
}

// The first index where a and b differ, or -1.
long FirstDifference(const std::vector<unsigned char>& a,
                     const std::vector<unsigned char>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return -1;
}

uint16_t Bf16At(const std::vector<unsigned char>& v, size_t i) {
  uint16_t b;
  std::memcpy(&b, &v[2 * i], 2);
  return b;
}

// ---------------------------------------------------------------- gamma

// Every gamma a result can be: the 2^16 bf16 values widened, each with the
// low halves that matter to rounding (0, just below, at and above the tie,
// all ones, random), then random floats, subnormals, +-0, infinities and
// NaNs with payloads in both halves.
std::vector<float> AllGammas() {
  std::vector<uint32_t> bits;
  Rng rng(2024);
  const uint32_t kLows[] = {0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : kLows) bits.push_back(hi << 16 | lo);
    bits.push_back(hi << 16 |
                   static_cast<uint32_t>(rng.Uniform() * 65536.0) % 0x10000);
  }
  for (int i = 0; i < 65536; ++i) {
    bits.push_back(static_cast<uint32_t>(rng.Uniform() * 4294967296.0));
  }
  for (uint32_t m = 1; m < 0x800000; m = m * 3 + 1) {  // subnormals
    bits.push_back(m);
    bits.push_back(0x80000000u | m);
    bits.push_back(0x7FFFFFu - m);
  }
  const uint32_t kSpecial[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
                               0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
                               0xFF812345, 0x7FC0FFFF, 0x7FFF8000, 0x7F80FFFF,
                               0x007FFFFF, 0x807F8000, 0x00008000, 0x00800000,
                               0x7F7FFFFF, 0x7F7F8000, 0xFF7F8001, 0x00018000};
  for (uint32_t b : kSpecial) bits.push_back(b);
  std::vector<float> g(bits.size());
  std::memcpy(g.data(), bits.data(), bits.size() * sizeof(float));
  return g;
}

// The first bf16 result of d (one row, aligned) where AVX3_BF16 differs
// from AVX3 or from the portable ISA, and the three values; at = -1: none.
struct Mismatch {
  long at = -1;
  std::string what;
};
Mismatch CompareIsas(const simdnorm_desc& d) {
  const Written hw = RunOn(Bf16Isa(), d, 0, false);
  for (const std::string& isa : {std::string(kAvx3), SupportedIsas().back()}) {
    const Written other = RunOn(isa, d, 0, false);
    const long byte = FirstDifference(hw.y, other.y);
    if (byte >= 0) {
      const size_t j = static_cast<size_t>(byte) / 2;
      return {static_cast<long>(j), std::string(Bf16Isa()) + " " +
                                        Hex(Bf16At(hw.y, j), 4) + ", " + isa +
                                        " " + Hex(Bf16At(other.y, j), 4)};
    }
  }
  return {};
}

// One row of `cols` elements, x and weights of `type`, bf16 y, eps 0, on
// the calling thread.
simdnorm_desc OneRow(simdnorm_kind kind, simdnorm_dtype type, const void* x,
                     const void* gamma, const void* beta, size_t cols,
                     unsigned flags) {
  simdnorm_desc d = {};
  d.kind = kind;
  d.rows = 1;
  d.cols = cols;
  d.x = x;
  d.x_type = type;
  d.y_type = SIMDNORM_BF16;
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = type;
  d.eps = 0.0f;
  d.max_threads = 1;
  d.flags = flags;
  return d;
}

// Built with AVX3_BF16, on a CPU with AVX512_BF16 where AVX3 runs: listed
// (else every test below would skip without saying why).
TEST(Bf16HardwareTest, ListedWhereTheCpuHasIt) {
#if defined(SIMDNORM_TESTS_BUILT_AVX3_BF16) && defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || !Listed(kAvx3)) {
    GTEST_SKIP() << "no AVX512_BF16 or no AVX3 here";
  }
  EXPECT_NE(std::string(Bf16Isa()), "");
#else
  GTEST_SKIP() << "built without AVX3_BF16";
#endif
}

// Rows of x = [1, -1, 1, -1, ...] have mean 0 and variance 1, and mean
// square 1: with eps 0, LayerNorm's and RMSNorm's normalized value is
// exactly +-1, and y_j = +-gamma_j rounded once to bf16. f32 x and gamma
// with bf16 y store vector by vector (vcvtneps2bf16).
TEST(Bf16HardwareTest, EveryGammaGivesAvx3Bytes) {
  if (*Bf16Isa() == '\0') GTEST_SKIP() << "no ISA with AVX512_BF16 stores";
  ASSERT_TRUE(Listed(kAvx3));
  const std::vector<float> all = AllGammas();
  constexpr size_t kCols = 4096;
  const size_t rows = (all.size() + kCols - 1) / kCols;
  std::vector<float> gamma(all);
  gamma.resize(rows * kCols, 1.0f);
  std::vector<float> x(kCols);
  for (size_t j = 0; j < kCols; ++j) x[j] = j % 2 ? -1.0f : 1.0f;
  size_t compared = 0;
  for (simdnorm_kind kind : AllKinds()) {
    for (unsigned flags : {0u, unsigned{SIMDNORM_FAST_ROUNDING}}) {
      for (size_t r = 0; r < rows; ++r) {
        const Mismatch m = CompareIsas(OneRow(kind, SIMDNORM_F32, x.data(),
                                              gamma.data() + r * kCols, nullptr,
                                              kCols, flags));
        ASSERT_EQ(m.at, -1)
            << KindName(kind) << " flags " << flags << " gamma "
            << Hex(FloatBits(gamma[r * kCols + m.at]), 8) << ": " << m.what;
        compared += kCols;
      }
    }
  }
  EXPECT_GE(compared, 4 * all.size());
}

// The same rows in bf16, with bf16 gamma and beta: x, y and weights pair
// (convert-inl.h), so y is stored by vcvtne2ps2bf16 + vpermw, and bf16
// weights take the stores without NaN quieting. y_j = +-gamma_j + beta_j:
// every bf16 gamma (subnormals, NaNs, infinities included), each with
// betas that put y on a rounding tie, just below it, and elsewhere.
TEST(Bf16HardwareTest, EveryBf16GammaPairedGivesAvx3Bytes) {
  if (*Bf16Isa() == '\0') GTEST_SKIP() << "no ISA with AVX512_BF16 stores";
  ASSERT_TRUE(Listed(kAvx3));
  std::vector<uint16_t> gamma, beta;
  Rng rng(7);
  for (uint32_t g = 0; g < 0x10000; ++g) {
    // Half a bf16 ulp of g (2^-8 of its power of two), as a float.
    const float half_ulp =
        FloatFromBits((g & 0x7F80u) << 16) * 0x1p-8f + 0x1p-133f;
    const float ties[] = {0.0f, half_ulp, -half_ulp, 0.75f * half_ulp,
                          static_cast<float>(rng.Normal())};
    for (float b : ties) {
      gamma.push_back(static_cast<uint16_t>(g));
      beta.push_back(Bf16Bits(b));
    }
  }
  constexpr size_t kCols = 4096;
  const size_t rows = gamma.size() / kCols;
  std::vector<uint16_t> x(kCols);
  for (size_t j = 0; j < kCols; ++j) x[j] = Bf16Bits(j % 2 ? -1.0f : 1.0f);
  for (unsigned flags : {0u, unsigned{SIMDNORM_FAST_ROUNDING}}) {
    for (size_t r = 0; r < rows; ++r) {
      const Mismatch m = CompareIsas(OneRow(
          SIMDNORM_LAYERNORM, SIMDNORM_BF16, x.data(), gamma.data() + r * kCols,
          beta.data() + r * kCols, kCols, flags));
      ASSERT_EQ(m.at, -1) << "flags " << flags << " gamma "
                          << Hex(gamma[r * kCols + m.at], 4) << " beta "
                          << Hex(beta[r * kCols + m.at], 4) << ": " << m.what;
    }
  }
}

// ---------------------------------------------------------------- rows

enum class Variant { kPlain, kResidual, kResidualSumOut, kOffset, kRoundXhat };

const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kPlain:
      return "plain";
    case Variant::kResidual:
      return "residual";
    case Variant::kResidualSumOut:
      return "residual+sum_out";
    case Variant::kOffset:
      return "gamma_offset";
    case Variant::kRoundXhat:
      return "ROUND_NORMALIZED";
  }
  return "?";
}

// Realistic rows (N(0,1), 1e4 + 0.01 N(0,1), and subnormal rows, whose
// residual sums and results are subnormal), every x and weight type with
// bf16 y, the variants, odd and model sizes, aligned and not: y and sum_out
// bytes equal to AVX3's, correctly rounded and with SIMDNORM_FAST_ROUNDING.
TEST(Bf16HardwareTest, RealisticRowsGiveAvx3Bytes) {
  if (*Bf16Isa() == '\0') GTEST_SKIP() << "no ISA with AVX512_BF16 stores";
  ASSERT_TRUE(Listed(kAvx3));
  constexpr simdnorm_dtype kTypes[] = {SIMDNORM_F32, SIMDNORM_BF16,
                                       SIMDNORM_F16};
  constexpr Family kFamilies[] = {Family::kStdNormal, Family::kLargeMean,
                                  Family::kSubnormal};
  constexpr Variant kVariants[] = {Variant::kPlain, Variant::kResidual,
                                   Variant::kResidualSumOut, Variant::kOffset,
                                   Variant::kRoundXhat};
  constexpr size_t kRows = 5;
  size_t calls = 0;
  for (size_t cols : {size_t{896}, size_t{4096}, size_t{1}, size_t{17}}) {
    for (Family f : kFamilies) {
      const std::vector<float> xs = MakeRows(f, kRows, cols, 11u + cols);
      const std::vector<float> rs =
          MakeRows(f, kRows, cols, 23u + static_cast<uint32_t>(f));
      const std::vector<float>& gs = ParamData(true, cols);
      const std::vector<float>& bs = ParamData(false, cols);
      for (simdnorm_dtype xt : kTypes) {
        for (simdnorm_dtype pt : kTypes) {
          // One element off a 64-byte boundary: every row (and operand)
          // unaligned, also for f32.
          for (size_t off : {size_t{0}, size_t{1}}) {
            Matrix x(xt, kRows, cols, 0, off), res(xt, kRows, cols, 0, off);
            Matrix g(pt, 1, cols, 0, off), b(pt, 1, cols, 0, off);
            x.Fill(xs);
            res.Fill(rs);
            g.Fill(gs);
            b.Fill(bs);
            for (Variant v : kVariants) {
              for (simdnorm_kind kind : AllKinds()) {
                for (unsigned fast : {0u, unsigned{SIMDNORM_FAST_ROUNDING}}) {
                  if (fast != 0 && !ComparesFast()) continue;
                  simdnorm_desc d = {};
                  d.kind = kind;
                  d.rows = kRows;
                  d.cols = cols;
                  d.x = x.data();
                  d.x_type = xt;
                  d.y_type = SIMDNORM_BF16;
                  d.gamma = g.data();
                  d.beta = kind == SIMDNORM_LAYERNORM ? b.data() : nullptr;
                  d.param_type = pt;
                  d.eps = 1e-5f;
                  d.max_threads = 1;
                  d.flags = fast;
                  if (v == Variant::kResidual ||
                      v == Variant::kResidualSumOut) {
                    d.residual = res.data();
                  }
                  if (v == Variant::kOffset) d.gamma_offset = 1.0f;
                  if (v == Variant::kRoundXhat) {
                    d.flags |= SIMDNORM_ROUND_NORMALIZED;
                  }
                  const bool sum_out = v == Variant::kResidualSumOut;
                  const Written hw = RunOn(Bf16Isa(), d, off, sum_out);
                  const Written avx3 = RunOn(kAvx3, d, off, sum_out);
                  const std::string what =
                      std::string(KindName(kind)) + " " + FamilyName(f) +
                      " cols " + std::to_string(cols) + " x " + DTypeName(xt) +
                      " w " + DTypeName(pt) + " " + VariantName(v) +
                      (fast ? " fast" : "") + (off ? " unaligned" : "");
                  ASSERT_EQ(FirstDifference(hw.y, avx3.y), -1) << what;
                  ASSERT_EQ(FirstDifference(hw.sum_out, avx3.sum_out), -1)
                      << what << " (sum_out)";
                  ++calls;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(calls, size_t{4 * 3 * 3 * 3 * 5 * 2} * (ComparesFast() ? 2 : 1) *
                       AllKinds().size());
}

}  // namespace
}  // namespace simdnorm_test
