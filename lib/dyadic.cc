#include "lib/dyadic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

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

}  // namespace internal
}  // namespace simdnorm
