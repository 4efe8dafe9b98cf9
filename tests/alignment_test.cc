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
  simdnorm_desc d = {};
  d.kind = kind;
  d.rows = rows;
  d.cols = cols;
  d.x = x.data();
  d.x_type = t.x;
  d.x_stride = stride;
  d.y = l.in_place ? x.data() : y.data();
  d.y_type = t.y;
  d.y_stride = stride;
  d.gamma = gamma.data();
  d.beta = beta.data();
  d.param_type = t.param;
  d.eps = 1e-5f;
  d.max_threads = 1;
  d.flags = l.flags;
  EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
  const Matrix& out = l.in_place ? x : y;
  std::vector<unsigned char> bytes;
  for (size_t r = 0; r < rows; ++r) {
    bytes.insert(bytes.end(), out.At(r, 0), out.At(r, 0) + cols * ye);
  }
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

}  // namespace

SIMDNORM_INSTANTIATE_PER_ISA(AlignmentTest);

}  // namespace simdnorm_test
