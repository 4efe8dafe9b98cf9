#include "lib/dyadic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace simdnorm {
namespace internal {

void Limbs::Reserve(size_t n) {
  if (n <= kInline) {
    heap_.reset();
  } else if (!heap_ || capacity_ < n) {
    heap_.reset(new uint32_t[n]);
    capacity_ = n;
  }
}

Limbs::Limbs(size_t n, uint32_t v) {
  Reserve(n);
  size_ = n;
  std::fill(data(), data() + n, v);
}

Limbs::Limbs(std::initializer_list<uint32_t> v) {
  Reserve(v.size());
  size_ = v.size();
  std::copy(v.begin(), v.end(), data());
}

Limbs& Limbs::operator=(const Limbs& o) {
  if (this == &o) return *this;
  Reserve(o.size_);
  size_ = o.size_;
  std::copy(o.data(), o.data() + o.size_, data());
  return *this;
}

Dyadic Dyadic::FromDouble(double v) {
  Dyadic d;
  if (v == 0.0) return d;
  int e;
  const double f = std::frexp(std::fabs(v), &e);                // f in [0.5, 1)
  const uint64_t m = static_cast<uint64_t>(std::ldexp(f, 53));  // exact
  d.neg_ = v < 0.0;
  d.exp_ = e - 53;
  d.mag_ = {static_cast<uint32_t>(m), static_cast<uint32_t>(m >> 32)};
  Trim(d.mag_);
  return d;
}

void Dyadic::Trim(Limbs& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

Limbs Dyadic::Shifted(const Limbs& a, int bits) {
  Limbs r(a.size() + bits / 32 + 1, 0);
  const int words = bits / 32, rest = bits % 32;
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t v = static_cast<uint64_t>(a[i]) << rest;
    r[i + words] |= static_cast<uint32_t>(v);
    r[i + words + 1] |= static_cast<uint32_t>(v >> 32);
  }
  Trim(r);
  return r;
}

int Dyadic::CompareMag(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

Limbs Dyadic::AddMag(const Limbs& a, const Limbs& b) {
  Limbs r(std::max(a.size(), b.size()) + 1, 0);
  uint64_t carry = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const uint64_t s =
        carry + (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0);
    r[i] = static_cast<uint32_t>(s);
    carry = s >> 32;
  }
  Trim(r);
  return r;
}

Limbs Dyadic::SubMag(const Limbs& a, const Limbs& b) {
  Limbs r(a.size(), 0);
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t s = static_cast<int64_t>(a[i]) - borrow - (i < b.size() ? b[i] : 0);
    borrow = s < 0;
    if (s < 0) s += int64_t{1} << 32;
    r[i] = static_cast<uint32_t>(s);
  }
  Trim(r);
  return r;
}

Dyadic Dyadic::operator+(const Dyadic& o) const {
  if (mag_.empty()) return o;
  if (o.mag_.empty()) return *this;
  // Both magnitudes at the smaller exponent.
  const int e = std::min(exp_, o.exp_);
  const Limbs a = Shifted(mag_, exp_ - e), b = Shifted(o.mag_, o.exp_ - e);
  Dyadic r;
  r.exp_ = e;
  if (neg_ == o.neg_) {
    r.mag_ = AddMag(a, b);
    r.neg_ = neg_;
  } else {
    const int c = CompareMag(a, b);
    if (c == 0) return Dyadic();
    r.mag_ = c > 0 ? SubMag(a, b) : SubMag(b, a);
    r.neg_ = c > 0 ? neg_ : o.neg_;
  }
  return r;
}

Dyadic Dyadic::operator-(const Dyadic& o) const {
  Dyadic n = o;
  n.neg_ = !o.neg_;
  return *this + n;
}

Dyadic Dyadic::operator*(const Dyadic& o) const {
  if (mag_.empty() || o.mag_.empty()) return Dyadic();
  Limbs r(mag_.size() + o.mag_.size(), 0);
  for (size_t i = 0; i < mag_.size(); ++i) {
    uint64_t carry = 0;
    for (size_t j = 0; j < o.mag_.size(); ++j) {
      const uint64_t t =
          static_cast<uint64_t>(mag_[i]) * o.mag_[j] + r[i + j] + carry;
      r[i + j] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    r[i + o.mag_.size()] = static_cast<uint32_t>(carry);
  }
  Trim(r);
  Dyadic d;
  d.neg_ = neg_ != o.neg_;
  d.exp_ = exp_ + o.exp_;
  d.mag_ = std::move(r);
  return d;
}

void DyadicSum::Add(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const int field = static_cast<int>(bits >> 52 & 0x7FF);
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  if (field != 0) m |= uint64_t{1} << 52;
  if (m == 0) return;
  // v = +-m * 2^(p + kLow): p = field - 1 for normal v, 0 for subnormal.
  const int p = field != 0 ? field - 1 : 0;
  const size_t k = static_cast<size_t>(p / 32);
  const int r = p % 32;
  const uint64_t lo = (m & 0xFFFFFFFF) << r, hi = (m >> 32) << r;
  // Each below 2^33: 2^29 terms fit an int64 digit from below 2^32.
  const int64_t d0 = static_cast<int64_t>(lo & 0xFFFFFFFF);
  const int64_t d1 = static_cast<int64_t>((lo >> 32) + (hi & 0xFFFFFFFF));
  const int64_t d2 = static_cast<int64_t>(hi >> 32);
  if (bits >> 63) {
    digits_[k] -= d0;
    digits_[k + 1] -= d1;
    digits_[k + 2] -= d2;
  } else {
    digits_[k] += d0;
    digits_[k + 1] += d1;
    digits_[k + 2] += d2;
  }
  if (++terms_ == uint32_t{1} << 28) Carry();
}

// Every digit but the top one into [0, 2^32), the rest carried up (floor).
void DyadicSum::Carry() {
  for (size_t k = 0; k + 1 < kDigits; ++k) {
    const int64_t low = digits_[k] & 0xFFFFFFFF;
    digits_[k + 1] += (digits_[k] - low) / (int64_t{1} << 32);  // exact
    digits_[k] = low;
  }
  terms_ = 0;
}

Dyadic DyadicSum::Value() const {
  DyadicSum c = *this;
  c.Carry();
  Dyadic r;
  for (size_t k = 0; k < kDigits; ++k) {
    if (c.digits_[k] != 0) {  // below 2^32 in magnitude: an exact double
      r = r + Dyadic::FromDouble(static_cast<double>(c.digits_[k]))
                  .Scaled(static_cast<int>(32 * k) + kLow);
    }
  }
  return r;
}

}  // namespace internal
}  // namespace simdnorm
