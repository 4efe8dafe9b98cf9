#include "support/half.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

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

// 2^k for k within double's normal exponents, from its bits.
double Pow2(int k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double p;
  std::memcpy(&p, &bits, sizeof p);
  return p;
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
  const double overflow = (Pow2(f.digits + 1) - 1.0) * Pow2(f.emax - f.digits);
  if (a >= overflow) return static_cast<uint16_t>(sign | f.inf);
  uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  // The exponent of a's binade (below the format's range: its subnormals').
  const int e2 = static_cast<int>(bits >> 52) - 1023;
  int e = std::max(e2, f.emin);
  const int q = e - (f.digits - 1);  // exponent of its ulp
  // a / 2^q < 2^digits is exact; nearbyint rounds it to the nearest
  // integer, ties to even (the default rounding mode).
  double n = std::nearbyint(a * Pow2(-q));
  const double implicit = Pow2(f.digits - 1);
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
