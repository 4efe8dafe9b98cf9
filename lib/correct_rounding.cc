#include "lib/correct_rounding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "lib/dyadic.h"
#include "lib/ops.h"

namespace simdnorm {
namespace internal {

// Error bounds follow Higham, "Accuracy and Stability of Numerical
// Algorithms" (2nd ed.), ch. 2-4: u = 2^-53 per operation, and any
// summation of m terms is within gamma_m * sum|term| of the exact sum.
namespace {

constexpr double kU = 0x1p-53;

// gamma_m = m u / (1 - m u) <= m u (1 + 2 m u): without a division (this
// runs once per row) where m u <= 2^-20, rounded up.
double Gamma(double m) {
  const double mu = m * kU;  // exact: m is an integer below 2^53
  return mu <= 0x1p-20 ? mu * (1 + 0x1p-18) : mu / (1.0 - mu);
}

bool Centered(const CrRow& row) { return IsCentered(row.kind); }

uint16_t Round16(simdnorm_dtype t, double v) {
  return t == SIMDNORM_BF16 ? RoundToBF16Bits(v) : RoundToF16Bits(v);
}

double Value16(simdnorm_dtype t, uint16_t b) {
  if (t == SIMDNORM_F16) return F16BitsToDouble(b);
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

int InfCode(simdnorm_dtype t) { return t == SIMDNORM_BF16 ? 0x7F80 : 0x7C00; }
uint16_t NaNBits(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? 0x7FC0 : 0x7E00;
}

// 16-bit codes in the order of their values (both zeros are 0).
int Ord(uint16_t b) {
  const int m = b & 0x7FFF;
  return (b & 0x8000) ? -m : m;
}
uint16_t FromOrd(int o) {
  return static_cast<uint16_t>(o >= 0 ? o : (0x8000 | -o));
}

// The rounding boundary between codes o and o + 1: their midpoint, or the
// overflow threshold next to infinity (max + half an ulp).
double Midpoint(simdnorm_dtype t, int o) {
  const double threshold = t == SIMDNORM_BF16 ? 0x1.FFp127 : 65520.0;
  if (o + 1 == InfCode(t)) return threshold;
  if (o == -InfCode(t)) return -threshold;
  return (Value16(t, FromOrd(o)) + Value16(t, FromOrd(o + 1))) / 2;  // exact
}

// The outcome of rounding a value known to lie in [y - e, y + e]: decided
// when both ends round alike and zero is not inside (the sign of a zero
// result needs the exact value); else the range of codes to search.
struct Bracket {
  bool done;
  uint16_t bits;
  int lo, hi;
};

// The common case, without Round16's scaling: the rounding boundary of
// y's 16-bit cell just above |y|'s truncation, a double of |y|'s binade,
// is farther from |y| than e (|y| - mid is exact: Sterbenz); the other
// boundaries are a quarter spacing away at least (e < spacing / 8). Then
// the truncation, or the next code (a carry may reach the exponent), is
// the rounding, by integer steps on the double's bits.
bool DecideFast(simdnorm_dtype t, double y, double e, uint16_t* bits) {
  const bool bf = t == SIMDNORM_BF16;
  const double a = std::fabs(y);
  if (!(a >= (bf ? 0x1p-126 : 0x1p-14) && a < (bf ? 0x1p127 : 32768.0)) ||
      !(e < a * (bf ? 0x1p-12 : 0x1p-15))) {
    return false;
  }
  // Of double's 52 fraction bits, bf16 keeps 7 and f16 10.
  const int drop = bf ? 45 : 42;
  uint64_t u;
  std::memcpy(&u, &a, sizeof(u));
  const uint64_t mid_bits =
      (u & ~((uint64_t{1} << drop) - 1)) | (uint64_t{1} << (drop - 1));
  double mid;
  std::memcpy(&mid, &mid_bits, sizeof(mid));
  const double dist = a - mid;
  if (!(std::fabs(dist) > e)) return false;
  const uint64_t code = (u >> drop) + (dist > 0 ? 1 : 0);
  // Rebias the exponent from 1023 to 127 (bf16) or 15 (f16).
  const uint64_t rebias =
      bf ? uint64_t{1023 - 127} << 7 : uint64_t{1023 - 15} << 10;
  *bits = static_cast<uint16_t>((y < 0 ? 0x8000 : 0) | (code - rebias));
  return true;
}

Bracket Decide(simdnorm_dtype t, double y, double e) {
  // Room for y's own rounding and for the rounding of y -+ e.
  e = e * (1 + 0x1p-40) + 4 * kU * std::fabs(y) + 0x1p-1060;
  uint16_t fast;
  if (DecideFast(t, y, e, &fast)) return {true, fast, 0, 0};
  const double lo = y - e, hi = y + e;
  const uint16_t bl = Round16(t, lo), bh = Round16(t, hi);
  if (bl == bh && (lo > 0 || hi < 0)) return {true, bl, 0, 0};
  return {false, 0, Ord(bl), Ord(bh)};
}

Bracket Anywhere(simdnorm_dtype t) {
  return {false, 0, -InfCode(t), InfCode(t)};
}

// The code of an exact value v in codes [lo, hi] by bisection on the
// rounding boundaries, sign_of(m) being the sign of v - m; ties to the
// even code. A zero result takes v's sign, or zero_bits() when v is 0.
template <class SignOf, class ZeroBits>
uint16_t ExactRound(simdnorm_dtype t, int lo, int hi, const SignOf& sign_of,
                    const ZeroBits& zero_bits) {
  while (lo < hi) {
    const int o = lo + (hi - lo) / 2;
    const int s = sign_of(Dyadic::FromDouble(Midpoint(t, o)));
    if (s < 0) {
      hi = o;
    } else if (s > 0) {
      lo = o + 1;
    } else {
      lo = (o % 2 == 0) ? o : o + 1;  // the even one of two neighbours
      break;
    }
  }
  if (lo != 0) return FromOrd(lo);
  const int s = sign_of(Dyadic());
  return s > 0 ? 0x0000 : s < 0 ? 0x8000 : zero_bits();
}

// sign(p / sqrt(d) - c) for d > 0, by comparing squares.
int SignOfRatioMinus(const Dyadic& p, const Dyadic& d, const Dyadic& c) {
  const int sp = p.Sign(), sc = c.Sign();
  if (sp >= 0 && sc <= 0) return (sp == 0 && sc == 0) ? 0 : 1;
  if (sp <= 0 && sc >= 0) return -1;
  const int cmp = (p * p).Compare(c * c * d);
  return sp > 0 ? cmp : -cmp;
}

uint16_t SignedZero(double z) { return std::signbit(z) ? 0x8000 : 0x0000; }

}  // namespace

// t * g is exact in double (t of at most 11 significant bits), and
// TwoSum (Knuth, TAOCP vol. 2, 4.2.2) makes y0 + e = t * g + b exactly
// with y0 the double nearest it. Every rounding boundary is a double, so
// y0 rounds as the sum does unless y0 is a boundary itself (an exact tie
// in the common case e = 0, kept by Round16's ties-to-even), where e's
// sign says on which side the sum lies. A zero sum is +0 from two nonzero
// opposite terms, else the IEEE sign of (t * g) + b.
uint16_t RoundProductSum(simdnorm_dtype ty, double t, float g, float b) {
  if (!std::isfinite(g) || !std::isfinite(b)) {
    const double y = t * g + b;
    return std::isnan(y) ? NaNBits(ty) : Round16(ty, y);
  }
  const double p = t * static_cast<double>(g);
  const double y0 = p + b;
  if (y0 == 0) return (t != 0 && g != 0) ? 0x0000 : SignedZero(y0);
  const double bv = y0 - p;
  const double e = (p - (y0 - bv)) + (b - bv);
  const uint16_t r = Round16(ty, y0);
  if (e == 0) return r;
  int o = Ord(r);
  if (y0 == Midpoint(ty, o)) {
    o = e > 0 ? o + 1 : o;
  } else if (y0 == Midpoint(ty, o - 1)) {
    o = e > 0 ? o : o - 1;
  } else {
    return r;
  }
  return o == 0 ? SignedZero(y0) : FromOrd(o);
}

namespace {

// S = sum x and Q = sum x^2 of floats, exactly, by binned summation: x =
// +-m 2^(i - 150), m < 2^24, in bin i (the biased exponent; subnormals in
// bin 1, whose scale they share), and x^2 = m^2 2^(2i - 300) with m^2
// split at 2^24 into two parts. Each bin adds integers, a few integer
// operations a term (adding each term to a DyadicSum took ~12 ns an
// element); the bins are folded into DyadicSums every 2^38 terms (before
// an int64 bin could overflow) and at the end.
class FloatSums {
 public:
  void Add(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof(b));
    const uint32_t f = b >> 23 & 0xFF;
    const int64_t m = (b & 0x7FFFFF) | (f != 0 ? 0x800000 : 0);
    const size_t i = f != 0 ? f : 1;
    s_[i] += (b >> 31) != 0 ? -m : m;
    const uint64_t q = static_cast<uint64_t>(m * m);
    q_hi_[i] += q >> 24;
    q_lo_[i] += q & 0xFFFFFF;
    if (++terms_ == uint64_t{1} << 38) Fold();
  }
  Dyadic S() {
    Fold();
    return s_sum_.Value();
  }
  Dyadic Q() {
    Fold();
    return q_sum_.Value();
  }

 private:
  // v 2^e into sum: v's two 32-bit halves are exact doubles (e stays
  // within double's normal range: -298 to 2^8 above float's largest).
  static void AddScaled(DyadicSum& sum, int64_t v, int e) {
    const uint64_t a = v < 0 ? 0 - static_cast<uint64_t>(v) : v;
    const double sign = v < 0 ? -1.0 : 1.0;
    sum.Add(sign * std::ldexp(static_cast<double>(a >> 32), e + 32));
    sum.Add(sign * std::ldexp(static_cast<double>(a & 0xFFFFFFFF), e));
  }
  void Fold() {
    for (int i = 1; i < 256; ++i) {
      if (s_[i] != 0) AddScaled(s_sum_, s_[i], i - 150);
      if (q_hi_[i] != 0) {
        AddScaled(q_sum_, static_cast<int64_t>(q_hi_[i]), 2 * i - 300 + 24);
      }
      if (q_lo_[i] != 0) {
        AddScaled(q_sum_, static_cast<int64_t>(q_lo_[i]), 2 * i - 300);
      }
      s_[i] = 0;
      q_hi_[i] = q_lo_[i] = 0;
    }
    terms_ = 0;
  }

  int64_t s_[256] = {};
  uint64_t q_hi_[256] = {}, q_lo_[256] = {};
  uint64_t terms_ = 0;
  DyadicSum s_sum_, q_sum_;
};

const ExactSums& Exact(const CrRow& row, CrCache& cache) {
  if (!cache.has_exact && cache.given) {  // GivenMoments' row
    ExactSums* e = new (cache.exact_room) ExactSums();
    e->n = Dyadic::FromDouble(1.0);
    e->s = Dyadic::FromDouble(cache.mean);
    e->q = Dyadic();  // unused: d is given
    e->d = Dyadic::FromDouble(cache.var) + Dyadic::FromDouble(cache.eps);
    cache.has_exact = true;
  }
  if (!cache.has_exact) {
    ExactSums* e = new (cache.exact_room) ExactSums();
    e->n = Dyadic::FromDouble(static_cast<double>(row.n));
    // Run by run, as RowElement indexes them.
    FloatSums sums;
    for (size_t j0 = 0, at = 0; j0 < row.n;
         j0 += row.run, at += row.run_stride) {
      const size_t len = std::min(row.run, row.n - j0);
      for (size_t i = 0; i < len; ++i) {
        sums.Add(LoadAsFloat(row.x, row.x_storage, at + i * row.step));
      }
    }
    e->s = sums.S();
    e->q = sums.Q();
    const Dyadic n_second =
        Centered(row) ? e->n * e->q - e->s * e->s : e->n * e->q;
    e->d = OpOf(row.kind)->exact_n2_d2(e->n, n_second,
                                       Dyadic::FromDouble(row.eps));
    cache.has_exact = true;
  }
  return *std::launder(reinterpret_cast<ExactSums*>(cache.exact_room));
}

// xhat_j = p0 / sqrt(d) exactly: p0 = n (x - center) (n x - S for centered
// kinds, else n x) and d = (n D)^2 from the kind's entry (LayerNorm: n Q -
// S^2 + n^2 eps).
struct ExactXhat {
  Dyadic p0, d;
};

ExactXhat XhatOf(const CrRow& row, const ExactSums& e, double x) {
  const Dyadic nx = e.n * Dyadic::FromDouble(x);
  return {Centered(row) ? nx - e.s : nx, e.d};
}

// The bits of a zero xhat (x equal to the mean: +0; RMSNorm's x = +-0:
// x's sign), rounded to the 16-bit type.
uint16_t XhatZeroBits(const CrRow& row, double x) {
  return Centered(row) ? 0x0000 : SignedZero(x);
}

}  // namespace

namespace {

// xhat_j in double, within err of the exact value (err < 0: no bound).
struct XhatF64 {
  double x, xh, err;
};

XhatF64 XhatInDouble(const CrRow& row, size_t j) {
  const RowStats& st = row.st;
  XhatF64 v{RowElement(row, j), 0.0, -1.0};
  if (st.er < 0.0) return v;
  double e = v.x, ee = 0.0;
  if (Centered(row)) {
    const double d = v.x - st.k;
    e = d - st.c;
    ee = kU * std::fabs(d) * (1 + kU) + st.dc + kU * std::fabs(e);
  }
  v.xh = e * st.r;
  v.err = (kU * std::fabs(v.xh) + (ee + std::fabs(e) * st.er) * st.r) *
          (1 + 2 * st.er + 4 * kU);
  return v;
}

uint16_t RoundedXhatBits(const CrRow& row, const XhatF64& v, CrCache& cache) {
  const simdnorm_dtype tx = row.x_type;
  const Bracket br = v.err >= 0.0 ? Decide(tx, v.xh, v.err) : Anywhere(tx);
  if (br.done) return br.bits;
  const ExactXhat f = XhatOf(row, Exact(row, cache), v.x);
  return ExactRound(
      tx, br.lo, br.hi,
      [&](const Dyadic& m) { return SignOfRatioMinus(f.p0, f.d, m); },
      [&] { return XhatZeroBits(row, v.x); });
}

}  // namespace

double RoundedXhat(const CrRow& row, size_t j, CrCache& cache) {
  return Value16(row.x_type, RoundedXhatBits(row, XhatInDouble(row, j), cache));
}

namespace {

// DecidedInDouble from element j's xhat in double: the common case of
// CorrectlyRoundedBits, whose other cases it leaves alone (false).
bool DecidedFrom(const CrRow& row, const XhatF64& v, float g, float b,
                 uint16_t* bits) {
  if (!std::isfinite(v.x) ||
      (row.round_normalized && row.x_type != SIMDNORM_F32) ||
      !std::isfinite(g) || !std::isfinite(b) || !(v.err >= 0.0)) {
    return false;
  }
  const Bracket br =
      Decide(row.y_type, std::fma(v.xh, g, b), std::fabs(g) * v.err);
  if (!br.done) return false;
  *bits = br.bits;
  return true;
}

}  // namespace

bool DecidedInDouble(const CrRow& row, size_t j, float g, float b,
                     uint16_t* bits) {
  return DecidedFrom(row, XhatInDouble(row, j), g, b, bits);
}

uint16_t CorrectlyRoundedBits(const CrRow& row, size_t j, float g, float b,
                              CrCache& cache) {
  const XhatF64 v = XhatInDouble(row, j);
  uint16_t decided;
  if (DecidedFrom(row, v, g, b, &decided)) return decided;
  const double x = v.x, xh = v.xh, exh = v.err;
  const auto exact_xhat = [&] { return XhatOf(row, Exact(row, cache), x); };
  const simdnorm_dtype ty = row.y_type;
  if (!std::isfinite(x)) {
    // An inf or NaN element of a row whose statistics are finite: only
    // BatchNorm inference's one-element rows (an inf in a row or a group
    // makes its statistics NaN). xhat = (x - m) / D is x's infinity (or
    // NaN), and x * g + b is y exactly, inf or NaN, as the reference's
    // double arithmetic gives it (no dyadic form exists for it).
    const double y = x * g + b;
    return std::isnan(y) ? NaNBits(ty) : Round16(ty, y);
  }

  if (row.round_normalized && row.x_type != SIMDNORM_F32) {
    // Hugging Face's order: xhat rounded to x_type, then t * g + b.
    const double t = Value16(row.x_type, RoundedXhatBits(row, v, cache));
    return RoundProductSum(ty, t, g, b);
  }

  if (!std::isfinite(g) || !std::isfinite(b)) {
    // inf or NaN weights: only xhat's sign (or its zero) matters.
    int sign = 0;
    if (exh >= 0.0 && std::fabs(xh) > exh) {
      sign = xh > 0 ? 1 : -1;
    } else {
      sign = exact_xhat().p0.Sign();
    }
    const double xz =
        sign != 0 ? sign : (Centered(row) ? 0.0 : x);  // x is +-0 there
    const double y = xz * g + b;
    return std::isnan(y) ? NaNBits(ty) : Round16(ty, y);
  }
  Bracket br = Anywhere(ty);
  if (exh >= 0.0) {
    br = Decide(ty, std::fma(xh, g, b), std::fabs(g) * exh);  // not done
  }
  const ExactXhat f = exact_xhat();
  const Dyadic p = f.p0 * Dyadic::FromDouble(g), db = Dyadic::FromDouble(b);
  return ExactRound(
      ty, br.lo, br.hi,
      [&](const Dyadic& m) { return SignOfRatioMinus(p, f.d, m - db); },
      [&] {
        // An exact zero: +0 from two nonzero opposite terms, else the IEEE
        // sign of (+-0) + b.
        const int s = f.p0.Sign();
        if (s != 0 && g != 0) return uint16_t{0x0000};
        const double xz = s != 0 ? s : (Centered(row) ? 0.0 : x);
        return SignedZero(xz * g + b);
      });
}

float CrWeights::G(size_t j) const {
  if (gamma == nullptr) return scale;
  const float g = LoadAsFloat(gamma, type, j);
  return has_offset ? g + offset : g;
}

float CrWeights::B(size_t j) const {
  return beta ? LoadAsFloat(beta, type, j) : -0.0f;
}

namespace {

// y_j = a / sqrt(d) + b exactly (d the row's D of XhatOf), so that sums of
// such values with integer factors compare exactly (SignOfRatioMinus).
struct ExactY {
  Dyadic a, b;
};

ExactY ExactYOf(const CrRow& row, size_t j, float g, float b, CrCache& cache) {
  const Dyadic dg = Dyadic::FromDouble(g), db = Dyadic::FromDouble(b);
  if (row.round_normalized && row.x_type != SIMDNORM_F32) {
    return {Dyadic(), Dyadic::FromDouble(RoundedXhat(row, j, cache)) * dg + db};
  }
  const ExactXhat f = XhatOf(row, Exact(row, cache), RowElement(row, j));
  return {f.p0 * dg, db};
}

Dyadic RowD(const CrRow& row, CrCache& cache) {
  return XhatOf(row, Exact(row, cache), 0.0).d;
}

// sign(s1 y1 - s2 y2 - c) for signs s1, s2 in {-1, 0, 1}.
int SignOfCombination(int s1, const ExactY& y1, int s2, const ExactY& y2,
                      const Dyadic& d, const Dyadic& c) {
  const Dyadic k1 = Dyadic::FromDouble(s1), k2 = Dyadic::FromDouble(s2);
  const Dyadic a = k1 * y1.a - k2 * y2.a, b = k1 * y1.b - k2 * y2.b;
  return SignOfRatioMinus(a, d, c - b);
}

// y_j in double within *e (false: no bound for this row).
bool YInDouble(const CrRow& row, size_t j, float g, float b, CrCache& cache,
               double* y, double* e) {
  if (row.round_normalized && row.x_type != SIMDNORM_F32) {
    *y = std::fma(RoundedXhat(row, j, cache), g, b);
    *e = 4 * kU * std::fabs(*y) + 0x1p-1060;
    return true;
  }
  const XhatF64 v = XhatInDouble(row, j);
  if (v.err < 0.0) return false;
  *y = std::fma(v.xh, g, b);
  *e =
      std::fabs(g) * v.err * (1 + 0x1p-40) + 4 * kU * std::fabs(*y) + 0x1p-1060;
  return true;
}

// The code in [lo, hi] (codes of positive floats, or integers k) of an
// exact value by bisection on the boundaries mid(k) between k and k + 1,
// sign_of(m) = sign(value - m); ties to the even code.
template <class Mid, class SignOf>
int64_t BisectCodes(int64_t lo, int64_t hi, const Mid& mid,
                    const SignOf& sign_of) {
  while (lo < hi) {
    const int64_t k = lo + (hi - lo) / 2;
    const int s = sign_of(Dyadic::FromDouble(mid(k)));
    if (s < 0) {
      hi = k;
    } else if (s > 0) {
      lo = k + 1;
    } else {
      return (k % 2 == 0) ? k : k + 1;
    }
  }
  return lo;
}

double FloatOfCode(int64_t c) {
  const uint32_t u = static_cast<uint32_t>(c);
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

int64_t CodeOfFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// round-half-even(y / scale) clamped, for y in [y0 - e, y0 + e] (e < 0:
// anywhere).
int8_t QuantizeExact(const ExactY& y, const Dyadic& d, double y0, double e,
                     float scale) {
  int64_t lo = -128, hi = 128;
  if (e >= 0.0) {
    const double w = e * (1 + 0x1p-40) + 4 * kU * std::fabs(y0);
    const auto clamped = [](double v) {  // NaN: the whole range
      return std::fmax(-129.0, std::fmin(129.0, v));
    };
    lo = std::max<int64_t>(
        lo, std::llround(clamped(std::floor((y0 - w) / scale))) - 1);
    hi = std::min<int64_t>(
        hi, std::llround(clamped(std::ceil((y0 + w) / scale))) + 1);
    if (lo > hi) lo = hi;
  }
  const Dyadic ds = Dyadic::FromDouble(scale);
  const int64_t k = BisectCodes(
      lo, hi, [](int64_t k) { return static_cast<double>(k) + 0.5; },
      [&](const Dyadic& m) { return SignOfRatioMinus(y.a, d, m * ds - y.b); });
  return static_cast<int8_t>(
      std::min<int64_t>(127, std::max<int64_t>(-127, k)));
}

}  // namespace

bool YWithBound(const CrRow& row, size_t j, float g, float b, CrCache& cache,
                double* y, double* e) {
  return YInDouble(row, j, g, b, cache, y, e);
}

int8_t CorrectlyRoundedQ(const CrRow& row, size_t j, float g, float b,
                         float scale, CrCache& cache) {
  double y0 = 0.0, e = -1.0;
  if (YInDouble(row, j, g, b, cache, &y0, &e)) {
    const double w = e * (1 + 0x1p-40) + 4 * kU * std::fabs(y0);
    const double lo = std::nearbyint((y0 - w) / scale * (1 - 0x1p-50));
    const double hi = std::nearbyint((y0 + w) / scale * (1 + 0x1p-50));
    const double l2 = std::nearbyint((y0 - w) / scale * (1 + 0x1p-50));
    const double h2 = std::nearbyint((y0 + w) / scale * (1 - 0x1p-50));
    if (lo == hi && l2 == lo && h2 == lo) {
      return static_cast<int8_t>(std::fmin(127.0, std::fmax(-127.0, lo)));
    }
  }
  return QuantizeExact(ExactYOf(row, j, g, b, cache), RowD(row, cache), y0, e,
                       scale);
}

void CorrectlyRoundedInt8(const CrRow& row, const CrWeights& w, size_t j0,
                          size_t j1, int8_t* q, float* scale, CrCache& cache) {
  const size_t m = j1 - j0;
  std::fill(q, q + m, int8_t{0});
  *scale = 0.0f;
  // Weights that are not finite make y inf or NaN (xhat * inf, or + inf):
  // the scale is NaN if any y is, else inf, and q = 0.
  bool finite = true;
  for (size_t j = j0; j < j1; ++j) {
    finite = finite && std::isfinite(w.G(j)) && std::isfinite(w.B(j));
  }
  if (!finite) {
    CrRow bf16_row = row;  // y's bf16 rounding tells NaN from inf
    bf16_row.y_type = SIMDNORM_BF16;
    bool nan = false;
    for (size_t j = j0; j < j1; ++j) {
      const uint16_t bits =
          CorrectlyRoundedBits(bf16_row, j, w.G(j), w.B(j), cache);
      nan = nan || (bits & 0x7FFF) > 0x7F80;
    }
    *scale = nan ? NAN : INFINITY;
    return;
  }
  std::vector<double> y(m), e(m);
  bool bounded = true;
  double lower = 0.0, upper = 0.0;
  for (size_t i = 0; i < m; ++i) {
    bounded = bounded && YInDouble(row, j0 + i, w.G(j0 + i), w.B(j0 + i), cache,
                                   &y[i], &e[i]);
    if (!bounded) break;
    lower = std::max(lower, std::fabs(y[i]) - e[i]);
    upper = std::max(upper, std::fabs(y[i]) + e[i]);
  }
  // Exact values and signs, where the double ones do not settle them.
  std::vector<ExactY> ex(m);
  std::vector<int> sign(m, 2);  // 2: not known yet
  const auto exact_y = [&](size_t i) -> const ExactY& {
    if (sign[i] == 2) {
      ex[i] = ExactYOf(row, j0 + i, w.G(j0 + i), w.B(j0 + i), cache);
      sign[i] = SignOfRatioMinus(ex[i].a, RowD(row, cache), Dyadic() - ex[i].b);
    }
    return ex[i];
  };
  // Candidates for the largest |y|.
  std::vector<size_t> cand;
  for (size_t i = 0; i < m; ++i) {
    if (!bounded || std::fabs(y[i]) + e[i] >= lower) cand.push_back(i);
  }
  float sc = 0.0f;
  const double lo = lower / 127 * (1 - 0x1p-50),
               hi = upper / 127 * (1 + 0x1p-50);
  if (bounded && lower > 0.0 &&
      static_cast<float>(lo) == static_cast<float>(hi)) {
    sc = static_cast<float>(lo);
  } else {
    const Dyadic d = RowD(row, cache);
    size_t best = cand[0];
    exact_y(best);
    for (size_t k = 1; k < cand.size(); ++k) {
      const size_t i = cand[k];
      exact_y(i);
      if (SignOfCombination(sign[i], ex[i], sign[best], ex[best], d, Dyadic()) >
          0) {
        best = i;
      }
    }
    if (sign[best] == 0) return;  // every y is 0: scale 0, q 0
    const ExactY& mx = ex[best];
    const int sb = sign[best];
    const Dyadic k127 = Dyadic::FromDouble(127.0);
    const int64_t code = BisectCodes(
        bounded ? CodeOfFloat(static_cast<float>(lo)) : 0,
        bounded ? CodeOfFloat(static_cast<float>(hi)) : 0x7F800000,
        [](int64_t c) {
          return c + 1 == 0x7F800000
                     ? 0x1.FFFFFFp127
                     : (FloatOfCode(c) + FloatOfCode(c + 1)) / 2;
        },
        [&](const Dyadic& mid) {  // sign(max|y| - 127 mid)
          return SignOfCombination(sb, mx, 0, mx, d, k127 * mid);
        });
    sc = static_cast<float>(FloatOfCode(code));
  }
  *scale = sc;
  if (!(sc > 0.0f) || !std::isfinite(sc)) return;  // q = 0
  for (size_t i = 0; i < m; ++i) {
    const size_t j = j0 + i;
    q[i] = CorrectlyRoundedQ(row, j, w.G(j), w.B(j), sc, cache);
  }
}

uint16_t RoundExactValue(simdnorm_dtype t, double y) {
  return std::isnan(y) ? NaNBits(t) : Round16(t, y);
}

void Int8FromExactValues(const double* y, size_t m, int8_t* q, float* scale) {
  std::fill(q, q + m, int8_t{0});
  double mx = 0.0;
  for (size_t i = 0; i < m; ++i) {
    if (std::isnan(y[i])) {
      *scale = NAN;
      return;
    }
    mx = std::max(mx, std::fabs(y[i]));
  }
  *scale = static_cast<float>(mx);
  if (mx == 0.0 || std::isinf(mx)) return;  // 0 or inf, q = 0
  // fl32(mx / 127) and round-half-even(y / scale), exactly.
  const Dyadic dm = Dyadic::FromDouble(mx), k127 = Dyadic::FromDouble(127.0);
  const double guess = mx / 127;
  const int64_t code = BisectCodes(
      CodeOfFloat(static_cast<float>(guess * (1 - 0x1p-40))),
      CodeOfFloat(static_cast<float>(guess * (1 + 0x1p-40))),
      [](int64_t c) {
        return c + 1 == 0x7F800000 ? 0x1.FFFFFFp127
                                   : (FloatOfCode(c) + FloatOfCode(c + 1)) / 2;
      },
      [&](const Dyadic& mid) { return dm.Compare(k127 * mid); });
  const float sc = static_cast<float>(FloatOfCode(code));
  *scale = sc;
  if (!(sc > 0.0f) || !std::isfinite(sc)) return;
  const Dyadic ds = Dyadic::FromDouble(sc);
  for (size_t i = 0; i < m; ++i) {
    const Dyadic dy = Dyadic::FromDouble(y[i]);
    const int64_t k = BisectCodes(
        -128, 128, [](int64_t k) { return static_cast<double>(k) + 0.5; },
        [&](const Dyadic& h) { return dy.Compare(h * ds); });
    q[i] =
        static_cast<int8_t>(std::min<int64_t>(127, std::max<int64_t>(-127, k)));
  }
}

SumModel DoubleSums(size_t n) {
  const double nd = static_cast<double>(n);
  return SumModel{kU, Gamma(nd), Gamma(nd + 1), 0.0};
}

SumModel Fp32Sums(size_t n, int depth, bool flush) {
  // fp32 roundings, then n more in double at most: (1 + g32)(1 + g64) - 1.
  constexpr double u32 = 0x1p-24;
  const double d = static_cast<double>(depth);
  const double mu = d * u32;
  const double g32 = mu * (1 + 2 * mu) * (1 + 0x1p-50);  // >= mu / (1 - mu)
  const double g64 = Gamma(static_cast<double>(n) + 1);
  const double g = g32 + g64 + g32 * g64;
  // Each fp32 FMA whose result is subnormal may lose up to 2^-150 (2^-149
  // here); flushed to zero, up to 2^-126.
  const double floor =
      static_cast<double>(n) * d * (flush ? 0x1p-126 : 0x1p-149);
  return SumModel{u32, g, g, floor};
}

StatsPlan PlanStats(int kind, size_t n, float eps, const SumModel& m) {
  StatsPlan p;
  p.kind = kind;
  p.centered = IsCentered(kind);
  p.scale_form = ScaleFormOf(kind);
  p.nd = static_cast<double>(n);
  p.inv_n = 1.0 / p.nd;  // multiplied in: each such product two roundings
  p.eps = static_cast<double>(eps);
  p.m = m;
  // 1 / (1 - g) <= 1 + 2g for g <= 1/2.
  p.q_up = 1 + 2 * m.gamma_q + 4 * kU;
  p.g_sum = m.gamma_s + m.ud;
  p.g_sq = m.gamma_q + 2.01 * m.ud;
  return p;
}

RowStats StatsFromSums(const StatsPlan& p, double k, double s, double q) {
  const SumModel& m = p.m;
  const double nd = p.nd, inv_n = p.inv_n;
  // Upper bound of the sum of the computed squares (positive terms).
  const double q1 = (q + m.floor_q) * p.q_up;
  RowStats st{};
  // second = sum((x - center)^2) and a bound ds on its error.
  double second, ds;
  if (p.centered) {
    st.k = k;
    // sum |d| / n <= sqrt(sum d^2 / n) (Cauchy-Schwarz).
    const double abs_mean = std::sqrt(q1 * inv_n) * (1 + 4 * kU);
    st.c = s * inv_n;
    // The sum's error, and each d's own rounding (|d - (x - k)| <= ud|d|).
    st.dc = p.g_sum * abs_mean * (1 + 4 * kU) + 3 * kU * std::fabs(st.c);
    const double dq = p.g_sq * q1 + m.floor_q;
    const double mean_sq = q * inv_n;
    const double var = std::max(mean_sq - st.c * st.c, 0.0);
    const double dvar =
        (dq * inv_n + st.dc * (2 * std::fabs(st.c) + st.dc)) * (1 + 12 * kU) +
        6 * kU * (mean_sq + st.c * st.c);
    second = var * nd;
    ds = dvar * nd * (1 + 2 * kU) + kU * second;
  } else {
    // d = x, exact; x^2's rounding is one of the sum's.
    second = q;
    ds = (m.gamma_q * q1 + m.floor_q) * (1 + 2 * kU);
  }
  st.v = second;
  st.dv = ds;
  st.r = OpOf(p.kind)->scale(second, ds, inv_n, p.eps, &st.er);
  return st;
}

bool ShouldRecenter(int kind, const RowStats& st) {
  return ShouldRecenter(IsCentered(kind), st);
}

RowStats RowStatsScalar(int kind, const void* x, simdnorm_dtype t, size_t n,
                        float eps) {
  float k = IsCentered(kind) ? LoadAsFloat(x, t, 0) : 0.0f;
  RowStats st{};
  for (int pass = 0; pass < 2; ++pass) {
    double s = 0.0, q = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(LoadAsFloat(x, t, i)) - k;
      s += d;
      q += d * d;
    }
    st = StatsFromSums(kind, n, eps, k, s, q, DoubleSums(n));
    if (!ShouldRecenter(kind, st)) break;
    k = static_cast<float>(st.k + st.c);
  }
  return st;
}

float RowElement(const CrRow& row, size_t j) {
  return LoadAsFloat(row.x, row.x_storage,
                     (j / row.run) * row.run_stride + (j % row.run) * row.step);
}

double InferenceInDouble(float x, float mean, float var, float eps, float g,
                         float b) {
  const double denom =
      std::sqrt(static_cast<double>(var) + static_cast<double>(eps));
  return (static_cast<double>(x) - mean) / denom * g + b;
}

float LoadAsFloat(const void* x, simdnorm_dtype t, size_t j) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(x)[j];
  const uint16_t b = static_cast<const uint16_t*>(x)[j];
  return static_cast<float>(Value16(t, b));
}

uint16_t RoundToBF16Bits(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0 : 0x7FC0;
  if (std::isinf(v)) return std::signbit(v) ? 0xFF80 : 0x7F80;
  const double a = std::fabs(v);
  double r;
  if (a >= 0x1p-126) {
    const double ulp = std::ldexp(1.0, std::ilogb(a) - 7);  // 8 bits
    r = std::nearbyint(a / ulp) * ulp;
  } else {
    r = std::nearbyint(a / 0x1p-133) * 0x1p-133;  // subnormal bf16 spacing
  }
  const double kMax = 0x1.FEp127;                         // largest finite bf16
  float f = r > kMax ? INFINITY : static_cast<float>(r);  // exact: r fits
  if (std::signbit(v)) f = -f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return static_cast<uint16_t>(u >> 16);
}

uint16_t RoundToF16Bits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7E00;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7C00;
  // a rounded to a multiple of the binade's ulp (11 significant bits), or
  // of 2^-24 below 2^-14 (subnormals). Scaling by a power of 2 is exact.
  const double ulp =
      a >= 0x1p-14 ? std::ldexp(1.0, std::ilogb(a) - 10) : 0x1p-24;
  const double r = std::nearbyint(a / ulp) * ulp;  // <= 65504
  if (r < 0x1p-14) return sign | static_cast<uint16_t>(r / 0x1p-24);
  const int e = std::ilogb(r);
  const int mant = static_cast<int>(std::ldexp(r, 10 - e)) - 1024;
  return sign | static_cast<uint16_t>(((e + 15) << 10) | mant);
}

double F16BitsToDouble(uint16_t b) {
  const int exp = (b >> 10) & 0x1F;
  const int mant = b & 0x3FF;
  double v;
  if (exp == 0x1F) {
    v = mant ? NAN : INFINITY;
  } else if (exp == 0) {
    v = mant * 0x1p-24;  // subnormal (or zero): exact
  } else {
    // The double's own fields (ldexp's call was most of a 1x1280x8x8
    // GroupNorm with f16 weights, converted once a call).
    const uint64_t bits = static_cast<uint64_t>(exp - 15 + 1023) << 52 |
                          static_cast<uint64_t>(mant) << 42;
    std::memcpy(&v, &bits, sizeof(v));
  }
  return (b & 0x8000) ? -v : v;
}

}  // namespace internal
}  // namespace simdnorm
