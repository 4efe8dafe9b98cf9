// Exact dyadic rationals (sign * integer * 2^exp) for the rare decisions
// that no floating-point precision settles: a normalized value that sits on,
// or within a few double ulps of, a rounding midpoint of bf16 or fp16.
// Every float is one exactly; sums and products stay exact. Slow and
// allocating: only the correct-rounding fallback uses it.
#ifndef SIMDNORM_LIB_DYADIC_H_
#define SIMDNORM_LIB_DYADIC_H_

#include <cstdint>
#include <vector>

namespace simdnorm {
namespace internal {

class Dyadic {
 public:
  Dyadic() = default;
  // Exact value of a finite double.
  static Dyadic FromDouble(double v);

  Dyadic operator+(const Dyadic& o) const;
  Dyadic operator-(const Dyadic& o) const;
  Dyadic operator*(const Dyadic& o) const;
  // -1, 0 or +1.
  int Sign() const { return mag_.empty() ? 0 : (neg_ ? -1 : 1); }
  // Sign of *this - o.
  int Compare(const Dyadic& o) const { return (*this - o).Sign(); }

 private:
  using Limbs = std::vector<uint32_t>;  // little-endian magnitude
  static Limbs Shifted(const Limbs& a, int bits);
  static int CompareMag(const Limbs& a, const Limbs& b);
  static Limbs AddMag(const Limbs& a, const Limbs& b);
  static Limbs SubMag(const Limbs& a, const Limbs& b);  // a >= b
  static void Trim(Limbs& a);

  bool neg_ = false;
  int exp_ = 0;
  Limbs mag_;  // empty = 0
};

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_DYADIC_H_
