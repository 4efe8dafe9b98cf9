#include "support/half.h"

#include <algorithm>
#include <cmath>

namespace simdnorm_test {

namespace {

// HalfToDouble and RoundToHalf of one format: its constants known to the
// compiler (the ldexp of the bounds folded), as when the functions were
// inline with a constant format.
template <Half kH>
double ToDouble(uint16_t b) {
  constexpr const HalfFormat& f = FormatOf(kH);
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

template <Half kH>
uint16_t Round(double d, bool nan_sign) {
  constexpr const HalfFormat& f = FormatOf(kH);
  const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  if (std::isnan(d))
    return static_cast<uint16_t>((nan_sign ? sign : 0) | f.qnan);
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

}  // namespace

double HalfToDouble(Half h, uint16_t b) {
  return h == Half::kBf16 ? ToDouble<Half::kBf16>(b) : ToDouble<Half::kF16>(b);
}

uint16_t RoundToHalf(Half h, double d, bool nan_sign) {
  return h == Half::kBf16 ? Round<Half::kBf16>(d, nan_sign)
                          : Round<Half::kF16>(d, nan_sign);
}

}  // namespace simdnorm_test
