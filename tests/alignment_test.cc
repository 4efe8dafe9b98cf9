// Results do not depend on where rows sit in memory: every dtype triple,
// rows at every element offset from a 64-byte line (x and y alike, apart,
// in place) and strides that move each row's offset, stored through the
// cache or streamed (SIMDNORM_Y_STREAM), give the same bytes as the same
// rows 64-byte aligned. The write loops peel a head to align their loads or
// stores and may stream y shifted (norm_rows-inl.h, PeelHead,
// StreamShifted), and nothing else may change.
#include <cstddef>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/matrix.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(AlignmentTest);

constexpr size_t kLine = 64;

constexpr size_t kAtX = ~size_t{0};

struct Layout {
  size_t x_off, y_off;  // bytes past a 64-byte line (multiples of 4)
  size_t extra;         // stride - cols, elements (moves each row's offset)
  bool in_place;
  unsigned flags = 0;   // SIMDNORM_Y_STREAM: streamed
  size_t w_off = kAtX;  // gamma's and beta's (kAtX: x_off)
};

// A call of `kind` on x's rows into y (x's stride; its dtypes t), with
// gamma and beta, eps 1e-5, one thread.
simdnorm_desc DescOf(simdnorm_kind kind, const DTypes& t, Matrix& x, void* y,
                     Matrix& gamma, Matrix& beta) {
  simdnorm_desc d = {};
  d.kind = kind;
  d.rows = x.rows();
  d.cols = x.cols();
  d.x = x.data();
  d.x_type = t.x;
  d.x_stride = x.stride();
  d.y = y;
  d.y_type = t.y;
  d.y_stride = x.stride();
  d.gamma = gamma.data();
  d.beta = beta.data();
  d.param_type = t.param;
  d.eps = 1e-5f;
  d.max_threads = 1;
  return d;
}

// The first cols elements of each row of m, appended to bytes.
void AppendRows(const Matrix& m, std::vector<unsigned char>& bytes) {
  for (size_t r = 0; r < m.rows(); ++r) {
    bytes.insert(bytes.end(), m.At(r, 0),
                 m.At(r, 0) + m.cols() * ElemSize(m.type()));
  }
}

// The rows of y (cols elements each) for one layout, as bytes.
std::vector<unsigned char> Run(simdnorm_kind kind, const DTypes& t, size_t rows,
                               size_t cols, const Layout& l,
                               const std::vector<float>& values,
                               const std::vector<float>& gamma_beta) {
  const size_t stride = cols + l.extra;
  const size_t pe = ElemSize(t.param), ye = ElemSize(t.y);
  Matrix x(t.x, rows, cols, stride, l.x_off / ElemSize(t.x));
  Matrix y(t.y, rows, cols, stride, l.y_off / ye);
  const size_t w_off = l.w_off == kAtX ? l.x_off : l.w_off;
  Matrix gamma(t.param, 1, cols, 0, w_off / pe);
  Matrix beta(t.param, 1, cols, 0, w_off / pe);
  x.Fill(values);
  gamma.Fill(std::vector<float>(gamma_beta.begin(), gamma_beta.begin() + cols));
  beta.Fill(std::vector<float>(gamma_beta.begin() + cols, gamma_beta.end()));
  simdnorm_desc d =
      DescOf(kind, t, x, l.in_place ? x.data() : y.data(), gamma, beta);
  d.flags = l.flags;
  EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
  std::vector<unsigned char> bytes;
  AppendRows(l.in_place ? x : y, bytes);
  return bytes;
}

std::vector<DTypes> AllWithF16() {
  std::vector<DTypes> all = AllDTypes();
  for (const DTypes& t : F16DTypes()) all.push_back(t);
  return all;
}

// gamma, then beta (cols each).
std::vector<float> GammaBetaOf(size_t cols) {
  std::vector<float> params = ParamData(true, cols);
  params.resize(2 * cols);
  for (size_t c = 0; c < cols; ++c) params[cols + c] = 0.01f * (c % 7);
  return params;
}

void SameBitsAtEveryAddress(simdnorm_kind kind) {
  const size_t rows = 3;
  for (size_t cols : {5u, 33u, 100u, 897u, 1536u}) {
    const std::vector<float>& values = RowData(Family::kTypical, rows, cols);
    const std::vector<float> params = GammaBetaOf(cols);
    for (const DTypes& t : AllWithF16()) {
      for (size_t extra : {0u, 3u}) {
        const std::vector<unsigned char> want =
            Run(kind, t, rows, cols, {0, 0, extra, false}, values, params);
        std::vector<Layout> layouts;
        for (size_t off = 4; off < kLine; off += 4) {
          layouts.push_back({off, off, extra, false});
        }
        layouts.push_back({16, 0, extra, false});
        layouts.push_back({0, 16, extra, false});
        layouts.push_back({4, 36, extra, false});
        layouts.push_back({16, 0, extra, false, 0, 0});  // weights apart
        layouts.push_back({48, 16, extra, false, 0, 0});
        if (t.x == t.y) {
          layouts.push_back({16, 16, extra, true});
          layouts.push_back({0, 0, extra, true});
        }
        // Streamed: every third layout, and those with x and y apart.
        for (size_t i = 0, end = layouts.size(); i < end; ++i) {
          Layout l = layouts[i];
          l.flags = SIMDNORM_Y_STREAM;
          if (i % 3 == 0 || l.x_off != l.y_off) layouts.push_back(l);
        }
        for (const Layout& l : layouts) {
          EXPECT_TRUE(want == Run(kind, t, rows, cols, l, values, params))
              << KindName(kind) << " " << DTypeName(t.x) << "/"
              << DTypeName(t.y) << "/" << DTypeName(t.param) << " cols " << cols
              << " stride +" << extra << " x at +" << l.x_off << " y at +"
              << l.y_off << " weights at +"
              << (l.w_off == kAtX ? l.x_off : l.w_off)
              << (l.in_place ? " in place" : "")
              << (l.flags != 0 ? " streamed" : "");
        }
      }
    }
  }
}

// Streamed calls of 8 rows or more copy gamma and beta to x's offset where
// they sit elsewhere (norm_rows-inl.h, WeightsAtX): the same bits too.
void SameBitsWithWeightsApart(simdnorm_kind kind) {
  const size_t rows = 9;
  for (size_t cols : {100u, 897u}) {
    const std::vector<float>& values = RowData(Family::kTypical, rows, cols);
    const std::vector<float> params = GammaBetaOf(cols);
    for (const DTypes& t : AllWithF16()) {
      const std::vector<unsigned char> want =
          Run(kind, t, rows, cols, {0, 0, 0, false}, values, params);
      const Layout layouts[] = {{16, 16, 0, false, SIMDNORM_Y_STREAM, 0},
                                {16, 0, 0, false, SIMDNORM_Y_STREAM, 0},
                                {16, 0, 0, false, SIMDNORM_Y_STREAM, 4},
                                {0, 0, 0, false, SIMDNORM_Y_STREAM, 16},
                                {16, 16, 0, true, SIMDNORM_Y_STREAM, 0}};
      for (const Layout& l : layouts) {
        if (l.in_place && t.x != t.y) continue;
        EXPECT_TRUE(want == Run(kind, t, rows, cols, l, values, params))
            << KindName(kind) << " " << DTypeName(t.x) << "/" << DTypeName(t.y)
            << "/" << DTypeName(t.param) << " cols " << cols << " x at +"
            << l.x_off << " y at +" << l.y_off << " weights at +" << l.w_off
            << (l.in_place ? " in place" : "") << " streamed";
      }
    }
  }
}

// The fused add (h = x + residual to sum_out, then the norm of h), its
// operands all at one offset, with sum_out apart, in place of the residual
// (vLLM's fused_add_rms_norm, y = x too) or of x: y's and sum_out's bytes
// are those of the aligned call with every buffer apart. The correctly
// rounded rows align h's stores (AddRow), making its first and last 2N
// sums before any store that may overwrite their inputs.
enum class SumAt { kApart, kResidual, kResidualYAtX, kX };

void SameBitsWithFusedAdd(simdnorm_kind kind) {
  const size_t rows = 3;
  for (size_t cols : {40u, 100u, 897u}) {
    const std::vector<float>& values = RowData(Family::kTypical, rows, cols);
    const std::vector<float>& residuals =
        RowData(Family::kLargeMean, rows, cols);
    const std::vector<float> params = GammaBetaOf(cols);
    for (const DTypes& t : AllWithF16()) {
      // y bytes, then sum_out bytes.
      const auto run = [&](size_t off, SumAt at) {
        const size_t xe = ElemSize(t.x), ye = ElemSize(t.y);
        Matrix x(t.x, rows, cols, 0, off / xe),
            res(t.x, rows, cols, 0, off / xe);
        Matrix y(t.y, rows, cols, 0, off / ye),
            sum(t.x, rows, cols, 0, off / xe);
        Matrix gamma(t.param, 1, cols, 0, off / ElemSize(t.param));
        Matrix beta(t.param, 1, cols, 0, off / ElemSize(t.param));
        x.Fill(values);
        res.Fill(residuals);
        gamma.Fill(std::vector<float>(params.begin(), params.begin() + cols));
        beta.Fill(std::vector<float>(params.begin() + cols, params.end()));
        const bool y_at_x = at == SumAt::kResidualYAtX;
        simdnorm_desc d =
            DescOf(kind, t, x, y_at_x ? x.data() : y.data(), gamma, beta);
        d.residual = res.data();
        d.sum_out = at == SumAt::kApart ? sum.data()
                    : at == SumAt::kX   ? x.data()
                                        : res.data();
        EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        std::vector<unsigned char> bytes;
        AppendRows(y_at_x ? x : y, bytes);
        AppendRows(at == SumAt::kApart ? sum
                   : at == SumAt::kX   ? x
                                       : res,
                   bytes);
        return bytes;
      };
      const std::vector<unsigned char> want = run(0, SumAt::kApart);
      for (size_t off : {0u, 4u, 16u, 36u, 48u}) {
        for (SumAt at : {SumAt::kApart, SumAt::kResidual, SumAt::kResidualYAtX,
                         SumAt::kX}) {
          if (at == SumAt::kResidualYAtX && t.x != t.y) continue;
          if (off % ElemSize(t.x) != 0 || off % ElemSize(t.y) != 0 ||
              off % ElemSize(t.param) != 0) {
            continue;
          }
          EXPECT_TRUE(want == run(off, at))
              << KindName(kind) << " " << DTypeName(t.x) << "/"
              << DTypeName(t.y) << "/" << DTypeName(t.param) << " cols " << cols
              << " at +" << off << " sum_out "
              << (at == SumAt::kApart      ? "apart"
                  : at == SumAt::kResidual ? "at residual"
                  : at == SumAt::kX        ? "at x"
                                           : "at residual, y at x");
        }
      }
    }
  }
}

TEST_P(AlignmentTest, LayerNormSameBitsAtEveryAddress) {
  SameBitsAtEveryAddress(SIMDNORM_LAYERNORM);
}
TEST_P(AlignmentTest, RMSNormSameBitsAtEveryAddress) {
  SameBitsAtEveryAddress(SIMDNORM_RMSNORM);
}
// L2 normalization shares RMSNorm's statistics pass (RotatedSquares where x
// is off a line on AVX-512).
TEST_P(AlignmentTest, L2NormSameBitsAtEveryAddress) {
  SameBitsAtEveryAddress(SIMDNORM_L2NORM);
}
TEST_P(AlignmentTest, LayerNormSameBitsWithWeightsApart) {
  SameBitsWithWeightsApart(SIMDNORM_LAYERNORM);
}
TEST_P(AlignmentTest, RMSNormSameBitsWithWeightsApart) {
  SameBitsWithWeightsApart(SIMDNORM_RMSNORM);
}
TEST_P(AlignmentTest, LayerNormFusedAddSameBitsAtEveryAddress) {
  SameBitsWithFusedAdd(SIMDNORM_LAYERNORM);
}
TEST_P(AlignmentTest, RMSNormFusedAddSameBitsAtEveryAddress) {
  SameBitsWithFusedAdd(SIMDNORM_RMSNORM);
}

}  // namespace

SIMDNORM_INSTANTIATE_PER_ISA(AlignmentTest);

}  // namespace simdnorm_test
