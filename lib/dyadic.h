// Exact dyadic rationals (sign * integer * 2^exp) for the rare decisions
// that no floating-point precision settles: a normalized value that sits on,
// or within a few double ulps of, a rounding midpoint of bf16 or fp16.
// Every float is one exactly; sums and products stay exact. Slow: only the
// correct-rounding fallback uses it. Numbers of up to Limbs::kInline * 32 bits
// live in place (the calls it serves allocate nothing); larger ones, which
// need exponents far apart, go to the heap.
#ifndef SIMDNORM_LIB_DYADIC_H_
#define SIMDNORM_LIB_DYADIC_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

namespace simdnorm {
namespace internal {

// A little-endian magnitude in 32-bit limbs: in place up to kInline limbs.
class Limbs {
 public:
  static constexpr size_t kInline = 64;
  Limbs() = default;
  Limbs(size_t n, uint32_t v);
  Limbs(std::initializer_list<uint32_t> v);
  Limbs(const Limbs& o) { *this = o; }
  Limbs& operator=(const Limbs& o);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint32_t back() const { return data()[size_ - 1]; }
  void pop_back() { --size_; }
  uint32_t& operator[](size_t i) { return data()[i]; }
  uint32_t operator[](size_t i) const { return data()[i]; }

 private:
  void Reserve(size_t n);  // room for n limbs; contents not kept
  uint32_t* data() { return heap_ ? heap_.get() : inline_; }
  const uint32_t* data() const { return heap_ ? heap_.get() : inline_; }
  size_t size_ = 0;
  size_t capacity_ = 0;  // of heap_
  uint32_t inline_[kInline];
  std::unique_ptr<uint32_t[]> heap_;  // when more than kInline
};

class Dyadic {
 public:
  Dyadic() = default;
  // Exact value of a finite double.
  static Dyadic FromDouble(double v);

  Dyadic operator+(const Dyadic& o) const;
  Dyadic operator-(const Dyadic& o) const;
  Dyadic operator*(const Dyadic& o) const;
  // *this * 2^e (exact).
  Dyadic Scaled(int e) const {
    Dyadic r = *this;
    r.exp_ += e;
    return r;
  }
  // -1, 0 or +1.
  int Sign() const { return mag_.empty() ? 0 : (neg_ ? -1 : 1); }
  // Sign of *this - o.
  int Compare(const Dyadic& o) const { return (*this - o).Sign(); }

 private:
  static Limbs Shifted(const Limbs& a, int bits);
  static int CompareMag(const Limbs& a, const Limbs& b);
  static Limbs AddMag(const Limbs& a, const Limbs& b);
  static Limbs SubMag(const Limbs& a, const Limbs& b);  // a >= b
  static void Trim(Limbs& a);

  bool neg_ = false;
  int exp_ = 0;
  Limbs mag_;  // empty = 0
};

// The exact sum of many finite doubles at O(1) a term: a fixed-point
// accumulator over double's whole range (Kulisch's long accumulator) of
// 32-bit digits in int64 words, whose carries are propagated only every
// 2^28 terms and at the end. Adding Dyadics term by term took ~60 ns a
// term: 5 ms for the exact sums of one GroupNorm group of 40960 floats.
class DyadicSum {
 public:
  void Add(double v);
  Dyadic Value() const;

 private:
  void Carry();

  // Digit k weighs 2^(32 k - 1074), double's least subnormal; a double's
  // 53 bits span three digits at most, the top one sums up to 2^30 terms
  // of 2^1024 with room to spare.
  static constexpr int kLow = -1074;
  static constexpr size_t kDigits = 70;
  int64_t digits_[kDigits] = {};
  uint32_t terms_ = 0;  // since the last Carry
};

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_DYADIC_H_
