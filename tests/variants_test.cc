// The engine variants of issue #7 on every ISA, against the float64
// reference: F16 operands, the fused residual add in every aliasing form,
// gamma_offset, SIMDNORM_ROUND_NORMALIZED, I8 output with per-group scales,
// NaN rows, the combination of them, row counts and thread counts. The
// checkers (CheckF32, CheckHalf, CheckRoundNormalized, CheckI8Group) are in
// support/checks.h, sum_out bit for bit against the reference's h in
// RunCaseOn (support/run_case.h).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/cases.h"
#include "support/checks.h"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/run_case.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(VariantsTest);

const std::vector<simdnorm_kind> kKinds = AllKinds();
constexpr simdnorm_dtype kFloatTypes[] = {SIMDNORM_F32, SIMDNORM_BF16,
                                          SIMDNORM_F16};
constexpr size_t kCols[] = {1, 3, 64, 128, 896, 4097};

// A fixed pseudo-random choice among n for case i of a test; each salt
// gives an independent choice, so that the options of the cases vary
// independently of each other and of the loops over the main parameters.
size_t Choose(size_t i, uint32_t salt, size_t n) {
  uint32_t h =
      static_cast<uint32_t>(i) * 0x9E3779B1u ^ (salt + 1) * 0x85EBCA6Bu;
  h ^= h >> 15;
  h *= 0xC2B2AE35u;
  h ^= h >> 13;
  return h % n;
}

// The realistic families. A large mean only for F32 x: bf16 and f16 round
// 1e4 + 1e-2 N(0,1) to a constant.
Family PickFamily(size_t i, simdnorm_dtype x) {
  static const Family kF32[] = {Family::kTypical, Family::kLlm,
                                Family::kLargeMean};
  static const Family kHalf[] = {Family::kTypical, Family::kLlm};
  return x == SIMDNORM_F32 ? kF32[Choose(i, 0, 3)] : kHalf[Choose(i, 0, 2)];
}
simdnorm_dtype PickType(size_t i, uint32_t salt) {
  return kFloatTypes[Choose(i, salt, 3)];
}

// Strided rows: every operand a different stride, x and y misaligned.
void MakeStrided(Case* c) {
  c->x_stride = c->cols + 3;
  c->y_stride = c->cols + 5;
  c->residual_stride = c->cols + 1;
  c->sum_out_stride = c->cols + 2;
  c->x_offset = 1;
  c->y_offset = 1;
}

// ---------------------------------------------------------------- F16

// F16 as x, y and weights, with F32 and BF16 for the others: all 19
// combinations involving F16, dense; then strided, misaligned and in place.
TEST_P(VariantsTest, F16Types) {
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (size_t cols : kCols) {
      for (const DTypes& t : F16DTypes()) {
        Case c;
        c.kind = kind;
        c.t = t;
        c.rows = 3;
        c.cols = cols;
        c.family = PickFamily(i++, t.x);
        RunCase(c, &st);
      }
    }
    for (size_t cols : {3u, 65u, 897u}) {
      for (simdnorm_dtype p : kFloatTypes) {
        Case c;
        c.kind = kind;
        c.t = {SIMDNORM_F16, p == SIMDNORM_F32 ? SIMDNORM_BF16 : SIMDNORM_F16,
               p};
        c.rows = 3;
        c.cols = cols;
        c.family = PickFamily(i++, c.t.x);
        MakeStrided(&c);
        RunCase(c, &st);
        Case in_place = c;  // y == x, strided and misaligned
        in_place.t.y = SIMDNORM_F16;
        in_place.in_place = true;
        RunCase(in_place, &st);
        in_place.x_stride = 0;  // dense, aligned
        in_place.x_offset = 0;
        RunCase(in_place, &st);
      }
    }
  }
  ExpectClean(st);
}

// F16 output at the ends of its range: weights scaled so that outputs pass
// 65520 (infinity) or fall below 2^-14 (subnormal); and F16 input with
// subnormal values (exact widening), eps 0.
TEST_P(VariantsTest, F16RangeEnds) {
  Stats st;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype p : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (double scale : {3e4, 1e-6}) {
        Case c;
        c.kind = kind;
        c.t = {SIMDNORM_F32, SIMDNORM_F16, p};
        c.rows = 3;
        c.cols = 896;
        c.param_scale = scale;
        c.family = Family::kTypical;
        RunCase(c, &st);
      }
    }
    std::vector<float> tiny = RowData(Family::kStdNormal, 3, 129);
    for (float& v : tiny) v *= 1e-6f;  // f16 subnormals: below 6.1e-5
    for (simdnorm_dtype y : kFloatTypes) {
      Case c;
      c.kind = kind;
      c.t = {SIMDNORM_F16, y, SIMDNORM_F16};
      c.rows = 3;
      c.cols = 129;
      c.eps = 0.0f;
      RunCaseOn(c, tiny, &st);
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- fused add

struct Aliasing {
  bool residual;
  SumOut sum_out;
  bool in_place;  // y == x
};

// Every form of the fused add: sum_out NULL, separate, == residual, == x;
// y == x with each; sum_out without a residual (h = x). The last but one is
// vLLM's fused_add_rms_norm: residual = sum_out, y = x.
constexpr Aliasing kAliasings[] = {
    {true, SumOut::kNone, false},       {true, SumOut::kSeparate, false},
    {true, SumOut::kIsResidual, false}, {true, SumOut::kIsX, false},
    {true, SumOut::kNone, true},        {true, SumOut::kSeparate, true},
    {true, SumOut::kIsResidual, true},  {false, SumOut::kSeparate, false},
};

TEST_P(VariantsTest, FusedAdd) {
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : kFloatTypes) {
      for (const Aliasing& a : kAliasings) {
        for (size_t cols : kCols) {
          Case c;
          c.kind = kind;
          const simdnorm_dtype y =
              a.in_place || Choose(i, 1, 2)
                  ? x
                  : (x == SIMDNORM_F32 ? SIMDNORM_BF16 : SIMDNORM_F32);
          c.t = {x, y, PickType(i, 2)};
          c.rows = 3;
          c.cols = cols;
          c.residual = a.residual;
          c.sum_out = a.sum_out;
          c.in_place = a.in_place;
          c.beta = kind == SIMDNORM_LAYERNORM;
          c.family = PickFamily(i, x);
          if (Choose(i, 3, 3) == 0) MakeStrided(&c);
          ++i;
          RunCase(c, &st);
        }
      }
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- gamma_offset

// scale = fl32(gamma_offset + gamma): Gemma's 1 and other offsets, with
// each weight type, NULL gamma (scale = fl32(offset + 1)), with and without
// beta.
TEST_P(VariantsTest, GammaOffset) {
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (float offset : {1.0f, 0.1f, -1.0f}) {
      for (simdnorm_dtype p : kFloatTypes) {
        for (bool gamma : {true, false}) {
          for (size_t cols : {3u, 64u, 896u, 4097u}) {
            Case c;
            c.kind = kind;
            c.t = {PickType(i, 1), PickType(i, 2), p};
            c.rows = 2;
            c.cols = cols;
            c.gamma = gamma;
            c.beta = Choose(i, 3, 2) == 0;
            c.gamma_offset = offset;
            c.family = PickFamily(i, c.t.x);
            ++i;
            RunCase(c, &st);
          }
        }
      }
    }
  }
  ExpectClean(st);
}

// gamma_offset 0 keeps today's behaviour bit for bit: a gamma of -0 stays -0
// (fl32(+0 + -0) would be +0), so +0 and -0 offsets give the same bits.
TEST_P(VariantsTest, GammaOffsetZeroKeepsNegativeZeroGamma) {
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype p : kFloatTypes) {
      for (simdnorm_dtype y : kFloatTypes) {
        std::vector<unsigned char> bytes[2];
        for (int k = 0; k < 2; ++k) {
          Case c;
          c.kind = kind;
          c.t = {SIMDNORM_F32, y, p};
          c.rows = 2;
          c.cols = 33;
          c.beta = false;
          c.gamma_offset = k == 0 ? 0.0f : -0.0f;
          Call call(c, RowData(Family::kTypical, c.rows, c.cols));
          for (size_t j = 0; j < c.cols; ++j) {
            call.gamma.Set(0, j, j % 2 ? -0.0f : 2.0f);
          }
          ASSERT_EQ(simdnorm_normalize(&call.d), SIMDNORM_OK);
          bytes[k] = call.OutputBytes();
        }
        EXPECT_TRUE(bytes[0] == bytes[1])
            << "[ISA " << simdnorm_active_isa() << "] " << KindName(kind)
            << " y=" << DTypeName(y) << " param=" << DTypeName(p)
            << ": gamma_offset +0 and -0 give other bits";
      }
    }
  }
}

// ---------------------------------------------------------------- rounding

// SIMDNORM_ROUND_NORMALIZED for BF16, F16 and F32 x (F32: rounding to fp32
// is the identity), every output type; some with the fused add and Gemma's
// offset (Hugging Face's GemmaRMSNorm order). Rule: CheckRoundNormalized.
TEST_P(VariantsTest, RoundNormalized) {
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : kFloatTypes) {
      for (simdnorm_dtype y : kFloatTypes) {
        for (size_t cols : kCols) {
          Case c;
          c.kind = kind;
          c.t = {x, y, PickType(i, 1)};
          c.rows = 3;
          c.cols = cols;
          c.flags = SIMDNORM_ROUND_NORMALIZED;
          c.beta = Choose(i, 2, 2) == 0;
          c.family = PickFamily(i, x);
          if (Choose(i, 3, 3) == 0) {
            c.residual = true;
            c.sum_out = SumOut::kSeparate;
          }
          if (Choose(i, 4, 4) == 0) c.gamma_offset = 1.0f;
          if (Choose(i, 5, 4) == 0) MakeStrided(&c);
          ++i;
          RunCase(c, &st);
        }
      }
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- I8

struct Grouping {
  size_t cols, group;  // group 0 = the whole row
};

// I8 output: whole rows, groups dividing cols, groups that do not (the last
// one shorter), groups longer than the row; dense and strided (y_stride in
// bytes) and misaligned; with x of each type and some fused adds.
TEST_P(VariantsTest, I8Output) {
  const Grouping groupings[] = {
      {1, 0},     {3, 0},     {3, 2},     {64, 0},     {64, 32},
      {64, 128},  {128, 32},  {128, 128}, {896, 0},    {896, 32},
      {896, 128}, {896, 100}, {4097, 0},  {4097, 128}, {4097, 100},
  };
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : kFloatTypes) {
      for (const Grouping& g : groupings) {
        Case c;
        c.kind = kind;
        c.t = {x, SIMDNORM_I8, PickType(i, 1)};
        c.rows = 3;
        c.cols = g.cols;
        c.quant_group = g.group;
        c.beta = Choose(i, 2, 2) == 0;
        c.family = PickFamily(i, x);
        if (Choose(i, 3, 2) == 0) {
          c.y_stride = g.cols + 5;
          c.y_offset = 1;
        }
        if (Choose(i, 4, 3) == 0) {
          c.residual = true;
          c.sum_out = SumOut::kSeparate;
        }
        ++i;
        RunCase(c, &st);
      }
    }
  }
  ExpectClean(st);
}

// Groups of zeros: LayerNorm of constant rows and RMSNorm of a zero row
// (no beta) give y = 0: scale 0 and q = 0. (Not F16 x: the constant rows
// include -2e5, infinite in f16; see I8NonFiniteGroups.)
TEST_P(VariantsTest, I8ZeroGroups) {
  Stats st;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (const Grouping& g : {Grouping{64, 0}, Grouping{896, 100}}) {
        Case c;
        c.kind = kind;
        c.t = {x, SIMDNORM_I8, SIMDNORM_BF16};
        c.rows = 8;  // kConstant row 4 is zero
        c.cols = g.cols;
        c.quant_group = g.group;
        c.beta = false;
        c.family = Family::kConstant;
        RunCase(c, &st);
      }
    }
  }
  EXPECT_GT(st.i8_special_groups, 0u);
  ExpectClean(st);
}

// Groups whose max|y| is not finite: scale = that max (NaN here), q = 0.
// Row 1 has an infinity in x (for F16 x: 1e5, which overflows f16), row 2
// a NaN; row 0 is finite. LayerNorm makes the whole row NaN; RMSNorm of a
// row with an infinity gives NaN at the infinity (inf * 0) and beta (or 0)
// elsewhere, so only its group is NaN.
TEST_P(VariantsTest, I8NonFiniteGroups) {
  Stats st;
  constexpr size_t kCols = 256;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : kFloatTypes) {
      for (size_t group : {0u, 64u}) {
        for (bool beta : {false, true}) {
          std::vector<float> values = RowData(Family::kTypical, 3, kCols);
          values[kCols + 5] = x == SIMDNORM_F16 ? 1e5f : HUGE_VALF;
          values[2 * kCols + 70] = std::numeric_limits<float>::quiet_NaN();
          Case c;
          c.kind = kind;
          c.t = {x, SIMDNORM_I8, SIMDNORM_F32};
          c.rows = 3;
          c.cols = kCols;
          c.quant_group = group;
          c.beta = beta;
          RunCaseOn(c, values, &st);
        }
      }
    }
  }
  EXPECT_GT(st.i8_special_groups, 0u);
  ExpectClean(st);
}

// ---------------------------------------------------------------- NaN rows

// The default quiet NaN of a float output type.
bool IsDefaultNaN(simdnorm_dtype t, const unsigned char* p) {
  if (t == SIMDNORM_F32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return u == 0x7FC00000u;
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  return b == FormatOf(HalfOf(t)).qnan;
}

// A NaN in row 2 of x (or of the residual) at the first, middle or last
// column: that row's outputs are the default quiet NaN (I8: every scale
// NaN and q = 0, checked by CheckI8Group), its sum_out holds h with the NaN,
// and every other row's outputs are bitwise those of the run without it.
TEST_P(VariantsTest, NaNRows) {
  constexpr size_t kRows = 5, kNaNRow = 2;
  const simdnorm_dtype y_types[] = {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16,
                                    SIMDNORM_I8};
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (simdnorm_dtype x : kFloatTypes) {
      for (simdnorm_dtype y : y_types) {
        for (size_t cols : {1u, 64u, 897u}) {
          // 0: plain; 1: NaN in the residual, sum_out separate; 2: vLLM's
          // in-place form (y = x only when the types match).
          for (int variant = 0; variant < 3; ++variant) {
            Case c;
            c.kind = kind;
            c.t = {x, y, PickType(i, 1)};
            c.rows = kRows;
            c.cols = cols;
            c.quant_group = y == SIMDNORM_I8 && cols > 64 ? 128 : 0;
            c.residual = variant != 0;
            c.sum_out = variant == 1   ? SumOut::kSeparate
                        : variant == 2 ? SumOut::kIsResidual
                                       : SumOut::kNone;
            c.in_place = variant == 2 && x == y;
            const size_t pos = Choose(i, 2, 3) == 0   ? 0
                               : Choose(i, 2, 3) == 1 ? cols / 2
                                                      : cols - 1;
            ++i;
            const std::vector<float>& clean_x =
                RowData(Family::kTypical, kRows, cols);
            const std::vector<float>& clean_r =
                ResidualData(Family::kTypical, kRows, cols);
            std::vector<float> nan_x = clean_x, nan_r = clean_r;
            const float nan = std::numeric_limits<float>::quiet_NaN();
            (variant == 1 ? nan_r : nan_x)[kNaNRow * cols + pos] = nan;
            std::vector<unsigned char> clean, poisoned;
            RunCaseOn(c, clean_x, &st, &clean_r, &clean);
            RunCaseOn(c, nan_x, &st, &nan_r, &poisoned);
            ASSERT_EQ(clean.size(), poisoned.size());
            // OutputBytes: y, then sum_out (x_type), then y_scale.
            const size_t ey = ElemSize(y), ex = ElemSize(x);
            const size_t y_bytes = kRows * cols * ey;
            const size_t s_bytes =
                c.sum_out == SumOut::kNone ? 0 : kRows * cols * ex;
            const size_t q_row = c.Groups() * 4;
            const std::string what =
                c.Describe() + ": NaN at row " + std::to_string(kNaNRow) +
                " col " + std::to_string(pos) +
                (variant == 1 ? " of the residual" : " of x");
            for (size_t r = 0; r < kRows; ++r) {
              if (r == kNaNRow) continue;
              auto same = [&](size_t base, size_t len) {
                return std::memcmp(clean.data() + base + r * len,
                                   poisoned.data() + base + r * len, len) == 0;
              };
              EXPECT_TRUE(same(0, cols * ey))
                  << what << ": y of row " << r << " changed";
              if (s_bytes) {
                EXPECT_TRUE(same(y_bytes, cols * ex))
                    << what << ": sum_out of row " << r << " changed";
              }
              if (y == SIMDNORM_I8) {
                EXPECT_TRUE(same(y_bytes + s_bytes, q_row))
                    << what << ": y_scale of row " << r << " changed";
              }
            }
            if (y != SIMDNORM_I8) {
              size_t bad = 0;
              for (size_t j = 0; j < cols; ++j) {
                bad += !IsDefaultNaN(
                    y, poisoned.data() + (kNaNRow * cols + j) * ey);
              }
              EXPECT_EQ(bad, 0u)
                  << what << ": " << bad
                  << " outputs of the row are not the default quiet NaN";
            }
          }
        }
      }
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- combined

// The combination: fused add + bf16 + Gemma's offset 1 + I8 output,
// in place (sum_out == residual, sum_out == x) and not (sum_out separate,
// NULL); also with f16. And the Hugging Face Gemma form with bf16 output:
// vLLM in place, offset 1, ROUND_NORMALIZED.
TEST_P(VariantsTest, FusedAddBf16GemmaI8) {
  Stats st;
  size_t i = 0;
  for (simdnorm_kind kind : kKinds) {
    for (SumOut so : {SumOut::kNone, SumOut::kSeparate, SumOut::kIsResidual,
                      SumOut::kIsX}) {
      for (size_t group : {0u, 128u}) {
        for (size_t cols : {64u, 896u, 4097u}) {
          const simdnorm_dtype io =
              Choose(i, 1, 4) == 0 ? SIMDNORM_F16 : SIMDNORM_BF16;
          Case c;
          c.kind = kind;
          c.t = {io, SIMDNORM_I8, io};
          c.rows = 3;
          c.cols = cols;
          c.residual = true;
          c.sum_out = so;
          c.gamma_offset = 1.0f;
          c.quant_group = group;
          c.beta = false;
          c.family = PickFamily(i, io);
          if (Choose(i, 2, 3) == 0) MakeStrided(&c);
          ++i;
          RunCase(c, &st);
        }
      }
    }
    for (size_t cols : {64u, 896u, 4097u}) {
      Case c;
      c.kind = kind;
      c.t = {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
      c.rows = 3;
      c.cols = cols;
      c.residual = true;
      c.sum_out = SumOut::kIsResidual;
      c.in_place = true;
      c.gamma_offset = 1.0f;
      c.flags = SIMDNORM_ROUND_NORMALIZED;
      c.beta = false;
      c.family = Family::kLlm;
      RunCase(c, &st);
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- threads

// Several row counts, checked against the reference with max_threads 1;
// then max_threads 0 and 2 must give the same bytes in every output. 200 x
// 896 and 40 x 4097 are large enough to be split over threads (the
// reference check is left to the smaller shapes there, for time).
TEST_P(VariantsTest, RowCountsAndThreads) {
  std::vector<Case> configs;
  {
    Case c;  // vLLM fused_add_rms_norm, f16
    c.kind = SIMDNORM_RMSNORM;
    c.t = {SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_BF16};
    c.residual = true;
    c.sum_out = SumOut::kIsResidual;
    c.in_place = true;
    c.beta = false;
    c.family = Family::kLlm;
    configs.push_back(c);
    c = Case();  // bf16 + Gemma + I8 groups, separate sum_out
    c.kind = SIMDNORM_RMSNORM;
    c.t = {SIMDNORM_BF16, SIMDNORM_I8, SIMDNORM_BF16};
    c.residual = true;
    c.sum_out = SumOut::kSeparate;
    c.gamma_offset = 1.0f;
    c.quant_group = 128;
    c.beta = false;
    configs.push_back(c);
    c = Case();  // LayerNorm, rounding of xhat, h written over x
    c.kind = SIMDNORM_LAYERNORM;
    c.t = {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F32};
    c.residual = true;
    c.sum_out = SumOut::kIsX;
    c.flags = SIMDNORM_ROUND_NORMALIZED;
    c.family = Family::kLargeMean;
    configs.push_back(c);
    c = Case();  // f16 to I8, whole rows, strided
    c.kind = SIMDNORM_LAYERNORM;
    c.t = {SIMDNORM_F16, SIMDNORM_I8, SIMDNORM_F16};
    c.x_stride = 1;  // set per shape below
    c.y_stride = 1;
    c.family = Family::kLlm;
    configs.push_back(c);
  }
  Stats st;
  const std::pair<size_t, size_t> shapes[] = {
      {1, 896}, {2, 896}, {7, 896}, {33, 896}, {200, 896}, {40, 4097}};
  for (const Case& config : configs) {
    for (const auto& shape : shapes) {
      Case c = config;
      c.rows = shape.first;
      c.cols = shape.second;
      if (c.x_stride) c.x_stride = c.cols + 5;
      if (c.y_stride) c.y_stride = c.cols + 3;
      c.max_threads = 1;
      const std::vector<float>& values = RowData(c.family, c.rows, c.cols);
      std::vector<unsigned char> one;
      if (c.rows * c.cols < 100000) {
        RunCaseOn(c, values, &st, nullptr, &one);
      } else {
        Call call(c, values);
        ASSERT_EQ(simdnorm_normalize(&call.d), SIMDNORM_OK) << c.Describe();
        one = call.OutputBytes();
      }
      for (size_t threads : {0u, 2u}) {
        Case ct = c;
        ct.max_threads = threads;
        Call call(ct, values);
        ASSERT_EQ(simdnorm_normalize(&call.d), SIMDNORM_OK) << ct.Describe();
        EXPECT_TRUE(call.OutputBytes() == one)
            << ct.Describe() << ": other bytes than with max_threads 1";
      }
    }
  }
  ExpectClean(st);
}

// ---------------------------------------------------------------- checkers

// The f16 helpers against every f16 value, and the rounding at ties,
// subnormals and overflow.
TEST(VariantCheckers, F16Helpers) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    if (F16IsNaN(h)) continue;
    ASSERT_EQ(RoundToF16(HalfToDouble(Half::kF16, h)), h) << Hex(h, 4);
  }
  EXPECT_EQ(RoundToF16(1.0), 0x3C00);
  EXPECT_EQ(RoundToF16(1.0 + std::ldexp(1.0, -11)), 0x3C00);      // tie, even
  EXPECT_EQ(RoundToF16(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);  // tie, odd
  EXPECT_EQ(RoundToF16(std::nextafter(1.0 + std::ldexp(1.0, -11), 2.0)),
            0x3C01);                       // above the tie
  EXPECT_EQ(RoundToF16(65504.0), 0x7BFF);  // largest finite
  EXPECT_EQ(RoundToF16(std::nextafter(65520.0, 0.0)), 0x7BFF);
  EXPECT_EQ(RoundToF16(65520.0), 0x7C00);  // halfway to 2^16: infinity
  EXPECT_EQ(RoundToF16(-1e6), 0xFC00);
  EXPECT_EQ(RoundToF16(std::ldexp(1.0, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(RoundToF16(std::ldexp(1.0, -25)), 0x0000);     // tie, even
  EXPECT_EQ(RoundToF16(std::ldexp(3.0, -25)), 0x0002);     // tie, odd
  EXPECT_EQ(RoundToF16(std::ldexp(1023.5, -24)), 0x0400);  // to normal
  EXPECT_EQ(RoundToF16(-0.0), 0x8000);
  EXPECT_TRUE(F16IsNaN(RoundToF16(std::nan(""))));
  EXPECT_EQ(F16ToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(F16ToFloat(0x0001), std::ldexp(1.0f, -24));
}

TEST(VariantCheckers, F16Rule) {
  Stats st;
  std::string why;
  const double b = F32Bound(1.0, 1.0, 0.0);
  EXPECT_TRUE(CheckF16(0x3C01, 0x3C00, 1.0, b, &st, &why));   // 1 ulp
  EXPECT_FALSE(CheckF16(0x3C02, 0x3C00, 1.0, b, &st, &why));  // 2 ulps
  EXPECT_FALSE(CheckF16(0x7E00, 0x3C00, 1.0, b, &st, &why));  // NaN
  EXPECT_TRUE(CheckF16(0xFE01, 0x7E00, std::nan(""), b, &st, &why));
  EXPECT_FALSE(CheckF16(0x3C00, 0x7E00, std::nan(""), b, &st, &why));
  // Infinity passes only where the fp32-bound window reaches 65520.
  const double big = 65519.0;
  EXPECT_TRUE(CheckF16(0x7C00, 0x7BFF, big, 1.5, &st, &why)) << why;
  EXPECT_FALSE(CheckF16(0x7C00, 0x7BFF, big, 0.5, &st, &why));
  // Cancellation: the rounding of a value within the bound passes.
  if (!LiteralBf16Rule()) {
    const double ref = 3e-6, bound = 1.1e-5;
    EXPECT_TRUE(CheckF16(RoundToF16(ref + 0.9 * bound), RoundToF16(ref), ref,
                         bound, &st, &why))
        << why;
    EXPECT_FALSE(CheckF16(RoundToF16(ref + 1.5 * bound), RoundToF16(ref), ref,
                          bound, &st, &why));
  }
}

// A kernel that skips the rounding of xhat fails the ROUND_NORMALIZED rule;
// the neighbour of round_x(T) passes only where T is within the fp32 bound
// of an x_type tie.
TEST(VariantCheckers, RoundNormalizedRule) {
  Stats st;
  std::string why;
  // T between two bf16 values, far from the tie: r = 1.0078125 (0x3F81).
  const double T = 1.0078125 + std::ldexp(1.0, -10);
  const double r = HalfToDouble(Half::kBf16, RoundToBf16(T));
  ASSERT_EQ(r, 1.0078125);
  const double s = 1.5, b = 0.25;
  const float good = static_cast<float>(r * s + b);
  const float skipped = static_cast<float>(T * s + b);
  EXPECT_TRUE(CheckRoundNormalized(SIMDNORM_BF16, SIMDNORM_F32, FloatBits(good),
                                   0, r * s + b, T, s, b, &st, &why))
      << why;
  EXPECT_FALSE(CheckRoundNormalized(SIMDNORM_BF16, SIMDNORM_F32,
                                    FloatBits(skipped), 0, r * s + b, T, s, b,
                                    &st, &why));
  // On a tie (T = 1 + 2^-8 + 2^-30): both neighbours pass.
  const double tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  for (double n : {1.0, 1.0078125}) {
    const float y = static_cast<float>(n * s + b);
    EXPECT_TRUE(CheckRoundNormalized(SIMDNORM_BF16, SIMDNORM_F32, FloatBits(y),
                                     0, 1.0078125 * s + b, tie, s, b, &st,
                                     &why))
        << n << ": " << why;
  }
  // 16-bit output: the rounding of r * s + b, or 1 ulp from it.
  const uint16_t want = RoundToF16(r * s + b);
  EXPECT_TRUE(CheckRoundNormalized(SIMDNORM_BF16, SIMDNORM_F16, want, want,
                                   r * s + b, T, s, b, &st, &why));
  EXPECT_FALSE(CheckRoundNormalized(SIMDNORM_BF16, SIMDNORM_F16,
                                    static_cast<uint16_t>(want + 2), want,
                                    r * s + b, T, s, b, &st, &why));
}

TEST(VariantCheckers, I8Group) {
  const double y[4] = {1.0, -0.5, 0.25, 0.0};
  const double terms[4] = {1.0, 1.0, 1.0, 1.0};
  const float s = static_cast<float>(1.0 / 127);
  const int8_t q[4] = {127, -64, 32, 0};  // RNE(-63.5) = -64, RNE(31.75) = 32
  Stats st;
  std::string why;
  EXPECT_TRUE(CheckI8Group(q, s, q, s, y, terms, 4, &st, &why)) << why;
  const int8_t q1[4] = {126, -63, 31, 1};  // each 1 off
  EXPECT_TRUE(CheckI8Group(q1, s, q, s, y, terms, 4, &st, &why)) << why;
  const int8_t q2[4] = {127, -66, 32, 0};  // 2 off
  EXPECT_FALSE(CheckI8Group(q2, s, q, s, y, terms, 4, &st, &why));
  EXPECT_FALSE(CheckI8Group(q, s * (1 + 3e-6f), q, s, y, terms, 4, &st, &why));
  EXPECT_TRUE(CheckI8Group(q, s * (1 + 5e-7f), q, s, y, terms, 4, &st, &why));
  // The reference itself must be fl32(max|y| / 127) with RNE q (within 1
  // of RNE(y64 / scale): y64 may not resolve the exact y's half-integers).
  const int8_t bad_ref[4] = {127, -61, 32, 0};
  EXPECT_FALSE(CheckI8Group(q, s, bad_ref, s, y, terms, 4, &st, &why));
  // Zeros: scale 0, q 0. NaN: scale NaN, q 0.
  const double zeros[2] = {0.0, -0.0};
  const int8_t q0[2] = {0, 0}, qn[2] = {0, -127};
  EXPECT_TRUE(CheckI8Group(q0, 0.0f, q0, 0.0f, zeros, terms, 2, &st, &why));
  EXPECT_FALSE(CheckI8Group(q0, 1e-9f, q0, 0.0f, zeros, terms, 2, &st, &why));
  const double nans[2] = {1.0, std::nan("")};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(CheckI8Group(q0, nan, q0, nan, nans, terms, 2, &st, &why));
  EXPECT_FALSE(CheckI8Group(qn, nan, q0, nan, nans, terms, 2, &st, &why));
  EXPECT_FALSE(CheckI8Group(q0, 1.0f, q0, nan, nans, terms, 2, &st, &why));
}

SIMDNORM_INSTANTIATE_PER_ISA(VariantsTest);

}  // namespace
}  // namespace simdnorm_test
