#include "lib/validate.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace simdnorm {
namespace internal {
namespace {

// A C caller may store any int in an enum field, and in C++ loading an enum
// outside its declared values is undefined: read the raw integer instead.
template <typename E>
int RawEnum(const E& field) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &field, sizeof(v));
  return static_cast<int>(v);
}

bool ValidDType(int t) { return t == SIMDNORM_F32 || t == SIMDNORM_BF16; }

// Half-open byte range [begin, end) spanned by some rows.
struct Span {
  uintptr_t begin, end;
};

bool Overlaps(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

// The bytes spanned by `rows` rows of `cols` elements `stride` apart;
// false when the size or the end address overflows.
bool RowsSpan(const void* p, size_t rows, size_t cols, size_t stride,
              size_t elem, Span* s) {
  size_t elems;
  if (__builtin_mul_overflow(rows - 1, stride, &elems) ||
      __builtin_add_overflow(elems, cols, &elems)) {
    return false;
  }
  size_t bytes;
  if (__builtin_mul_overflow(elems, elem, &bytes)) return false;
  s->begin = reinterpret_cast<uintptr_t>(p);
  return !__builtin_add_overflow(s->begin, bytes, &s->end);
}

}  // namespace

size_t ElementSize(simdnorm_dtype t) { return t == SIMDNORM_F32 ? 4 : 2; }

simdnorm_status Validate(const simdnorm_desc* d, Problem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  const int kind = RawEnum(d->kind);
  if ((kind != SIMDNORM_LAYERNORM && kind != SIMDNORM_RMSNORM) ||
      !ValidDType(RawEnum(d->x_type)) || !ValidDType(RawEnum(d->y_type)) ||
      !ValidDType(RawEnum(d->param_type))) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (!(d->eps >= 0.0f) || !std::isfinite(d->eps))
    return SIMDNORM_INVALID_ARGUMENT;
  p->rows = d->rows;
  if (d->rows == 0) return SIMDNORM_OK;
  if (d->x == nullptr || d->y == nullptr) return SIMDNORM_INVALID_ARGUMENT;

  const size_t cols = d->cols;
  const size_t x_stride = d->x_stride ? d->x_stride : cols;
  const size_t y_stride = d->y_stride ? d->y_stride : cols;
  if (cols == 0 || x_stride < cols || y_stride < cols)
    return SIMDNORM_INVALID_SHAPE;
  const size_t x_elem = ElementSize(d->x_type), y_elem = ElementSize(d->y_type);
  const size_t p_elem = ElementSize(d->param_type);
  Span x, y, gamma{}, beta{};
  if (!RowsSpan(d->x, d->rows, cols, x_stride, x_elem, &x) ||
      !RowsSpan(d->y, d->rows, cols, y_stride, y_elem, &y) ||
      (d->gamma && !RowsSpan(d->gamma, 1, cols, cols, p_elem, &gamma)) ||
      (d->beta && !RowsSpan(d->beta, 1, cols, cols, p_elem, &beta))) {
    return SIMDNORM_INVALID_SHAPE;
  }

  const bool in_place =
      d->x == d->y && x_elem == y_elem && x_stride == y_stride;
  if ((!in_place && Overlaps(x, y)) || (d->gamma && Overlaps(y, gamma)) ||
      (d->beta && Overlaps(y, beta))) {
    return SIMDNORM_OVERLAP;
  }

  p->args =
      RowArgs{d->x, x_stride, d->y, y_stride, d->gamma, d->beta, cols, d->eps};
  p->kind = d->kind;
  p->x_type = d->x_type;
  p->y_type = d->y_type;
  p->param_type = d->param_type;
  return SIMDNORM_OK;
}

}  // namespace internal
}  // namespace simdnorm
