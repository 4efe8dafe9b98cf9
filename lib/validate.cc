#include "lib/validate.h"

#include <algorithm>
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

bool ValidDType(int t) { return t >= SIMDNORM_F32 && t <= SIMDNORM_I8; }

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

// The checks that need no pointer and no shape (done even when rows == 0).
simdnorm_status CheckFields(const simdnorm_desc& d) {
  const int kind = RawEnum(d.kind);
  const int x_type = RawEnum(d.x_type), y_type = RawEnum(d.y_type);
  const int param_type = RawEnum(d.param_type);
  if ((kind != SIMDNORM_LAYERNORM && kind != SIMDNORM_RMSNORM) ||
      !ValidDType(x_type) || !ValidDType(y_type) || !ValidDType(param_type)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (x_type == SIMDNORM_I8 || param_type == SIMDNORM_I8)
    return SIMDNORM_UNSUPPORTED;
  if (y_type != SIMDNORM_I8 && (d.y_scale != nullptr || d.quant_group != 0))
    return SIMDNORM_INVALID_ARGUMENT;
  if (!(d.eps >= 0.0f) || !std::isfinite(d.eps) ||
      !std::isfinite(d.gamma_offset) ||
      (d.flags & ~static_cast<unsigned>(SIMDNORM_ROUND_NORMALIZED)) != 0) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  return SIMDNORM_OK;
}

}  // namespace

size_t ElementSize(simdnorm_dtype t) {
  switch (t) {
    case SIMDNORM_F32:
      return 4;
    case SIMDNORM_BF16:
    case SIMDNORM_F16:
      return 2;
    case SIMDNORM_I8:
      return 1;
  }
  return 0;
}

simdnorm_status Validate(const simdnorm_desc* d, Problem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  const simdnorm_status fields = CheckFields(*d);
  if (fields != SIMDNORM_OK) return fields;
  p->rows = d->rows;
  if (d->rows == 0) return SIMDNORM_OK;
  const bool i8 = d->y_type == SIMDNORM_I8;
  if (d->x == nullptr || d->y == nullptr || (i8 && d->y_scale == nullptr))
    return SIMDNORM_INVALID_ARGUMENT;

  // Shapes. Strides of 0 mean cols; those of absent operands are ignored.
  const size_t rows = d->rows, cols = d->cols;
  const size_t x_stride = d->x_stride ? d->x_stride : cols;
  const size_t y_stride = d->y_stride ? d->y_stride : cols;
  const size_t r_stride = d->residual_stride ? d->residual_stride : cols;
  const size_t s_stride = d->sum_out_stride ? d->sum_out_stride : cols;
  if (cols == 0 || x_stride < cols || y_stride < cols ||
      (d->residual && r_stride < cols) || (d->sum_out && s_stride < cols)) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // A group longer than the row is the whole row.
  const size_t group = d->quant_group ? std::min(d->quant_group, cols) : cols;
  const size_t scales_per_row = (cols - 1) / group + 1;  // ceil, no overflow
  const size_t x_elem = ElementSize(d->x_type), y_elem = ElementSize(d->y_type);
  const size_t p_elem = ElementSize(d->param_type);
  Span x, y, gamma{}, beta{}, res{}, sum{}, scale{};
  if (!RowsSpan(d->x, rows, cols, x_stride, x_elem, &x) ||
      !RowsSpan(d->y, rows, cols, y_stride, y_elem, &y) ||
      (d->gamma && !RowsSpan(d->gamma, 1, cols, cols, p_elem, &gamma)) ||
      (d->beta && !RowsSpan(d->beta, 1, cols, cols, p_elem, &beta)) ||
      (d->residual &&
       !RowsSpan(d->residual, rows, cols, r_stride, x_elem, &res)) ||
      (d->sum_out &&
       !RowsSpan(d->sum_out, rows, cols, s_stride, x_elem, &sum)) ||
      (i8 && !RowsSpan(d->y_scale, rows, scales_per_row, scales_per_row,
                       sizeof(float), &scale))) {
    return SIMDNORM_INVALID_SHAPE;
  }

  // Overlaps: each output against every other buffer. The exceptions are
  // exact aliases: y == x (in place), sum_out == x, sum_out == residual.
  const bool y_is_x = d->y == d->x && y_elem == x_elem && y_stride == x_stride;
  const bool sum_is_x = d->sum_out == d->x && s_stride == x_stride;
  const bool sum_is_res = d->sum_out == d->residual && s_stride == r_stride;
  const bool has_res = d->residual != nullptr, has_sum = d->sum_out != nullptr;
  const bool has_gamma = d->gamma != nullptr, has_beta = d->beta != nullptr;
  auto hits_inputs = [&](Span out) {
    return (has_gamma && Overlaps(out, gamma)) ||
           (has_beta && Overlaps(out, beta));
  };
  if ((!y_is_x && Overlaps(y, x)) || hits_inputs(y) ||
      (has_res && Overlaps(y, res)) || (has_sum && Overlaps(y, sum)) ||
      (i8 && Overlaps(y, scale))) {
    return SIMDNORM_OVERLAP;
  }
  if (has_sum && ((!sum_is_x && Overlaps(sum, x)) || hits_inputs(sum) ||
                  (has_res && !sum_is_res && Overlaps(sum, res)) ||
                  (i8 && Overlaps(sum, scale)))) {
    return SIMDNORM_OVERLAP;
  }
  if (i8 && (Overlaps(scale, x) || hits_inputs(scale) ||
             (has_res && Overlaps(scale, res)))) {
    return SIMDNORM_OVERLAP;
  }

  // Every field is assigned (no `a = RowArgs{}` first: compilers zero the
  // struct with `rep stos`, whose start-up costs more than this function's
  // other work).
  RowArgs& a = p->args;
  a.x = d->x;
  a.x_stride = x_stride;
  a.y = d->y;
  a.y_stride = y_stride;
  a.gamma = d->gamma;
  a.beta = d->beta;
  a.cols = cols;
  a.eps = d->eps;
  a.residual = d->residual;
  a.residual_stride = r_stride;
  a.sum_out = d->sum_out;
  a.sum_out_stride = s_stride;
  // x + -0 == x for every x (including -0): the zero offset changes nothing.
  a.gamma_offset = d->gamma_offset == 0.0f ? -0.0f : d->gamma_offset;
  a.round_normalized = (d->flags & SIMDNORM_ROUND_NORMALIZED) != 0;
  a.y_scale = d->y_scale;
  a.quant_group = group;
  a.scales_per_row = scales_per_row;
  a.stream_y = false;
  p->kind = d->kind;
  p->x_type = d->x_type;
  p->y_type = d->y_type;
  p->param_type = d->param_type;
  return SIMDNORM_OK;
}

}  // namespace internal
}  // namespace simdnorm
