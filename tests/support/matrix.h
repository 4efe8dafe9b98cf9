// Guarded buffers of every dtype (F32, BF16, F16, I8): rows at any stride
// and offset, every byte around the elements holding a sentinel, so that
// writes outside them are detected.
#ifndef SIMDNORM_TESTS_SUPPORT_MATRIX_H_
#define SIMDNORM_TESTS_SUPPORT_MATRIX_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "support/half.h"

namespace simdnorm_test {

constexpr unsigned char kSentinel = 0xA5;

// rows x cols elements of one dtype, `stride` elements apart (0 = cols),
// starting `offset` elements after a 64-byte aligned address, surrounded by
// guard bytes. Every byte that is not an element holds kSentinel, so writes
// outside the elements (padding between rows, before, after) are detected.
class Matrix {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr size_t kAlign = 64;

  Matrix(simdnorm_dtype type, size_t rows, size_t cols, size_t stride = 0,
         size_t offset = 0);
  Matrix(Matrix&&) = default;
  Matrix& operator=(Matrix&&) = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  simdnorm_dtype type() const { return type_; }
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t stride() const { return stride_; }
  void* data() { return buf_.data() + first_; }
  const void* data() const { return buf_.data() + first_; }
  const std::vector<unsigned char>& bytes() const { return buf_; }

  unsigned char* At(size_t r, size_t c) {
    return buf_.data() + first_ + (r * stride_ + c) * es_;
  }
  const unsigned char* At(size_t r, size_t c) const {
    return buf_.data() + first_ + (r * stride_ + c) * es_;
  }

  uint16_t Bits16(size_t r, size_t c) const {
    uint16_t b;
    std::memcpy(&b, At(r, c), 2);
    return b;
  }
  int8_t I8(size_t r, size_t c) const { return static_cast<int8_t>(*At(r, c)); }
  // The element's value (exact for every dtype).
  float GetF(size_t r, size_t c) const {
    switch (type_) {
      case SIMDNORM_BF16:
        return Bf16ToFloat(Bits16(r, c));
      case SIMDNORM_F16:
        return F16ToFloat(Bits16(r, c));
      case SIMDNORM_I8:
        return I8(r, c);
      default:
        break;
    }
    float f;
    std::memcpy(&f, At(r, c), 4);
    return f;
  }
  double Get(size_t r, size_t c) const { return GetF(r, c); }
  bool IsNaN(size_t r, size_t c) const { return std::isnan(GetF(r, c)); }
  bool IsFinite(size_t r, size_t c) const { return std::isfinite(GetF(r, c)); }

  // Stores v, rounded to nearest-even for BF16 and F16 (for I8: rounded
  // and clamped to [-128, 127]).
  void Set(size_t r, size_t c, float v);
  void SetBits16(size_t r, size_t c, uint16_t b) {
    std::memcpy(At(r, c), &b, 2);
  }

  // values: rows * cols, row-major dense.
  void Fill(const std::vector<float>& values);

  // The stored value of a float after conversion to this dtype.
  float Stored(float v) const;

  // The same elements in a new dense matrix without offset.
  Matrix DenseCopy() const;

  // The element bytes, rows * cols * element size, dense.
  std::vector<unsigned char> ElementBytes() const;

  bool RowBytesEqual(const Matrix& o, size_t r, size_t o_r) const;

  // True when every byte outside the elements still holds kSentinel;
  // otherwise *where says which.
  bool PaddingIntact(std::string* where) const;

 private:
  simdnorm_dtype type_;
  size_t es_;
  size_t rows_, cols_, stride_;
  size_t span_ = 0;   // elements from the first to past the last element
  size_t first_ = 0;  // byte index of element (0, 0) in buf_
  std::vector<unsigned char> buf_;
};

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_MATRIX_H_
