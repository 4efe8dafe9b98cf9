// The kernels of every ISA against the float64 reference: all dtype
// combinations, row lengths, strides, misaligned starts, in place,
// gamma/beta/eps variants, many rows, and shift invariance of LayerNorm.
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/cases.h"
#include "support/checks.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/matrix.h"
#include "support/run_case.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

// Every kind of the registry (AllKinds) in each test: a new kind is tested
// with no edit here. LayerNormTest: what only LayerNorm has.
SIMDNORM_ISA_FIXTURE(KernelsTest);
SIMDNORM_ISA_FIXTURE(LayerNormTest);

// Every row length, every dtype combination, dense rows, gamma and beta.
void Sizes(simdnorm_kind kind) {
  Stats st;
  for (size_t cols : AllCols()) {
    for (const DTypes& t : AllDTypes()) {
      Case c;
      c.kind = kind;
      c.t = t;
      c.rows = 3;
      c.cols = cols;
      RunCase(c, &st);
    }
  }
  ExpectClean(st);
}

// Row strides > cols and starts 1 element past an aligned address.
void StridesAndMisalignment(simdnorm_kind kind) {
  struct Layout {
    size_t x_extra, y_extra;  // stride - cols; 0 = dense (stride 0)
    size_t x_off, y_off, param_off;
  };
  const Layout layouts[] = {
      {3, 5, 0, 0, 0},  // strided, aligned
      {0, 0, 1, 1, 1},  // dense, everything misaligned
      {3, 5, 1, 0, 0},  // strided, x misaligned
      {7, 1, 0, 1, 1},  // strided, y and params misaligned
  };
  Stats st;
  for (size_t cols : AllCols()) {
    if (cols > 4097) continue;
    for (const DTypes& t : AllDTypes()) {
      for (const Layout& l : layouts) {
        Case c;
        c.kind = kind;
        c.t = t;
        c.rows = 3;
        c.cols = cols;
        c.x_stride = l.x_extra ? cols + l.x_extra : 0;
        c.y_stride = l.y_extra ? cols + l.y_extra : 0;
        c.x_offset = l.x_off;
        c.y_offset = l.y_off;
        c.param_offset = l.param_off;
        RunCase(c, &st);
      }
    }
  }
  ExpectClean(st);
}

// y == x (same dtype, same stride): dense, strided, explicit stride ==
// cols with a misaligned start.
void InPlace(simdnorm_kind kind) {
  Stats st;
  for (size_t cols : AllCols()) {
    for (simdnorm_dtype io : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (simdnorm_dtype p : {SIMDNORM_F32, SIMDNORM_BF16}) {
        for (int layout = 0; layout < 3; ++layout) {
          Case c;
          c.kind = kind;
          c.t = {io, io, p};
          c.rows = 3;
          c.cols = cols;
          c.in_place = true;
          c.x_stride = layout == 0 ? 0 : layout == 1 ? cols + 3 : cols;
          c.x_offset = layout == 2 ? 1 : 0;
          RunCase(c, &st);
        }
      }
    }
  }
  ExpectClean(st);
}

// With/without gamma, with/without beta, eps in {0, 1e-5, 1}.
void GammaBetaEps(simdnorm_kind kind) {
  Stats st;
  for (size_t cols : {5u, 64u, 897u, 4097u}) {
    for (const DTypes& t : AllDTypes()) {
      for (bool gamma : {false, true}) {
        for (bool beta : {false, true}) {
          for (float eps : {0.0f, 1e-5f, 1.0f}) {
            Case c;
            c.kind = kind;
            c.t = t;
            c.rows = 2;
            c.cols = cols;
            c.gamma = gamma;
            c.beta = beta;
            c.eps = eps;
            RunCase(c, &st);
          }
        }
      }
    }
  }
  ExpectClean(st);
}

// Enough rows that oneTBB splits them over threads.
void ManyRows(simdnorm_kind kind) {
  Stats st;
  for (const DTypes& t : AllDTypes()) {
    Case c;
    c.kind = kind;
    c.t = t;
    c.rows = 300;
    c.cols = 896;
    RunCase(c, &st);
  }
  Case strided;  // strided, misaligned, in place, odd length
  strided.kind = kind;
  strided.t = {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
  strided.rows = 301;
  strided.cols = 897;
  strided.x_stride = 900;
  strided.x_offset = 1;
  strided.in_place = true;
  RunCase(strided, &st);
  ExpectClean(st);
}

// Calls moving more than 16 MiB (x + y) write y with non-temporal stores
// when its rows are vector-aligned (lib/normalize.cc). Such calls match the
// reference, and their first rows are bit for bit those of a small call on
// the same rows (normal stores): f32 dense, bf16 in place, bf16 in / f32
// out, and f32 with misaligned rows (no streaming). Too big for the
// sanitizer and qemu runs (see CMakePresets.json).
void LargeCalls(simdnorm_kind kind) {
  Stats st;
  constexpr size_t kCols = 896, kSmallRows = 8;
  struct Layout {
    DTypes t;
    bool in_place;
    size_t offset;  // of x and y, in elements after a 64-byte boundary
  };
  const Layout layouts[] = {
      {{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32}, false, 0},
      {{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16}, true, 0},
      {{SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32}, false, 0},
      {{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32}, false, 1}};
  for (const Layout& l : layouts) {
    const size_t bytes_per_row = kCols * (ElemSize(l.t.x) + ElemSize(l.t.y));
    const size_t rows = (size_t{16} << 20) / bytes_per_row + 3;  // odd
    const std::vector<float>& values = RowData(Family::kTypical, rows, kCols);
    const std::vector<float> head(values.begin(),
                                  values.begin() + kSmallRows * kCols);
    Case c;
    c.kind = kind;
    c.t = l.t;
    c.cols = kCols;
    c.in_place = l.in_place;
    c.x_offset = c.y_offset = l.offset;
    std::vector<unsigned char> big, small;
    c.rows = rows;
    RunCaseOn(c, values, &st, nullptr, &big);
    c.rows = kSmallRows;
    RunCaseOn(c, head, &st, nullptr, &small);
    ASSERT_GE(big.size(), small.size());
    EXPECT_EQ(0, std::memcmp(big.data(), small.data(), small.size()))
        << c.Describe() << ": the first rows of a " << rows
        << "-row call differ from the same rows normalized alone";
  }
  ExpectClean(st);
}

TEST_P(KernelsTest, Sizes) {
  for (simdnorm_kind kind : AllKinds()) Sizes(kind);
}
TEST_P(KernelsTest, StridesAndMisalignment) {
  for (simdnorm_kind kind : AllKinds()) StridesAndMisalignment(kind);
}
TEST_P(KernelsTest, InPlace) {
  for (simdnorm_kind kind : AllKinds()) InPlace(kind);
}
TEST_P(KernelsTest, GammaBetaEps) {
  for (simdnorm_kind kind : AllKinds()) GammaBetaEps(kind);
}
TEST_P(KernelsTest, ManyRows) {
  for (simdnorm_kind kind : AllKinds()) ManyRows(kind);
}
TEST_P(KernelsTest, LargeCalls) {
  for (simdnorm_kind kind : AllKinds()) LargeCalls(kind);
}

// LayerNorm(x + k) == LayerNorm(x) bit for bit when x + k is exact: row 0
// holds x, row 1 holds x + k; both the library and the reference must give
// the two rows identical bits.
void ExpectShiftInvariant(const std::vector<float>& row, float shift) {
  const size_t n = row.size();
  std::vector<float> values(row);
  for (float v : row) values.push_back(v + shift);
  for (const DTypes& t : AllDTypes()) {
    for (bool params : {false, true}) {
      for (float eps : {0.0f, 1e-5f}) {
        Matrix x(t.x, 2, n);
        x.Fill(values);
        for (size_t i = 0; i < n; ++i) {  // the test's own premise
          ASSERT_EQ(x.GetF(1, i), x.GetF(0, i) + shift);
        }
        Matrix gamma(t.param, 1, n), beta(t.param, 1, n);
        gamma.Fill(ParamData(true, n));
        beta.Fill(ParamData(false, n));
        Matrix y(t.y, 2, n), ref(t.y, 2, n);
        simdnorm_desc d{};
        d.kind = SIMDNORM_LAYERNORM;
        d.rows = 2;
        d.cols = n;
        d.x = x.data();
        d.x_type = t.x;
        d.y = y.data();
        d.y_type = t.y;
        d.gamma = params ? gamma.data() : nullptr;
        d.beta = params ? beta.data() : nullptr;
        d.param_type = t.param;
        d.eps = eps;
        ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        simdnorm_desc rd = d;
        rd.y = ref.data();
        ASSERT_EQ(simdnorm_normalize_reference(&rd), SIMDNORM_OK);
        const std::string what =
            std::string("[ISA ") + simdnorm_active_isa() +
            "] n=" + std::to_string(n) + " shift=" + Num(shift) +
            " x=" + DTypeName(t.x) + " y=" + DTypeName(t.y) +
            " param=" + DTypeName(t.param) +
            (params ? " gamma+beta" : " no params") + " eps=" + Num(eps);
        EXPECT_TRUE(ref.RowBytesEqual(ref, 0, 1)) << "reference: " << what;
        if (!y.RowBytesEqual(y, 0, 1)) {
          std::ostringstream os;
          for (size_t i = 0; i < n; ++i) {
            if (std::memcmp(y.At(0, i), y.At(1, i), ElemSize(t.y)) != 0) {
              os << " [col " << i << ": x " << Num(x.GetF(0, i)) << " -> "
                 << Num(y.GetF(0, i)) << ", x+shift -> " << Num(y.GetF(1, i))
                 << "]";
            }
          }
          ADD_FAILURE() << "library output differs between x and x + shift: "
                        << what << os.str();
        }
      }
    }
  }
}

TEST_P(LayerNormTest, ShiftInvariance) {
  ExpectShiftInvariant({1.0f, 2.0f, 4.0f}, 10.0f);
  // Longer than a vector, with a tail; small integers stay exact in bf16.
  std::vector<float> ints;
  for (int i = 0; i < 33; ++i) ints.push_back(static_cast<float>((i * 7) % 23));
  ExpectShiftInvariant(ints, 64.0f);
}

SIMDNORM_INSTANTIATE_PER_ISA(KernelsTest);
SIMDNORM_INSTANTIATE_PER_ISA(LayerNormTest);

}  // namespace
}  // namespace simdnorm_test
