#include "support/matrix.h"

#include <algorithm>
#include <sstream>

#include "support/dtypes.h"

namespace simdnorm_test {

Matrix::Matrix(simdnorm_dtype type, size_t rows, size_t cols, size_t stride,
               size_t offset)
    : type_(type),
      es_(ElemSize(type)),
      rows_(rows),
      cols_(cols),
      stride_(stride ? stride : cols) {
  span_ = rows_ ? (rows_ - 1) * stride_ + cols_ : 0;
  buf_.assign(kGuard + kAlign + offset * es_ + span_ * es_ + kGuard, kSentinel);
  const uintptr_t p = reinterpret_cast<uintptr_t>(buf_.data()) + kGuard;
  first_ = kGuard + (kAlign - p % kAlign) % kAlign + offset * es_;
}

void Matrix::Set(size_t r, size_t c, float v) {
  if (Is16(type_)) {
    const uint16_t b = type_ == SIMDNORM_BF16 ? Bf16Bits(v) : F16Bits(v);
    std::memcpy(At(r, c), &b, 2);
  } else if (type_ == SIMDNORM_I8) {
    const float q = std::nearbyint(std::min(127.0f, std::max(-128.0f, v)));
    *At(r, c) = static_cast<unsigned char>(static_cast<int8_t>(q));
  } else {
    std::memcpy(At(r, c), &v, 4);
  }
}

void Matrix::Fill(const std::vector<float>& values) {
  for (size_t r = 0; r < rows_; ++r) {
    for (size_t c = 0; c < cols_; ++c) Set(r, c, values[r * cols_ + c]);
  }
}

float Matrix::Stored(float v) const {
  switch (type_) {
    case SIMDNORM_BF16:
      return Bf16ToFloat(Bf16Bits(v));
    case SIMDNORM_F16:
      return F16ToFloat(F16Bits(v));
    case SIMDNORM_I8:
      return std::nearbyint(std::min(127.0f, std::max(-128.0f, v)));
    default:
      return v;
  }
}

Matrix Matrix::DenseCopy() const {
  Matrix m(type_, rows_, cols_);
  for (size_t r = 0; r < rows_; ++r) {
    std::memcpy(m.At(r, 0), At(r, 0), cols_ * es_);
  }
  return m;
}

std::vector<unsigned char> Matrix::ElementBytes() const {
  std::vector<unsigned char> v(rows_ * cols_ * es_);
  for (size_t r = 0; r < rows_; ++r) {
    std::memcpy(v.data() + r * cols_ * es_, At(r, 0), cols_ * es_);
  }
  return v;
}

bool Matrix::RowBytesEqual(const Matrix& o, size_t r, size_t o_r) const {
  return es_ == o.es_ && cols_ == o.cols_ &&
         std::memcmp(At(r, 0), o.At(o_r, 0), cols_ * es_) == 0;
}

bool Matrix::PaddingIntact(std::string* where) const {
  auto check = [&](size_t from, size_t to, const char* what) {
    for (size_t i = from; i < to; ++i) {
      if (buf_[i] != kSentinel) {
        std::ostringstream os;
        os << "byte written " << what << " (buffer byte " << i
           << ", element base at " << first_ << ")";
        *where = os.str();
        return false;
      }
    }
    return true;
  };
  if (!check(0, first_, "before the first row")) return false;
  for (size_t r = 0; r + 1 < rows_; ++r) {
    const size_t from = first_ + (r * stride_ + cols_) * es_;
    const size_t to = first_ + (r + 1) * stride_ * es_;
    if (!check(from, to, "in the padding between rows")) return false;
  }
  return check(first_ + span_ * es_, buf_.size(), "after the last row");
}

}  // namespace simdnorm_test
