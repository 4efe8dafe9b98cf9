// The backward pass (simdnorm_backward) of every kind the registry marks
// has_backward: the float64 reference against central differences of the
// float64 forward reference and against the Jacobian identities; every
// ISA's kernels against the reference (dtypes, strides, in place, weights,
// row lengths) and the identities; dgamma and dbeta bitwise the same for
// any thread count; NaN rows; bad descriptors.
//
// The bound of fp32 dx (docs/accuracy.md, "Backward"), per element j of a
// row, with g = dy * scale, tau = 1 for centered kinds (xhat's error has an
// absolute part there) and 0 otherwise, and W = min(1, 1 / sum(xhat^2)) >=
// the kind's weight w of sum(g * xhat) (1/n <= 1/sum(xhat^2) for LayerNorm
// and RMSNorm, whose sum(xhat^2) <= n; 1 or 0 for L2):
//   |dx - exact| <= kDxBound * 2^-23 * M_j,
//   M_j = r * (|g_j| + [centered] mean|g| + (|xhat_j| + tau) * W *
//              sum(|g| * (|xhat| + tau))).
// 16-bit dx add half an ulp of (|exact| + that bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/grad_bounds.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/isa_test.h"

namespace simdnorm_test {
namespace {

// The bounds, in units of 2^-23: support/grad_bounds.h.
constexpr double kUlp = kGradUlp;

std::vector<simdnorm_kind> BackwardKinds() {
  std::vector<simdnorm_kind> kinds;
  for (simdnorm_kind k : AllKinds()) {
    if (simdnorm_op_of(k)->has_backward) kinds.push_back(k);
  }
  return kinds;
}

bool Centered(simdnorm_kind k) { return simdnorm_op_of(k)->centered != 0; }

// Rows of one dtype, `stride` elements apart (0 = cols), values accessed
// as doubles (stored rounded to nearest-even).
struct Operand {
  simdnorm_dtype t = SIMDNORM_F32;
  size_t rows = 0, cols = 0, stride = 0;
  std::vector<float> storage;

  Operand() = default;
  Operand(simdnorm_dtype type, size_t r, size_t c, size_t s = 0)
      : t(type), rows(r), cols(c), stride(s) {
    storage.assign((r * Stride() * ElemSize(t) + 3) / 4 + 1, 0.0f);
  }
  size_t Stride() const { return stride ? stride : cols; }
  void* Data() { return storage.data(); }
  const void* Data() const { return storage.data(); }
  unsigned char* At(size_t r, size_t j) {
    return reinterpret_cast<unsigned char*>(storage.data()) +
           (r * Stride() + j) * ElemSize(t);
  }
  const unsigned char* At(size_t r, size_t j) const {
    return const_cast<Operand*>(this)->At(r, j);
  }
  void Set(size_t r, size_t j, double v) {
    if (t == SIMDNORM_F32) {
      const float f = static_cast<float>(v);
      std::memcpy(At(r, j), &f, 4);
      return;
    }
    const uint16_t b = t == SIMDNORM_BF16 ? RoundToBf16(v) : RoundToF16(v);
    std::memcpy(At(r, j), &b, 2);
  }
  double Get(size_t r, size_t j) const {
    if (t == SIMDNORM_F32) {
      float f;
      std::memcpy(&f, At(r, j), 4);
      return f;
    }
    uint16_t b;
    std::memcpy(&b, At(r, j), 2);
    return t == SIMDNORM_BF16 ? Bf16ToFloat(b) : F16ToFloat(b);
  }
  uint32_t Bits(size_t r, size_t j) const {
    uint32_t u = 0;
    std::memcpy(&u, At(r, j), ElemSize(t));
    return u;
  }
};

// One backward problem and its outputs.
struct Grad {
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  size_t rows = 0, cols = 0;
  Operand x, dy, dx, gamma;
  bool has_gamma = false;
  bool in_place = false;  // dx is dy
  float gamma_offset = 0.0f, eps = 1e-5f;
  std::vector<float> dgamma, dbeta;
  std::vector<float> mean, rstd;  // the forward's saved statistics, or none
  size_t max_threads = 0;
  unsigned flags = 0;

  simdnorm_backward_desc Desc() {
    simdnorm_backward_desc d{};
    d.kind = kind;
    d.rows = rows;
    d.cols = cols;
    d.x = x.Data();
    d.x_type = x.t;
    d.x_stride = x.stride;
    d.dy = dy.Data();
    d.dy_type = dy.t;
    d.dy_stride = dy.stride;
    Operand& out = in_place ? dy : dx;
    d.dx = out.Data();
    d.dx_type = out.t;
    d.dx_stride = out.stride;
    d.gamma = has_gamma ? gamma.Data() : nullptr;
    d.param_type = gamma.t;
    d.gamma_offset = gamma_offset;
    d.eps = eps;
    d.dgamma = dgamma.empty() ? nullptr : dgamma.data();
    d.dbeta = dbeta.empty() ? nullptr : dbeta.data();
    d.max_threads = max_threads;
    d.flags = flags;
    d.mean = mean.empty() ? nullptr : mean.data();
    d.rstd = rstd.empty() ? nullptr : rstd.data();
    return d;
  }
  const Operand& Out() const { return in_place ? dy : dx; }
  // The fp32 scale of column j, as the forward forms it.
  double Scale(size_t j) const {
    const float g = has_gamma ? static_cast<float>(gamma.Get(0, j)) : 1.0f;
    return static_cast<float>(gamma_offset + g);
  }
};

// A problem with x from a family, dy ~ N(0, 1), gamma ~ 1 + 0.5 N(0, 1).
Grad MakeGrad(simdnorm_kind kind, size_t rows, size_t cols, Family f,
              simdnorm_dtype xt, simdnorm_dtype dyt, simdnorm_dtype dxt,
              simdnorm_dtype pt, bool has_gamma, size_t extra_stride = 0) {
  Grad p;
  p.kind = kind;
  p.rows = rows;
  p.cols = cols;
  const size_t stride = extra_stride ? cols + extra_stride : 0;
  p.x = Operand(xt, rows, cols, stride);
  p.dy = Operand(dyt, rows, cols, stride);
  p.dx = Operand(dxt, rows, cols, extra_stride ? cols + 2 * extra_stride : 0);
  p.gamma = Operand(pt, 1, cols);
  p.has_gamma = has_gamma;
  const std::vector<float>& xs = RowData(f, rows, cols);
  const std::vector<float>& dys = RowData(Family::kStdNormal, rows, cols);
  const std::vector<float>& gs = ParamData(true, cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < cols; ++j) {
      p.x.Set(r, j, xs[r * cols + j]);
      p.dy.Set(r, j, dys[(rows - 1 - r) * cols + j]);
    }
  }
  for (size_t j = 0; j < cols; ++j) p.gamma.Set(0, j, gs[j]);
  p.dgamma.assign(cols, -1.0f);
  p.dbeta.assign(cols, -1.0f);
  return p;
}

// The forward of p's x (kind, eps) into y, dense, of y_type.
simdnorm_desc ForwardDesc(Grad& p, void* y, simdnorm_dtype y_type) {
  simdnorm_desc d{};
  d.kind = p.kind;
  d.rows = p.rows;
  d.cols = p.cols;
  d.x = p.x.Data();
  d.x_type = p.x.t;
  d.x_stride = p.x.stride;
  d.y = y;
  d.y_type = y_type;
  d.eps = p.eps;
  return d;
}

// The forward reference's xhat (float64), rows * cols.
std::vector<double> Xhat(Grad& p) {
  std::vector<float> y(p.rows * p.cols);
  const simdnorm_desc d = ForwardDesc(p, y.data(), SIMDNORM_F32);
  std::vector<double> out(p.rows * p.cols), xhat(p.rows * p.cols);
  EXPECT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
            simdnorm::Status::kOk);
  return xhat;
}

// M_j of every element (see top), and the per-column scales of dgamma's
// and dbeta's bounds: sum over rows of |dy| (|xhat| + tau) and of |dy|.
struct Scales {
  std::vector<double> m, dgamma, dbeta;
};

Scales ScalesOf(Grad& p) {
  const std::vector<double> xhat = Xhat(p);
  const bool centered = Centered(p.kind);
  const double tau = centered ? 1.0 : 0.0, n = static_cast<double>(p.cols);
  Scales s{std::vector<double>(p.rows * p.cols),
           std::vector<double>(p.cols, 0.0), std::vector<double>(p.cols, 0.0)};
  for (size_t r = 0; r < p.rows; ++r) {
    const double* xh = &xhat[r * p.cols];
    double center = 0.0;
    if (centered) {
      for (size_t j = 0; j < p.cols; ++j) center += p.x.Get(r, j);
      center /= n;
    }
    // xhat = (x - center) * r.
    double abs_xhat = 0.0, abs_dev = 0.0, sq = 0.0, abs_g = 0.0, abs_gx = 0.0;
    for (size_t j = 0; j < p.cols; ++j) {
      const double g = std::fabs(p.dy.Get(r, j) * p.Scale(j));
      abs_xhat += std::fabs(xh[j]);
      abs_dev += std::fabs(p.x.Get(r, j) - center);
      sq += xh[j] * xh[j];
      abs_g += g;
      abs_gx += g * (std::fabs(xh[j]) + tau);
      s.dgamma[j] += std::fabs(p.dy.Get(r, j)) * (std::fabs(xh[j]) + tau);
      s.dbeta[j] += std::fabs(p.dy.Get(r, j));
    }
    // A centered row whose deviations are all 0 (n = 1, constant rows) has
    // var = 0: r = 1 / sqrt(eps), the only centered denominator there.
    const double rr = abs_dev > 0.0 ? abs_xhat / abs_dev
                      : centered    ? 1.0 / std::sqrt(p.eps)
                                    : 0.0;
    const double w = sq > 1.0 ? 1.0 / sq : 1.0;
    for (size_t j = 0; j < p.cols; ++j) {
      const double g = std::fabs(p.dy.Get(r, j) * p.Scale(j));
      s.m[r * p.cols + j] = rr * (g + (centered ? abs_g / n : 0.0) +
                                  (std::fabs(xh[j]) + tau) * w * abs_gx);
    }
  }
  return s;
}

// The reference's dx as fp32 (one more rounding: 2^-24 relative), dgamma
// and dbeta, on a copy of the problem.
struct Truth {
  Operand dx;
  std::vector<float> dgamma, dbeta;
};

Truth ReferenceOf(const Grad& p) {
  Grad q = p;
  q.in_place = false;
  q.dx = Operand(SIMDNORM_F32, p.rows, p.cols);
  const simdnorm_backward_desc d = q.Desc();
  EXPECT_EQ(simdnorm_backward_reference(&d), SIMDNORM_OK);
  return Truth{q.dx, q.dgamma, q.dbeta};
}

// The largest |dx - truth| / (2^-23 M) seen on fp32 dx (reported).
double g_worst_f32 = 0.0;

// Printed for docs/accuracy.md: the largest |dx - exact| / (2^-23 M) of
// this test.
void ReportWorst() {
  std::printf("%s: fp32 dx within %.2f of 2^-23 M (bound %.0f)\n",
              simdnorm_active_isa(), g_worst_f32, kDxBound);
  g_worst_f32 = 0.0;
}

// Runs the kernels and checks dx, dgamma and dbeta against the reference.
void ExpectMatchesReference(Grad p, const std::string& what) {
  const Truth truth = ReferenceOf(p);
  const Scales sc = ScalesOf(p);
  simdnorm_backward_desc d = p.Desc();
  ASSERT_EQ(simdnorm_backward(&d), SIMDNORM_OK) << what;
  const Operand& out = p.Out();
  int failures = 0;
  for (size_t r = 0; r < p.rows && failures < 5; ++r) {
    for (size_t j = 0; j < p.cols && failures < 5; ++j) {
      const double want = truth.dx.Get(r, j), got = out.Get(r, j);
      const double tol = DxTolerance(out.t, want, sc.m[r * p.cols + j]);
      if (out.t == SIMDNORM_F32 && sc.m[r * p.cols + j] > 0) {
        g_worst_f32 = std::max(
            g_worst_f32, std::fabs(got - want) / (kUlp * sc.m[r * p.cols + j]));
      }
      if (!(std::fabs(got - want) <= tol)) {
        ++failures;
        ADD_FAILURE() << what << " row " << r << " col " << j << ": dx " << got
                      << " want " << want << " tol " << tol;
      }
    }
  }
  for (size_t j = 0; j < p.cols && !p.dgamma.empty(); ++j) {
    const double tg = kDgammaBound * kUlp * sc.dgamma[j] +
                      0x1p-24 * std::fabs(truth.dgamma[j]);
    const double tb =
        kDbetaBound * kUlp * sc.dbeta[j] + 0x1p-24 * std::fabs(truth.dbeta[j]);
    ASSERT_LE(std::fabs(p.dgamma[j] - truth.dgamma[j]), tg)
        << what << " dgamma col " << j;
    ASSERT_LE(std::fabs(p.dbeta[j] - truth.dbeta[j]), tb)
        << what << " dbeta col " << j;
  }
}

std::string Name(const Grad& p, const char* extra = "") {
  return std::string(simdnorm_active_isa()) + " " + KindName(p.kind) +
         " cols " + std::to_string(p.cols) + " x " + DTypeName(p.x.t) + " dy " +
         DTypeName(p.dy.t) + " dx " + DTypeName(p.Out().t) + " gamma " +
         (p.has_gamma ? DTypeName(p.gamma.t) : "none") + " eps " +
         std::to_string(p.eps) + extra;
}

SIMDNORM_ISA_FIXTURE(BackwardTest);

// (a) Every dtype triple of F32 and BF16, and some with F16; row lengths;
// weights and offsets; eps 0.
TEST_P(BackwardTest, MatchesReference) {
  struct Types {
    simdnorm_dtype x, dy, dx;
  };
  std::vector<Types> types;
  for (simdnorm_dtype x : {SIMDNORM_F32, SIMDNORM_BF16})
    for (simdnorm_dtype dy : {SIMDNORM_F32, SIMDNORM_BF16})
      for (simdnorm_dtype dx : {SIMDNORM_F32, SIMDNORM_BF16})
        types.push_back({x, dy, dx});
  types.push_back({SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16});
  types.push_back({SIMDNORM_F32, SIMDNORM_F16, SIMDNORM_BF16});
  types.push_back({SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F16});
  int v = 0;
  for (simdnorm_kind kind : BackwardKinds()) {
    for (size_t cols : {1, 3, 8, 17, 64, 896, 1001, 4097}) {
      for (const Types& t : types) {
        ++v;
        const simdnorm_dtype pt = v % 3 == 0 ? SIMDNORM_BF16 : SIMDNORM_F32;
        Grad p = MakeGrad(kind, 3, cols, Family::kTypical, t.x, t.dy, t.dx, pt,
                          v % 2 == 0);
        p.gamma_offset = v % 4 == 2 ? 1.0f : 0.0f;
        p.eps = v % 5 == 0 && cols > 1 ? 0.0f : 1e-5f;
        ExpectMatchesReference(p, Name(p));
      }
    }
  }
  ReportWorst();
}

// Families whose statistics need the forward's care: a large mean (the
// shift), huge and tiny values (rescaling; tiny rows are below L2's eps),
// outliers.
TEST_P(BackwardTest, HardRows) {
  for (simdnorm_kind kind : BackwardKinds()) {
    for (Family f : {Family::kStdNormal, Family::kLargeMean, Family::kHuge,
                     Family::kTiny, Family::kOutliers, Family::kLlm}) {
      for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
        Grad p =
            MakeGrad(kind, 4, 1001, f, t, SIMDNORM_F32, t, SIMDNORM_F32, true);
        ExpectMatchesReference(
            p, Name(p, (std::string(" ") + FamilyName(f)).c_str()));
      }
    }
  }
  ReportWorst();
}

// Strides, in place (dx == dy), no sums wanted.
TEST_P(BackwardTest, StridesAndInPlace) {
  for (simdnorm_kind kind : BackwardKinds()) {
    for (size_t cols : {17, 896}) {
      for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
        Grad p = MakeGrad(kind, 5, cols, Family::kTypical, t, t, t,
                          SIMDNORM_F32, true, 3);
        ExpectMatchesReference(p, Name(p, " strided"));
        p.in_place = true;
        ExpectMatchesReference(p, Name(p, " in place, strided"));
        Grad q = MakeGrad(kind, 5, cols, Family::kTypical, t, t, t,
                          SIMDNORM_BF16, true);
        q.in_place = true;
        q.dgamma.clear();
        q.dbeta.clear();
        ExpectMatchesReference(q, Name(q, " in place, no sums"));
      }
    }
  }
}

// (b) The Jacobian identities, J^T v computed by the backward without
// weights. Each "dx = 0" holds within the bound of the kernels (kDxBound
// 2^-23 M) or of the reference (2^-40 M: its double sums, n <= 2^13 terms
// of relative error 2^-53 each, with room), plus 2^-24 M where dy is xhat
// rounded to fp32 (J^T of that rounding, |delta| <= 2^-24 |xhat|, is at
// most 2^-24 M by the same terms).
enum class Run { kReference, kKernels };

// dx of dy = `dy` (one value per element) for x from the family.
Operand DxFor(Grad& p, const std::vector<double>& dy, Run run) {
  for (size_t r = 0; r < p.rows; ++r)
    for (size_t j = 0; j < p.cols; ++j) p.dy.Set(r, j, dy[r * p.cols + j]);
  simdnorm_backward_desc d = p.Desc();
  EXPECT_EQ(run == Run::kReference ? simdnorm_backward_reference(&d)
                                   : simdnorm_backward(&d),
            SIMDNORM_OK);
  return p.dx;
}

// The reference is not shift-invariant beyond double: its mean is within
// 2^-53 |mean| of the truth, which moves every xhat of a centered row by up
// to 2^-53 max|x| / std: its bound is 2^-40 kappa M, kappa = 1 + max|x| /
// std for centered kinds (1 otherwise). The kernels shift by x[0] (no
// kappa). Both write fp32 dx: 2^-24 |want| more.
double Kappa(const Grad& p, size_t r) {
  if (!Centered(p.kind)) return 1.0;
  double mean = 0.0, var = 0.0, largest = 0.0;
  for (size_t j = 0; j < p.cols; ++j) mean += p.x.Get(r, j);
  mean /= static_cast<double>(p.cols);
  for (size_t j = 0; j < p.cols; ++j) {
    var += (p.x.Get(r, j) - mean) * (p.x.Get(r, j) - mean);
    largest = std::max(largest, std::fabs(p.x.Get(r, j)));
  }
  return 1.0 + largest / std::sqrt(var / static_cast<double>(p.cols));
}

void ExpectIdentity(Grad p, const std::vector<double>& dy,
                    const std::vector<double>& want, double extra_ulps, Run run,
                    const std::string& what) {
  const Operand dx = DxFor(p, dy, run);
  const Scales sc = ScalesOf(p);  // with p.dy = dy
  for (size_t i = 0; i < p.rows * p.cols; ++i) {
    const size_t r = i / p.cols, j = i % p.cols;
    const double bound =
        (run == Run::kKernels ? kDxBound * kUlp : 0x1p-40 * Kappa(p, r)) +
        extra_ulps;
    ASSERT_LE(std::fabs(dx.Get(r, j) - want[i]),
              bound * sc.m[i] + 0x1p-24 * std::fabs(want[i]))
        << what << " row " << r << " col " << j << " want " << want[i];
  }
}

// Identities of every kind, on the reference and on the kernels.
void JacobianIdentities(Run run) {
  const char* who = run == Run::kReference ? "reference " : "kernels ";
  for (size_t cols : {3, 64, 896, 1001}) {
    for (Family f : {Family::kTypical, Family::kLargeMean}) {
      for (float eps : {0.0f, 0.5f}) {
        Grad p = MakeGrad(SIMDNORM_LAYERNORM, 3, cols, f, SIMDNORM_F32,
                          SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, false);
        p.eps = eps;
        const std::vector<double> xhat = Xhat(p);
        const std::string what = who + std::string("cols ") +
                                 std::to_string(cols) + " " + FamilyName(f) +
                                 " eps " + std::to_string(eps);
        const size_t size = p.rows * cols;
        // LayerNorm: dy = 1 gives 0 (J^T 1 = r (1 - 1 - xhat mean(xhat)))
        // for any eps; dy = xhat gives xhat r eps / (var + eps).
        ExpectIdentity(p, std::vector<double>(size, 1.0),
                       std::vector<double>(size, 0.0), 0.0, run,
                       "LayerNorm dy = 1 " + what);
        std::vector<double> want(size);
        for (size_t r = 0; r < p.rows; ++r) {
          double mean = 0.0, var = 0.0;
          for (size_t j = 0; j < cols; ++j) mean += p.x.Get(r, j);
          mean /= cols;
          for (size_t j = 0; j < cols; ++j)
            var += (p.x.Get(r, j) - mean) * (p.x.Get(r, j) - mean);
          var /= cols;
          const double factor = eps / (var + eps) / std::sqrt(var + eps);
          for (size_t j = 0; j < cols; ++j)
            want[r * cols + j] = xhat[r * cols + j] * factor;
        }
        ExpectIdentity(p, xhat, want, 0x1p-24, run,
                       "LayerNorm dy = xhat " + what);
      }
      // RMSNorm, eps 0: dy = xhat gives 0; dy = 1 does not.
      Grad p = MakeGrad(SIMDNORM_RMSNORM, 3, cols, f, SIMDNORM_F32,
                        SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, false);
      p.eps = 0.0f;
      const std::vector<double> xhat = Xhat(p);
      const size_t size = p.rows * cols;
      const std::string what = who + std::string("cols ") +
                               std::to_string(cols) + " " + FamilyName(f);
      ExpectIdentity(p, xhat, std::vector<double>(size, 0.0), 0x1p-24, run,
                     "RMSNorm dy = xhat " + what);
      if (f == Family::kTypical) {  // xhat ~ 1 everywhere on kLargeMean
        const Operand dx = DxFor(p, std::vector<double>(size, 1.0), run);
        double largest = 0.0;
        for (size_t j = 0; j < cols; ++j)
          largest = std::max(largest, std::fabs(dx.Get(0, j)));
        EXPECT_GT(largest, 1e-3) << "RMSNorm dy = 1 " << what;
      }
      // L2: dy = x gives 0 where ||x|| > eps; below eps dx = x / eps.
      for (float eps : {1e-12f, 1e6f}) {
        Grad q = MakeGrad(SIMDNORM_L2NORM, 3, cols, f, SIMDNORM_F32,
                          SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, false);
        q.eps = eps;
        std::vector<double> x(size), w(size, 0.0);
        for (size_t i = 0; i < size; ++i) {
          x[i] = q.x.Get(i / cols, i % cols);
          if (eps > 1.0f) w[i] = x[i] / eps;  // norms here are below 1e6
        }
        ExpectIdentity(q, x, w, 0.0, run,
                       "L2 dy = x eps " + std::to_string(eps) + " " + what);
      }
    }
  }
}

TEST(BackwardReference, JacobianIdentities) {
  JacobianIdentities(Run::kReference);
}

TEST_P(BackwardTest, JacobianIdentities) { JacobianIdentities(Run::kKernels); }

// (c) Central differences of the float64 forward reference against the
// reference backward, for L = sum(dy * y) over all rows: x, gamma and beta
// are multiples of 2^-8 below 8 in magnitude, so that v +- h and v +- h/2
// (h = 2^-10) are exact floats. D(h) = dL/dx + C h^2 + O(h^4): D(h/2) is
// within |D(h) - D(h/2)| / 3 of the derivative (plus O(h^4)); the
// tolerance takes |D(h) - D(h/2)|, and for the rounding of L (relative
// 2^-45 at most over these few terms) 2 * 2^-45 sum|dy y| / h.
double LossOf(Grad& p, const std::vector<float>& beta,
              double* abs_sum = nullptr) {
  simdnorm_desc d{};
  d.kind = p.kind;
  d.rows = p.rows;
  d.cols = p.cols;
  d.x = p.x.Data();
  std::vector<float> y(p.rows * p.cols);
  d.y = y.data();
  d.gamma = p.gamma.Data();
  d.beta = beta.data();
  d.eps = p.eps;
  d.gamma_offset = p.gamma_offset;
  std::vector<double> out(p.rows * p.cols);
  EXPECT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  double loss = 0.0, abs_loss = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    loss += p.dy.Get(i / p.cols, i % p.cols) * out[i];
    abs_loss += std::fabs(p.dy.Get(i / p.cols, i % p.cols) * out[i]);
  }
  if (abs_sum) *abs_sum = abs_loss;
  return loss;
}

TEST(BackwardReference, FiniteDifferences) {
  Rng rng(18);
  for (simdnorm_kind kind : BackwardKinds()) {
    for (size_t cols : {1, 3, 7, 16}) {
      for (float eps : {0.01f, 100.0f}) {  // no |x| within h of eps
        Grad p = MakeGrad(kind, 3, cols, Family::kTypical, SIMDNORM_F32,
                          SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, true);
        p.eps = eps;
        p.gamma_offset = cols == 7 ? 1.0f : 0.0f;
        std::vector<float> beta(cols);
        for (size_t r = 0; r < p.rows; ++r)
          for (size_t j = 0; j < cols; ++j)
            p.x.Set(r, j, std::round(rng.Normal() * 256.0) / 256.0);
        for (size_t j = 0; j < cols; ++j) {
          p.gamma.Set(
              0, j,
              std::round((1.0 + 0.5 * (rng.Uniform() - 0.5)) * 256.0) / 256.0);
          beta[j] = static_cast<float>(std::round(rng.Normal() * 256) / 256);
        }
        simdnorm_backward_desc d = p.Desc();
        ASSERT_EQ(simdnorm_backward_reference(&d), SIMDNORM_OK);
        double scale;
        LossOf(p, beta, &scale);
        scale *= 2;  // room for the perturbed problems' sums
        const std::string what = std::string(KindName(kind)) + " cols " +
                                 std::to_string(cols) + " eps " +
                                 std::to_string(eps);
        // dL/dv by central differences, v an exact float of the problem.
        const auto derivative = [&](float* v, double want,
                                    const std::string& which) {
          const float v0 = *v;
          double fd[2];
          for (int k = 0; k < 2; ++k) {
            const double h = k == 0 ? 0x1p-10 : 0x1p-11;
            *v = static_cast<float>(v0 + h);
            const double up = LossOf(p, beta);
            *v = static_cast<float>(v0 - h);
            const double down = LossOf(p, beta);
            fd[k] = (up - down) / (2 * h);
          }
          *v = v0;
          // want is the reference's fp32 output: 2^-24 relative more.
          const double tol = std::fabs(fd[0] - fd[1]) +
                             2 * 0x1p-45 * scale / 0x1p-10 +
                             0x1p-24 * std::fabs(want);
          EXPECT_NEAR(want, fd[1], tol) << what << " " << which;
        };
        for (size_t r = 0; r < p.rows; ++r) {
          for (size_t j = 0; j < cols; ++j) {
            derivative(
                reinterpret_cast<float*>(p.x.At(r, j)), p.dx.Get(r, j),
                "dx row " + std::to_string(r) + " col " + std::to_string(j));
          }
        }
        for (size_t j = 0; j < cols; ++j) {
          derivative(reinterpret_cast<float*>(p.gamma.At(0, j)), p.dgamma[j],
                     "dgamma col " + std::to_string(j));
          derivative(&beta[j], p.dbeta[j], "dbeta col " + std::to_string(j));
        }
      }
    }
  }
}

// (d) dgamma, dbeta and dx bitwise the same for 1, 2, 3 and the default
// number of threads: 257 rows (9 blocks, the last partial) of 1001.
TEST(BackwardThreadsTest, SumsDoNotDependOnThreads) {
  for (simdnorm_kind kind : BackwardKinds()) {
    for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
      Grad first;
      for (size_t threads : {1, 2, 3, 0}) {
        Grad p = MakeGrad(kind, 257, 1001, Family::kTypical, t, t, t,
                          SIMDNORM_F32, true);
        p.max_threads = threads;
        simdnorm_backward_desc d = p.Desc();
        ASSERT_EQ(simdnorm_backward(&d), SIMDNORM_OK);
        if (threads == 1) {
          first = p;
          continue;
        }
        EXPECT_EQ(0, std::memcmp(p.dgamma.data(), first.dgamma.data(),
                                 p.cols * sizeof(float)))
            << KindName(kind) << " threads " << threads;
        EXPECT_EQ(0, std::memcmp(p.dbeta.data(), first.dbeta.data(),
                                 p.cols * sizeof(float)))
            << KindName(kind) << " threads " << threads;
        EXPECT_EQ(p.dx.storage, first.dx.storage)
            << KindName(kind) << " threads " << threads;
      }
    }
  }
}

// (e) A NaN in x or dy makes that row's dx NaN; other rows are the bits
// of the same call without it; dbeta is untouched by x's NaN.
TEST_P(BackwardTest, NaNRows) {
  for (simdnorm_kind kind : BackwardKinds()) {
    for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
      Grad clean =
          MakeGrad(kind, 6, 67, Family::kTypical, t, t, t, SIMDNORM_F32, true);
      Grad bad = clean;
      bad.x.Set(1, 5, NAN);
      bad.dy.Set(4, 66, NAN);
      simdnorm_backward_desc dc = clean.Desc(), db = bad.Desc();
      ASSERT_EQ(simdnorm_backward(&dc), SIMDNORM_OK);
      ASSERT_EQ(simdnorm_backward(&db), SIMDNORM_OK);
      for (size_t r = 0; r < clean.rows; ++r) {
        for (size_t j = 0; j < clean.cols; ++j) {
          if (r == 1 || r == 4) {
            EXPECT_TRUE(std::isnan(bad.dx.Get(r, j))) << r << " " << j;
          } else {
            EXPECT_EQ(bad.dx.Bits(r, j), clean.dx.Bits(r, j)) << r << " " << j;
          }
        }
      }
      for (size_t j = 0; j < clean.cols; ++j) {
        EXPECT_TRUE(std::isnan(bad.dgamma[j])) << j;  // row 1's xhat is NaN
        EXPECT_EQ(std::isnan(bad.dbeta[j]), j == 66) << j;
      }
    }
  }
}

// (f) Bad descriptors: the status, and nothing written (outputs keep a
// sentinel).
TEST(BackwardStatus, BadDescriptorsWriteNothing) {
  struct Bad {
    const char* what;
    simdnorm_status want;
    void (*edit)(simdnorm_backward_desc& d, Grad& p);
  };
  const Bad cases[] = {
      {"kind", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) {
         d.kind = static_cast<simdnorm_kind>(99);
       }},
      {"dx_type", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) {
         d.dx_type = static_cast<simdnorm_dtype>(7);
       }},
      {"I8 dy", SIMDNORM_UNSUPPORTED,
       [](simdnorm_backward_desc& d, Grad&) { d.dy_type = SIMDNORM_I8; }},
      {"I8 param", SIMDNORM_UNSUPPORTED,
       [](simdnorm_backward_desc& d, Grad&) { d.param_type = SIMDNORM_I8; }},
      {"eps < 0", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.eps = -1.0f; }},
      {"eps NaN", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.eps = NAN; }},
      {"gamma_offset inf", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.gamma_offset = INFINITY; }},
      {"flags", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.flags = 1; }},
      {"both store flags", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) {
         d.flags = SIMDNORM_Y_STREAM | SIMDNORM_Y_CACHED;
       }},
      {"x NULL", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.x = nullptr; }},
      {"dy NULL", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.dy = nullptr; }},
      {"dx NULL", SIMDNORM_INVALID_ARGUMENT,
       [](simdnorm_backward_desc& d, Grad&) { d.dx = nullptr; }},
      {"cols 0", SIMDNORM_INVALID_SHAPE,
       [](simdnorm_backward_desc& d, Grad&) { d.cols = 0; }},
      {"x_stride < cols", SIMDNORM_INVALID_SHAPE,
       [](simdnorm_backward_desc& d, Grad&) { d.x_stride = d.cols - 1; }},
      {"dx_stride < cols", SIMDNORM_INVALID_SHAPE,
       [](simdnorm_backward_desc& d, Grad&) { d.dx_stride = 1; }},
      {"size overflow", SIMDNORM_INVALID_SHAPE,
       [](simdnorm_backward_desc& d, Grad&) { d.rows = SIZE_MAX / 2; }},
      {"dx over x", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) { d.dx = p.x.At(1, 0); }},
      {"dx over dy, shifted", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) { d.dx = p.dy.At(0, 1); }},
      {"dx = dy, other stride", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) {
         d.dx = p.dy.Data();
         d.dx_stride = d.cols + 1;
         d.rows = 2;
       }},
      {"dx = dy, other size", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) {
         d.dx = p.dy.Data();
         d.dx_type = SIMDNORM_BF16;
       }},
      {"dx over gamma", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) { d.gamma = p.dx.At(1, 2); }},
      {"dgamma over dbeta", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) { d.dbeta = &p.dgamma[1]; }},
      {"dgamma over x", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) {
         d.dgamma = reinterpret_cast<float*>(p.x.At(2, 0));
       }},
      {"dbeta over dx", SIMDNORM_OVERLAP,
       [](simdnorm_backward_desc& d, Grad& p) {
         d.dbeta = reinterpret_cast<float*>(p.dx.At(1, 0));
       }},
  };
  for (const Bad& c : cases) {
    for (int reference = 0; reference < 2; ++reference) {
      Grad p =
          MakeGrad(SIMDNORM_LAYERNORM, 4, 33, Family::kTypical, SIMDNORM_F32,
                   SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, true);
      p.dx.storage.assign(p.dx.storage.size(), 7.0f);
      const Grad before = p;
      simdnorm_backward_desc d = p.Desc();
      c.edit(d, p);
      const simdnorm_status s =
          reference ? simdnorm_backward_reference(&d) : simdnorm_backward(&d);
      EXPECT_EQ(s, c.want) << c.what << (reference ? " (reference)" : "");
      EXPECT_EQ(p.dx.storage, before.dx.storage) << c.what;
      EXPECT_EQ(p.dy.storage, before.dy.storage) << c.what;
      EXPECT_EQ(p.x.storage, before.x.storage) << c.what;
      EXPECT_EQ(p.dgamma, before.dgamma) << c.what;
      EXPECT_EQ(p.dbeta, before.dbeta) << c.what;
    }
  }
  EXPECT_EQ(simdnorm_backward(nullptr), SIMDNORM_INVALID_ARGUMENT);
  // Descriptor sizes: too small; larger with a non-zero unknown byte.
  Grad p = MakeGrad(SIMDNORM_RMSNORM, 2, 5, Family::kTypical, SIMDNORM_F32,
                    SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, false);
  struct {
    simdnorm_backward_desc d;
    unsigned char more[8];
  } big{};
  big.d = p.Desc();
  EXPECT_EQ(
      simdnorm_backward_sized(&big.d, SIMDNORM_BACKWARD_DESC_MIN_SIZE - 1),
      SIMDNORM_INVALID_ARGUMENT);
  EXPECT_EQ(simdnorm_backward_sized(&big.d, sizeof(big)), SIMDNORM_OK);
  big.more[3] = 1;
  EXPECT_EQ(simdnorm_backward_sized(&big.d, sizeof(big)), SIMDNORM_UNSUPPORTED);
  // rows = 0: the sums over no rows are zeros; x, dy, dx may be NULL.
  simdnorm_backward_desc d = p.Desc();
  d.rows = 0;
  d.x = d.dy = nullptr;
  d.dx = nullptr;
  EXPECT_EQ(simdnorm_backward(&d), SIMDNORM_OK);
  EXPECT_EQ(p.dgamma, std::vector<float>(5, 0.0f));
  EXPECT_EQ(p.dbeta, std::vector<float>(5, 0.0f));
}

// (g) The forward's saved statistics (simdnorm_desc's mean_out and
// rstd_out) and the backward that reuses them.

// The forward of p's x (kernels or reference) with its saved statistics
// stored in p.mean and p.rstd; y of y_type (16-bit: the correctly rounded
// path) is returned.
std::vector<float> ForwardSaving(Grad& p, simdnorm_dtype y_type,
                                 bool reference = false) {
  std::vector<float> y(p.rows * p.cols);
  p.mean.assign(p.rows, -1.0f);
  p.rstd.assign(p.rows, -1.0f);
  simdnorm_desc d = ForwardDesc(p, y.data(), y_type);
  d.mean_out = p.mean.data();
  d.rstd_out = p.rstd.data();
  EXPECT_EQ(
      reference ? simdnorm_normalize_reference(&d) : simdnorm_normalize(&d),
      SIMDNORM_OK);
  return y;
}

// The saved statistics against the float64 reference's (simdnorm.h: within
// 2^-16 relative; the mean within 2^-23 |mean| + 2^-16 / rstd), and the
// backward from them against the backward's reference (which recomputes):
// the same bound as without them. Rows whose fp32 mean is far from exact
// against their deviation (1e4 + N(0, 1) / 100) need the correction c.
TEST_P(BackwardTest, SavedStatistics) {
  double worst_mean = 0.0, worst_rstd = 0.0;
  int v = 0;
  for (simdnorm_kind kind : {SIMDNORM_LAYERNORM, SIMDNORM_RMSNORM}) {
    for (Family f : {Family::kTypical, Family::kLargeMean, Family::kHuge,
                     Family::kTiny, Family::kOutliers, Family::kLlm}) {
      for (size_t cols : {17, 1001}) {
        for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
          ++v;
          Grad p = MakeGrad(kind, 4, cols, f, t, t, SIMDNORM_F32, SIMDNORM_F32,
                            v % 2 == 0);
          p.eps = v % 3 == 0 ? 0.0f : 1e-5f;
          Grad want = p;
          ForwardSaving(want, SIMDNORM_F32, /*reference=*/true);
          // (bf16 rows of 1e4 + N(0, 1) / 100 are constant: with eps 0 the
          // truth is 0 / 0.)
          if (!std::isfinite(want.rstd[0])) continue;
          ForwardSaving(p, v % 4 < 2 ? SIMDNORM_F32 : SIMDNORM_BF16);
          const std::string what =
              Name(p, (std::string(" saved, ") + FamilyName(f)).c_str());
          for (size_t r = 0; r < p.rows; ++r) {
            const double wm = want.mean[r], wr = want.rstd[r];
            const double em = std::fabs(p.mean[r] - wm) /
                              (0x1p-23 * std::fabs(wm) + 0x1p-16 / wr);
            const double er = std::fabs(p.rstd[r] - wr) / (0x1p-16 * wr);
            worst_mean = std::max(worst_mean, em);
            worst_rstd = std::max(worst_rstd, er);
            EXPECT_LE(em, 1.0) << what << " mean row " << r << ": " << p.mean[r]
                               << " want " << wm;
            EXPECT_LE(er, 1.0) << what << " rstd row " << r << ": " << p.rstd[r]
                               << " want " << wr;
          }
          ExpectMatchesReference(p, what);
        }
      }
    }
  }
  std::printf(
      "%s: saved mean within %.3g and rstd within %.3g of their "
      "bounds\n",
      simdnorm_active_isa(), worst_mean, worst_rstd);
  ReportWorst();
}

// Asking for the statistics changes no output bit (y, for every path:
// pairs of rows, an odd last row, a residual, correctly rounded 16-bit y),
// they do not depend on the threads, and a NaN row's are NaN, which the
// backward then recomputes (NaN dx in that row only).
TEST_P(BackwardTest, SavedStatisticsChangeNoOutput) {
  for (simdnorm_kind kind : AllKinds()) {
    for (simdnorm_dtype yt : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (int residual = 0; residual < 2; ++residual) {
        Grad p = MakeGrad(kind, 67, 96, Family::kTypical, SIMDNORM_BF16,
                          SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32, true);
        p.x.Set(5, 7, NAN);
        std::vector<uint16_t> y_plain(p.rows * p.cols), y_saved(y_plain);
        std::vector<float> mean(p.rows), rstd(p.rows), mean1(p.rows),
            rstd1(p.rows);
        simdnorm_desc d{};
        d.kind = kind;
        d.rows = p.rows;
        d.cols = p.cols;
        d.x = p.x.Data();
        d.x_type = p.x.t;
        d.residual = residual ? p.dy.Data() : nullptr;
        d.y_type = yt;
        d.eps = 1e-5f;
        std::vector<float> yf_plain(p.rows * p.cols), yf_saved(yf_plain);
        d.y = yt == SIMDNORM_F32 ? static_cast<void*>(yf_plain.data())
                                 : y_plain.data();
        ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        d.y = yt == SIMDNORM_F32 ? static_cast<void*>(yf_saved.data())
                                 : y_saved.data();
        d.mean_out = mean.data();
        d.rstd_out = rstd.data();
        ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        const std::string what = std::string(simdnorm_active_isa()) + " " +
                                 KindName(kind) + " y " + DTypeName(yt) +
                                 (residual ? " residual" : "");
        EXPECT_EQ(y_plain, y_saved) << what;
        EXPECT_EQ(0, std::memcmp(yf_plain.data(), yf_saved.data(),
                                 yf_plain.size() * 4))
            << what;
        d.max_threads = 1;
        d.mean_out = mean1.data();
        d.rstd_out = rstd1.data();
        ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        EXPECT_EQ(0, std::memcmp(mean.data(), mean1.data(), p.rows * 4))
            << what;
        EXPECT_EQ(0, std::memcmp(rstd.data(), rstd1.data(), p.rows * 4))
            << what;
        EXPECT_TRUE(std::isnan(rstd[5])) << what;
        EXPECT_EQ(std::isnan(mean[5]), Centered(kind)) << what;
        for (size_t r = 0; r < p.rows; ++r) {
          if (r == 5) continue;
          EXPECT_TRUE(std::isfinite(mean[r]) && rstd[r] > 0) << what << r;
        }
        if (kind == SIMDNORM_L2NORM || residual) continue;
        p.mean = mean;
        p.rstd = rstd;
        simdnorm_backward_desc b = p.Desc();
        ASSERT_EQ(simdnorm_backward(&b), SIMDNORM_OK) << what;
        for (size_t r = 0; r < p.rows; ++r) {
          for (size_t j = 0; j < p.cols; j += 19) {
            EXPECT_EQ(std::isnan(p.dx.Get(r, j)), r == 5) << what << r;
          }
        }
      }
    }
  }
}

// Saved statistics in bad descriptors: the status, nothing written.
TEST(BackwardStatus, SavedStatisticsChecked) {
  Grad p = MakeGrad(SIMDNORM_LAYERNORM, 4, 33, Family::kTypical, SIMDNORM_F32,
                    SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, true);
  ForwardSaving(p, SIMDNORM_F32);
  p.dx.storage.assign(p.dx.storage.size(), 7.0f);
  const Grad before = p;
  const auto expect = [&](simdnorm_backward_desc d, simdnorm_status want,
                          const char* what) {
    EXPECT_EQ(simdnorm_backward(&d), want) << what;
    EXPECT_EQ(simdnorm_backward_reference(&d), want) << what;
    EXPECT_EQ(p.dx.storage, before.dx.storage) << what;
    EXPECT_EQ(p.dgamma, before.dgamma) << what;
    EXPECT_EQ(p.mean, before.mean) << what;
  };
  simdnorm_backward_desc d = p.Desc();
  d.rstd = nullptr;
  expect(d, SIMDNORM_INVALID_ARGUMENT, "LayerNorm with the mean only");
  d = p.Desc();
  d.kind = SIMDNORM_L2NORM;
  expect(d, SIMDNORM_UNSUPPORTED, "L2 with saved statistics");
  d = p.Desc();
  d.rstd = reinterpret_cast<const float*>(p.dx.At(1, 0));
  expect(d, SIMDNORM_OVERLAP, "dx over rstd");
  d = p.Desc();
  d.dgamma = p.mean.data();
  expect(d, SIMDNORM_OVERLAP, "dgamma over mean");
  // RMSNorm reads rstd only: a mean (even overlapping dx) is not looked at.
  d = p.Desc();
  d.kind = SIMDNORM_RMSNORM;
  d.mean = reinterpret_cast<const float*>(p.dx.Data());
  EXPECT_EQ(simdnorm_backward(&d), SIMDNORM_OK);

  // The forward's: each against y, x and the other.
  std::vector<float> y(4 * 33, 5.0f), mean(4, 5.0f), rstd(4, 5.0f);
  simdnorm_desc f{};
  f.rows = 4;
  f.cols = 33;
  f.x = p.x.Data();
  f.y = y.data();
  f.eps = 1e-5f;
  const auto expect_forward = [&](simdnorm_desc e, const char* what) {
    EXPECT_EQ(simdnorm_normalize(&e), SIMDNORM_OVERLAP) << what;
    EXPECT_EQ(simdnorm_normalize_reference(&e), SIMDNORM_OVERLAP) << what;
    EXPECT_EQ(y, std::vector<float>(4 * 33, 5.0f)) << what;
    EXPECT_EQ(mean, std::vector<float>(4, 5.0f)) << what;
  };
  f.mean_out = &y[40];
  expect_forward(f, "mean_out over y");
  f.mean_out = mean.data();
  f.rstd_out = reinterpret_cast<float*>(p.x.At(0, 3));
  expect_forward(f, "rstd_out over x");
  f.rstd_out = &mean[2];
  expect_forward(f, "rstd_out over mean_out");
}

// The registry says which kinds have a backward; the C++ wrappers are the
// C call.
// The store policies (flags SIMDNORM_Y_CACHED, 0, SIMDNORM_Y_STREAM: a
// call this small keeps cached stores by default; streamed, pass 3 asks
// for the next row and writes f32 dx by non-temporal stores from its first
// vector boundary on) write the same bytes: dx (with the stride's gaps
// untouched), dgamma and dbeta. Rows of 901 floats 3 apart in stride put
// the rows' starts at every 4-byte offset from a vector boundary; a NaN
// row, a row of tiny values (r beyond 2^100: dx's p2 != 1), in place,
// saved statistics, one thread and the default.
TEST_P(BackwardTest, StorePoliciesWriteTheSameBits) {
  struct Shape {
    size_t cols, extra;
  };
  for (simdnorm_kind kind : BackwardKinds()) {
    for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
      for (const Shape s : {Shape{896, 0}, Shape{901, 3}, Shape{17, 1}}) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool in_place = variant & 1, saved = variant & 2;
          if (saved && kind == SIMDNORM_L2NORM) continue;
          Grad p = MakeGrad(kind, 37, s.cols, Family::kTypical, t, t, t,
                            SIMDNORM_F32, true, s.extra);
          for (size_t j = 0; j < s.cols; ++j) {
            p.x.Set(6, j, p.x.Get(6, j) * 1e-35);
          }
          if (saved) ForwardSaving(p, SIMDNORM_F32);
          p.x.Set(3, 2, NAN);
          p.in_place = in_place;
          p.max_threads = variant == 3 ? 0 : 1;
          const std::string what =
              Name(p, (" stride +" + std::to_string(s.extra) +
                       (in_place ? " in place" : "") + (saved ? " saved" : ""))
                          .c_str());
          Grad want = p;
          want.flags = SIMDNORM_Y_CACHED;
          simdnorm_backward_desc d = want.Desc();
          ASSERT_EQ(simdnorm_backward(&d), SIMDNORM_OK) << what;
          for (unsigned flags : {0u, unsigned{SIMDNORM_Y_STREAM}}) {
            Grad got = p;
            got.flags = flags;
            d = got.Desc();
            ASSERT_EQ(simdnorm_backward(&d), SIMDNORM_OK) << what;
            EXPECT_EQ(got.Out().storage.size(), want.Out().storage.size());
            EXPECT_EQ(0, std::memcmp(got.Out().storage.data(),
                                     want.Out().storage.data(),
                                     want.Out().storage.size() * 4))
                << what << " flags " << flags;
            EXPECT_EQ(0, std::memcmp(got.dgamma.data(), want.dgamma.data(),
                                     s.cols * 4))
                << what << " flags " << flags;
            EXPECT_EQ(
                0, std::memcmp(got.dbeta.data(), want.dbeta.data(), s.cols * 4))
                << what << " flags " << flags;
          }
        }
      }
    }
  }
}

TEST(BackwardRegistry, EveryKindHasOne) {
  EXPECT_EQ(BackwardKinds().size(), AllKinds().size());
  EXPECT_GE(SIMDNORM_VERSION, 400);
}

TEST(BackwardCpp, WrappersAreTheCCall) {
  Grad p = MakeGrad(SIMDNORM_RMSNORM, 3, 40, Family::kTypical, SIMDNORM_F32,
                    SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32, true);
  const simdnorm::Rows<const float> x(static_cast<const float*>(p.x.Data()), 3,
                                      40);
  const auto* gamma = static_cast<const float*>(p.gamma.Data());
  std::vector<float> dx(3 * 40), dgamma(40), dbeta(40);
  simdnorm::Options opt;
  opt.eps = p.eps;
  // The wrapper against the C call of p's descriptor.
  const auto expect_same = [&](const char* what) {
    simdnorm_backward_desc d = p.Desc();
    ASSERT_EQ(simdnorm_backward(&d), SIMDNORM_OK) << what;
    ASSERT_EQ(simdnorm::rms_norm_backward(
                  x,
                  simdnorm::Rows<const simdnorm::bf16>(
                      static_cast<const simdnorm::bf16*>(p.dy.Data()), 3, 40),
                  simdnorm::Rows<float>(dx.data(), 3, 40), gamma, dgamma.data(),
                  dbeta.data(), opt),
              simdnorm::Status::kOk)
        << what;
    EXPECT_EQ(0, std::memcmp(dx.data(), p.dx.Data(), dx.size() * 4)) << what;
    EXPECT_EQ(dgamma, p.dgamma) << what;
    EXPECT_EQ(dbeta, p.dbeta) << what;
  };
  expect_same("recomputed statistics");
  // Options::stats: written by the forward, read by the backward.
  std::vector<float> y(3 * 40), rstd(3, -1.0f);
  opt.stats.rstd = rstd.data();
  ASSERT_EQ(simdnorm::rms_norm(x, simdnorm::Rows<float>(y.data(), 3, 40), gamma,
                               nullptr, opt),
            simdnorm::Status::kOk);
  EXPECT_GT(rstd[2], 0.0f);
  p.rstd = rstd;
  expect_same("saved statistics");
  EXPECT_EQ(
      simdnorm::rms_norm_backward(simdnorm::Rows<const float>(dx.data(), 3, 40),
                                  simdnorm::Rows<const float>(dx.data(), 2, 40),
                                  simdnorm::Rows<float>(dbeta.data(), 1, 40)),
      simdnorm::Status::kInvalidShape);
}

SIMDNORM_INSTANTIATE_PER_ISA(BackwardTest);

}  // namespace
}  // namespace simdnorm_test
