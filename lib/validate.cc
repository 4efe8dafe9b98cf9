#include "lib/validate.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib/backward.h"
#include "lib/batch_backward.h"
#include "lib/batch_norm.h"
#include "lib/group_backward.h"
#include "lib/group_norm.h"

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

constexpr unsigned kStoreFlags = SIMDNORM_Y_STREAM | SIMDNORM_Y_CACHED;
constexpr unsigned kKnownFlags =
    SIMDNORM_ROUND_NORMALIZED | kStoreFlags | SIMDNORM_FAST_ROUNDING;

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
  if (OpOf(kind) == nullptr || !ValidDType(x_type) || !ValidDType(y_type) ||
      !ValidDType(param_type)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (x_type == SIMDNORM_I8 || param_type == SIMDNORM_I8)
    return SIMDNORM_UNSUPPORTED;
  if (y_type != SIMDNORM_I8 && (d.y_scale != nullptr || d.quant_group != 0))
    return SIMDNORM_INVALID_ARGUMENT;
  if (!(d.eps >= 0.0f) || !std::isfinite(d.eps) ||
      !std::isfinite(d.gamma_offset) || (d.flags & ~kKnownFlags) != 0 ||
      (d.flags & kStoreFlags) == kStoreFlags) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  return SIMDNORM_OK;
}

// Fills *p from a valid descriptor and its resolved strides and groups.
// Every field is assigned (no `a = RowArgs{}` first: compilers zero the
// struct with `rep stos`, whose start-up costs more than the checks).
void Fill(const simdnorm_desc& d, size_t x_stride, size_t y_stride,
          size_t r_stride, size_t s_stride, size_t group, size_t scales_per_row,
          Problem* p) {
  RowArgs& a = p->args;
  a.x = d.x;
  a.x_stride = x_stride;
  a.y = d.y;
  a.y_stride = y_stride;
  a.gamma = d.gamma;
  a.beta = d.beta;
  a.cols = d.cols;
  a.eps = d.eps;
  a.residual = d.residual;
  a.residual_stride = r_stride;
  a.sum_out = d.sum_out;
  a.sum_out_stride = s_stride;
  // x + -0 == x for every x (including -0): the zero offset changes nothing.
  a.gamma_offset = d.gamma_offset == 0.0f ? -0.0f : d.gamma_offset;
  a.round_normalized = (d.flags & SIMDNORM_ROUND_NORMALIZED) != 0;
  a.correct_rounding = (d.flags & SIMDNORM_FAST_ROUNDING) == 0;
  a.y_scale = d.y_scale;
  a.quant_group = group;
  a.scales_per_row = scales_per_row;
  a.stream_y = false;
  a.mean_out = d.mean_out;
  a.rstd_out = d.rstd_out;
  p->rows = d.rows;
  a.kind = d.kind;
  p->x_type = d.x_type;
  p->y_type = d.y_type;
  p->param_type = d.param_type;
}

// The plain call (no residual, sum_out or int8 output; rows and strides
// below 2^31, so that no size can overflow), checked with few branches.
// True when it is valid and *p is filled. False when anything is unusual
// or wrong: then the full checks run and name the first problem found.
// Decoding one token is a call of a few hundred nanoseconds, and the full
// checks took ~17 ns of it.
bool ValidPlainCall(const simdnorm_desc& d, Problem* p) {
  const unsigned kind = static_cast<unsigned>(RawEnum(d.kind));
  const unsigned x_type = static_cast<unsigned>(RawEnum(d.x_type));
  const unsigned y_type = static_cast<unsigned>(RawEnum(d.y_type));
  const unsigned param_type = static_cast<unsigned>(RawEnum(d.param_type));
  const size_t rows = d.rows, cols = d.cols;
  const size_t x_stride = d.x_stride ? d.x_stride : cols;
  const size_t y_stride = d.y_stride ? d.y_stride : cols;
  constexpr size_t kBig = size_t{1} << 31;
  // Bitwise & and |: one branch for all of them.
  const bool plain =
      (kind < unsigned{kNumRowKinds}) & (x_type <= SIMDNORM_F16) &
      (y_type <= SIMDNORM_F16) & (param_type <= SIMDNORM_F16) &
      (d.residual == nullptr) & (d.sum_out == nullptr) &
      (d.y_scale == nullptr) & (d.quant_group == 0) & (d.mean_out == nullptr) &
      (d.rstd_out == nullptr) & ((d.flags & ~kKnownFlags) == 0) &
      ((d.flags & kStoreFlags) != kStoreFlags) & (d.eps >= 0.0f) &
      (d.eps <= FLT_MAX) & (std::fabs(d.gamma_offset) <= FLT_MAX) &
      (rows != 0) & (cols != 0) & (d.x != nullptr) & (d.y != nullptr) &
      (x_stride >= cols) & (y_stride >= cols) &
      (((rows | x_stride | y_stride) & ~(kBig - 1)) == 0);
  if (!plain) return false;
  // Element sizes of F32, BF16, F16: 4, 2, 2.
  const size_t x_elem = x_type == SIMDNORM_F32 ? 4 : 2;
  const size_t y_elem = y_type == SIMDNORM_F32 ? 4 : 2;
  const size_t p_elem = param_type == SIMDNORM_F32 ? 4 : 2;
  const uintptr_t x = reinterpret_cast<uintptr_t>(d.x);
  const uintptr_t y = reinterpret_cast<uintptr_t>(d.y);
  const uintptr_t g = reinterpret_cast<uintptr_t>(d.gamma);
  const uintptr_t b = reinterpret_cast<uintptr_t>(d.beta);
  // Below 2^31 each, these products stay below 2^64.
  const uintptr_t x_end = x + ((rows - 1) * x_stride + cols) * x_elem;
  const uintptr_t y_end = y + ((rows - 1) * y_stride + cols) * y_elem;
  const uintptr_t g_end = g + cols * p_elem, b_end = b + cols * p_elem;
  const bool y_is_x = y == x && y_elem == x_elem && y_stride == x_stride;
  const bool ok = (x_end > x) & (y_end > y) & (g_end > g) & (b_end > b) &
                  (y_is_x | (y_end <= x) | (x_end <= y)) &
                  ((g == 0) | (y_end <= g) | (g_end <= y)) &
                  ((b == 0) | (y_end <= b) | (b_end <= y));
  if (!ok) return false;
  Fill(d, x_stride, y_stride, cols, cols, cols, 1, p);
  return true;
}

}  // namespace

namespace {

// Every check, in the documented order (validate.h).
__attribute__((noinline)) simdnorm_status ValidateAll(const simdnorm_desc* d,
                                                      Problem* p) {
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
  Span x, y, gamma{}, beta{}, res{}, sum{}, scale{}, mean{}, rstd{};
  if (!RowsSpan(d->x, rows, cols, x_stride, x_elem, &x) ||
      !RowsSpan(d->y, rows, cols, y_stride, y_elem, &y) ||
      (d->gamma && !RowsSpan(d->gamma, 1, cols, cols, p_elem, &gamma)) ||
      (d->beta && !RowsSpan(d->beta, 1, cols, cols, p_elem, &beta)) ||
      (d->residual &&
       !RowsSpan(d->residual, rows, cols, r_stride, x_elem, &res)) ||
      (d->sum_out &&
       !RowsSpan(d->sum_out, rows, cols, s_stride, x_elem, &sum)) ||
      (i8 && !RowsSpan(d->y_scale, rows, scales_per_row, scales_per_row,
                       sizeof(float), &scale)) ||
      (d->mean_out && !RowsSpan(d->mean_out, 1, rows, rows, 4, &mean)) ||
      (d->rstd_out && !RowsSpan(d->rstd_out, 1, rows, rows, 4, &rstd))) {
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
  // The saved statistics against everything else, and each other.
  const auto hits_any = [&](Span s) {
    return Overlaps(s, x) || Overlaps(s, y) || hits_inputs(s) ||
           (has_res && Overlaps(s, res)) || (has_sum && Overlaps(s, sum)) ||
           (i8 && Overlaps(s, scale));
  };
  if ((d->mean_out && hits_any(mean)) || (d->rstd_out && hits_any(rstd)) ||
      (d->mean_out && d->rstd_out && Overlaps(mean, rstd))) {
    return SIMDNORM_OVERLAP;
  }

  Fill(*d, x_stride, y_stride, r_stride, s_stride, group, scales_per_row, p);
  return SIMDNORM_OK;
}

}  // namespace

simdnorm_status Validate(const simdnorm_desc* d, Problem* p) {
  if (d != nullptr && ValidPlainCall(*d, p)) return SIMDNORM_OK;
  return ValidateAll(d, p);
}

namespace {

// The dtypes of a backward descriptor, `known` false for its own bad enum
// (kind, layout): INVALID_ARGUMENT for a value that is not a dtype, then
// UNSUPPORTED for I8 anywhere.
simdnorm_status CheckGradTypes(bool known, int x_type, int dy_type, int dx_type,
                               int param_type) {
  if (!known || !ValidDType(x_type) || !ValidDType(dy_type) ||
      !ValidDType(dx_type) || !ValidDType(param_type)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (x_type == SIMDNORM_I8 || dy_type == SIMDNORM_I8 ||
      dx_type == SIMDNORM_I8 || param_type == SIMDNORM_I8) {
    return SIMDNORM_UNSUPPORTED;
  }
  return SIMDNORM_OK;
}

// The bytes of a backward call's operands; those absent (and x, dy, dx of
// an empty call) are empty spans, which overlap nothing.
struct GradSpans {
  Span x, dy, dx, gamma, dgamma, dbeta, mean, rstd;
};

// Overlaps of the outputs (dx, dgamma, dbeta) with any other buffer; the
// one exception is dx == dy exactly.
simdnorm_status CheckGradOverlaps(const GradSpans& s, bool dx_is_dy) {
  if (Overlaps(s.dx, s.x) || (!dx_is_dy && Overlaps(s.dx, s.dy)) ||
      Overlaps(s.dx, s.gamma) || Overlaps(s.dx, s.dgamma) ||
      Overlaps(s.dx, s.dbeta) || Overlaps(s.dgamma, s.dbeta)) {
    return SIMDNORM_OVERLAP;
  }
  for (const Span& out : {s.dgamma, s.dbeta}) {
    if (Overlaps(out, s.x) || Overlaps(out, s.dy) || Overlaps(out, s.gamma))
      return SIMDNORM_OVERLAP;
  }
  for (const Span& out : {s.dx, s.dgamma, s.dbeta}) {
    if (Overlaps(out, s.mean) || Overlaps(out, s.rstd)) return SIMDNORM_OVERLAP;
  }
  return SIMDNORM_OK;
}

}  // namespace

// The backward descriptor (backward.h): the same rules as the forward's,
// with dx, dgamma and dbeta the outputs.
simdnorm_status ValidateBackward(const simdnorm_backward_desc* d,
                                 BackwardProblem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  const int kind = RawEnum(d->kind), param_type = RawEnum(d->param_type);
  const int x_type = RawEnum(d->x_type), dy_type = RawEnum(d->dy_type);
  const int dx_type = RawEnum(d->dx_type);
  const simdnorm_status types =
      CheckGradTypes(OpOf(kind) != nullptr && OpOf(kind)->info.has_backward,
                     x_type, dy_type, dx_type, param_type);
  if (types != SIMDNORM_OK) return types;
  if (!(d->eps >= 0.0f) || !std::isfinite(d->eps) ||
      !std::isfinite(d->gamma_offset) || (d->flags & ~kStoreFlags) != 0 ||
      d->flags == kStoreFlags) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  // Saved statistics: LayerNorm reads both, RMSNorm rstd only; L2 none.
  const bool centered = OpOf(kind)->info.centered != 0;
  if (kind == SIMDNORM_L2NORM && (d->mean || d->rstd))
    return SIMDNORM_UNSUPPORTED;
  if (centered && (d->mean == nullptr) != (d->rstd == nullptr))
    return SIMDNORM_INVALID_ARGUMENT;
  const float* saved_mean = centered ? d->mean : nullptr;
  const size_t rows = d->rows, cols = d->cols;
  if (rows > 0 && (d->x == nullptr || d->dy == nullptr || d->dx == nullptr))
    return SIMDNORM_INVALID_ARGUMENT;

  // Shapes (cols > 0 also with rows == 0 when dgamma or dbeta is wanted).
  const size_t x_stride = d->x_stride ? d->x_stride : cols;
  const size_t dy_stride = d->dy_stride ? d->dy_stride : cols;
  const size_t dx_stride = d->dx_stride ? d->dx_stride : cols;
  const bool has_sums = d->dgamma != nullptr || d->dbeta != nullptr;
  if ((rows > 0 || has_sums) &&
      (cols == 0 || x_stride < cols || dy_stride < cols || dx_stride < cols)) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const size_t x_elem = ElementSize(d->x_type);
  const size_t dy_elem = ElementSize(d->dy_type);
  const size_t dx_elem = ElementSize(d->dx_type);
  const size_t p_elem = ElementSize(d->param_type);
  GradSpans sp{};
  if ((rows > 0 &&
       (!RowsSpan(d->x, rows, cols, x_stride, x_elem, &sp.x) ||
        !RowsSpan(d->dy, rows, cols, dy_stride, dy_elem, &sp.dy) ||
        !RowsSpan(d->dx, rows, cols, dx_stride, dx_elem, &sp.dx) ||
        (d->gamma && !RowsSpan(d->gamma, 1, cols, cols, p_elem, &sp.gamma)))) ||
      (d->dgamma &&
       !RowsSpan(d->dgamma, 1, cols, cols, sizeof(float), &sp.dgamma)) ||
      (d->dbeta &&
       !RowsSpan(d->dbeta, 1, cols, cols, sizeof(float), &sp.dbeta)) ||
      (rows > 0 && saved_mean &&
       !RowsSpan(saved_mean, 1, rows, rows, sizeof(float), &sp.mean)) ||
      (rows > 0 && d->rstd &&
       !RowsSpan(d->rstd, 1, rows, rows, sizeof(float), &sp.rstd))) {
    return SIMDNORM_INVALID_SHAPE;
  }

  const simdnorm_status overlap = CheckGradOverlaps(
      sp, d->dx == d->dy && dx_elem == dy_elem && dx_stride == dy_stride);
  if (overlap != SIMDNORM_OK) return overlap;

  BackwardArgs& a = p->args;
  a.kind = kind;
  a.x = d->x;
  a.x_stride = x_stride;
  a.dy = d->dy;
  a.dy_stride = dy_stride;
  a.dx = d->dx;
  a.dx_stride = dx_stride;
  a.scale = nullptr;
  // x + -0 == x for every x: the zero offset changes nothing.
  p->gamma_offset = d->gamma_offset == 0.0f ? -0.0f : d->gamma_offset;
  a.scale_const = 1.0f + p->gamma_offset;
  a.cols = cols;
  a.eps = d->eps;
  a.mean = saved_mean;
  a.rstd = d->rstd;
  p->rows = rows;
  p->x_type = x_type;
  p->dy_type = dy_type;
  p->dx_type = dx_type;
  p->param_type = param_type;
  p->gamma = d->gamma;
  p->dgamma = d->dgamma;
  p->dbeta = d->dbeta;
  p->flags = d->flags;
  return SIMDNORM_OK;
}

namespace {

// The checks of the channel descriptors (group, batch) that need no
// pointer and no shape, in simdnorm.h's order; `more_ok` is false for a
// descriptor's own bad scalar (batch: momentum), INVALID_ARGUMENT with eps
// and the flags.
template <class Desc>
simdnorm_status CheckChannelFields(const Desc& d, bool more_ok) {
  const int layout = RawEnum(d.layout), param_type = RawEnum(d.param_type);
  const int x_type = RawEnum(d.x_type), y_type = RawEnum(d.y_type);
  if ((layout != SIMDNORM_NCHW && layout != SIMDNORM_NHWC) ||
      !ValidDType(x_type) || !ValidDType(y_type) || !ValidDType(param_type)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (x_type == SIMDNORM_I8 || y_type == SIMDNORM_I8 ||
      param_type == SIMDNORM_I8) {
    return SIMDNORM_UNSUPPORTED;
  }
  if (!(d.eps >= 0.0f) || !std::isfinite(d.eps) || !more_ok ||
      (d.flags & ~unsigned{SIMDNORM_FAST_ROUNDING}) != 0) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  return SIMDNORM_OK;
}

// The bytes of a channel descriptor's x, y and weights (those absent:
// empty spans, which overlap nothing).
struct ChannelSpans {
  Span x, y, gamma, beta;
};

// With n > 0: the pointers, shape and overlaps of x, y and the weights of
// a channel descriptor (one span of n * c * hw elements), *spans theirs.
template <class Desc>
simdnorm_status CheckChannelTensors(const Desc& d, size_t groups,
                                    ChannelSpans* spans) {
  if (d.x == nullptr || d.y == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  const size_t c = d.c, hw = d.hw;
  if (c == 0 || hw == 0 || groups == 0 || c % groups != 0) {
    return SIMDNORM_INVALID_SHAPE;
  }
  size_t per_sample, total;
  if (__builtin_mul_overflow(c, hw, &per_sample) ||
      __builtin_mul_overflow(per_sample, d.n, &total)) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const size_t x_elem = ElementSize(d.x_type), y_elem = ElementSize(d.y_type);
  const size_t p_elem = ElementSize(d.param_type);
  Span& x = spans->x;
  Span& y = spans->y;
  Span& gamma = spans->gamma;
  Span& beta = spans->beta;
  gamma = beta = Span{0, 0};
  if (!RowsSpan(d.x, 1, total, total, x_elem, &x) ||
      !RowsSpan(d.y, 1, total, total, y_elem, &y) ||
      (d.gamma && !RowsSpan(d.gamma, 1, c, c, p_elem, &gamma)) ||
      (d.beta && !RowsSpan(d.beta, 1, c, c, p_elem, &beta))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const bool y_is_x = d.y == d.x && y_elem == x_elem;
  if ((!y_is_x && Overlaps(y, x)) || (d.gamma && Overlaps(y, gamma)) ||
      (d.beta && Overlaps(y, beta))) {
    return SIMDNORM_OVERLAP;
  }
  return SIMDNORM_OK;
}

// The enums and weights of a validated channel descriptor, as its problem
// (GroupProblem, BatchProblem) holds them.
template <class Desc, class Problem>
void SetChannelOperands(const Desc& d, Problem* p) {
  p->layout = RawEnum(d.layout);
  p->x_type = RawEnum(d.x_type);
  p->y_type = RawEnum(d.y_type);
  p->param_type = RawEnum(d.param_type);
  p->gamma = d.gamma;
  p->beta = d.beta;
}

// The bytes of c floats at p (an empty span for null p).
Span FloatsSpan(const float* p, size_t c) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  return p ? Span{b, b + c * sizeof(float)} : Span{0, 0};
}

}  // namespace

// The group descriptor (group_norm.h): the same rules, with y the output
// and the tensor one span of n * c * hw elements.
simdnorm_status ValidateGroup(const simdnorm_group_desc* d, GroupProblem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  simdnorm_status s = CheckChannelFields(*d, true);
  if (s != SIMDNORM_OK) return s;
  p->n = d->n;
  if (d->n == 0) return SIMDNORM_OK;
  ChannelSpans sp;
  s = CheckChannelTensors(*d, d->groups, &sp);
  if (s != SIMDNORM_OK) return s;
  // The saved statistics (n * groups floats each, groups <= c: no overflow
  // of the count) against every other buffer and each other.
  const size_t units = d->n * d->groups;
  Span mean{}, rstd{};
  if ((d->mean_out &&
       !RowsSpan(d->mean_out, 1, units, units, sizeof(float), &mean)) ||
      (d->rstd_out &&
       !RowsSpan(d->rstd_out, 1, units, units, sizeof(float), &rstd))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  for (const Span& out : {mean, rstd}) {
    if (Overlaps(out, sp.x) || Overlaps(out, sp.y) || Overlaps(out, sp.gamma) ||
        Overlaps(out, sp.beta)) {
      return SIMDNORM_OVERLAP;
    }
  }
  if (Overlaps(mean, rstd)) return SIMDNORM_OVERLAP;

  GroupArgs& a = p->args;
  a.c = d->c;
  a.hw = d->hw;
  a.groups = d->groups;
  a.cg = d->c / d->groups;
  a.x = d->x;
  a.y = d->y;
  a.gamma = nullptr;
  a.beta = nullptr;
  a.eps = d->eps;
  a.correct_rounding = (d->flags & SIMDNORM_FAST_ROUNDING) == 0;
  a.mean_out = d->mean_out;
  a.rstd_out = d->rstd_out;
  SetChannelOperands(*d, p);
  return SIMDNORM_OK;
}

namespace {

// The enums of a channel backward descriptor (group, batch), read as raw
// integers and checked (a layout, then CheckGradTypes).
struct ChannelGradEnums {
  int layout, x_type, dy_type, dx_type, param_type;
};

template <class Desc>
simdnorm_status ReadChannelGradEnums(const Desc& d, ChannelGradEnums* e) {
  *e = {RawEnum(d.layout), RawEnum(d.x_type), RawEnum(d.dy_type),
        RawEnum(d.dx_type), RawEnum(d.param_type)};
  return CheckGradTypes(
      e->layout == SIMDNORM_NCHW || e->layout == SIMDNORM_NHWC, e->x_type,
      e->dy_type, e->dx_type, e->param_type);
}

}  // namespace

// The group backward descriptor (group_backward.h): the group rules for
// the shape, the row backward's for the outputs dx, dgamma and dbeta.
simdnorm_status ValidateGroupBackward(const simdnorm_group_backward_desc* d,
                                      GroupBackwardProblem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  ChannelGradEnums e;
  const simdnorm_status types = ReadChannelGradEnums(*d, &e);
  if (types != SIMDNORM_OK) return types;
  const int layout = e.layout, param_type = e.param_type;
  const int x_type = e.x_type, dy_type = e.dy_type, dx_type = e.dx_type;
  if (!(d->eps >= 0.0f) || !std::isfinite(d->eps) || d->flags != 0 ||
      (d->mean == nullptr) != (d->rstd == nullptr)) {  // saved: both or none
    return SIMDNORM_INVALID_ARGUMENT;
  }
  const size_t n = d->n, c = d->c, hw = d->hw, groups = d->groups;
  if (n > 0 && (d->x == nullptr || d->dy == nullptr || d->dx == nullptr))
    return SIMDNORM_INVALID_ARGUMENT;
  const bool has_sums = d->dgamma != nullptr || d->dbeta != nullptr;
  size_t total = 0;
  if ((n > 0 || has_sums) &&
      (c == 0 || hw == 0 || groups == 0 || c % groups != 0 ||
       __builtin_mul_overflow(c, hw, &total) ||
       __builtin_mul_overflow(total, n, &total))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const size_t x_elem = ElementSize(d->x_type);
  const size_t dy_elem = ElementSize(d->dy_type);
  const size_t dx_elem = ElementSize(d->dx_type);
  const size_t p_elem = ElementSize(d->param_type);
  GradSpans sp{};
  if ((n > 0 &&
       (!RowsSpan(d->x, 1, total, total, x_elem, &sp.x) ||
        !RowsSpan(d->dy, 1, total, total, dy_elem, &sp.dy) ||
        !RowsSpan(d->dx, 1, total, total, dx_elem, &sp.dx) ||
        (d->gamma && !RowsSpan(d->gamma, 1, c, c, p_elem, &sp.gamma)) ||
        (d->mean && !RowsSpan(d->mean, 1, n * groups, n * groups, sizeof(float),
                              &sp.mean)) ||
        (d->rstd && !RowsSpan(d->rstd, 1, n * groups, n * groups, sizeof(float),
                              &sp.rstd)))) ||
      (d->dgamma && !RowsSpan(d->dgamma, 1, c, c, sizeof(float), &sp.dgamma)) ||
      (d->dbeta && !RowsSpan(d->dbeta, 1, c, c, sizeof(float), &sp.dbeta))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // dx == dy: the same pointer and element size (the same layout).
  const simdnorm_status overlap =
      CheckGradOverlaps(sp, d->dx == d->dy && dx_elem == dy_elem);
  if (overlap != SIMDNORM_OK) return overlap;

  GroupBackwardArgs& a = p->args;
  a.stats = GroupArgs{c,     hw,      groups,  groups ? c / groups : 0,
                      d->x,  nullptr, nullptr, nullptr,
                      d->eps};
  a.dy = d->dy;
  a.dy_type = dy_type;
  a.dx = d->dx;
  a.dx_type = dx_type;
  a.gamma = nullptr;
  a.dgamma_part = a.dbeta_part = nullptr;
  a.mean = n > 0 ? d->mean : nullptr;
  a.rstd = n > 0 ? d->rstd : nullptr;
  p->n = n;
  p->layout = layout;
  p->x_type = x_type;
  p->param_type = param_type;
  p->gamma = d->gamma;
  p->dgamma = d->dgamma;
  p->dbeta = d->dbeta;
  return SIMDNORM_OK;
}

// The batch descriptor (batch_norm.h): the group rules with one group, and
// the per-channel float arrays: running statistics (both or neither;
// required for inference; outputs in training) and save_* (training
// outputs, ignored in inference).
simdnorm_status ValidateBatch(const simdnorm_batch_desc* d, BatchProblem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  simdnorm_status s = CheckChannelFields(*d, std::isfinite(d->momentum));
  if (s != SIMDNORM_OK) return s;
  const bool training = d->training != 0;
  if ((d->running_mean == nullptr) != (d->running_var == nullptr) ||
      (!training && d->running_mean == nullptr)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  p->args.n = d->n;
  if (d->n == 0) return SIMDNORM_OK;
  ChannelSpans sp;
  s = CheckChannelTensors(*d, 1, &sp);
  if (s != SIMDNORM_OK) return s;
  if (training && d->n * d->hw == 1) return SIMDNORM_INVALID_SHAPE;
  const size_t c = d->c;
  const Span y = sp.y;
  const Span rm = FloatsSpan(d->running_mean, c);
  const Span rv = FloatsSpan(d->running_var, c);
  const Span sm = FloatsSpan(training ? d->save_mean : nullptr, c);
  const Span si = FloatsSpan(training ? d->save_invstd : nullptr, c);
  if (rm.end < rm.begin || rv.end < rv.begin || sm.end < sm.begin ||
      si.end < si.begin) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // y against everything else; in training, each per-channel output
  // against every other operand. Empty spans overlap nothing.
  const Span outs[] = {rm, rv, sm, si};
  const Span ins[] = {sp.x, sp.gamma, sp.beta};
  for (size_t i = 0; i < 4; ++i) {
    if (Overlaps(y, outs[i])) return SIMDNORM_OVERLAP;
    if (!training) continue;
    for (const Span& in : ins) {
      if (Overlaps(outs[i], in)) return SIMDNORM_OVERLAP;
    }
    for (size_t j = i + 1; j < 4; ++j) {
      if (Overlaps(outs[i], outs[j])) return SIMDNORM_OVERLAP;
    }
  }

  BatchArgs& a = p->args;
  a.c = c;
  a.hw = d->hw;
  a.x = d->x;
  a.y = d->y;
  a.gamma = a.beta = nullptr;
  a.running_mean = d->running_mean;
  a.running_var = d->running_var;
  a.eps = d->eps;
  a.training = training;
  a.mean = a.var = nullptr;
  a.correct_rounding = (d->flags & SIMDNORM_FAST_ROUNDING) == 0;
  SetChannelOperands(*d, p);
  p->running_mean = d->running_mean;
  p->running_var = d->running_var;
  p->save_mean = training ? d->save_mean : nullptr;
  p->save_invstd = training ? d->save_invstd : nullptr;
  p->momentum = d->momentum;
  return SIMDNORM_OK;
}

// BatchNorm's backward (batch_backward.h): the batch rules for x, dy and
// dx (one span of n * c * hw elements each, dx may be exactly dy), the
// running statistics as inputs (inference only), dgamma and dbeta as
// outputs of c floats.
simdnorm_status ValidateBatchBackward(const simdnorm_batch_backward_desc* d,
                                      BatchBackwardProblem* p) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  ChannelGradEnums e;
  const simdnorm_status types = ReadChannelGradEnums(*d, &e);
  if (types != SIMDNORM_OK) return types;
  const int layout = e.layout, param_type = e.param_type;
  const int x_type = e.x_type, dy_type = e.dy_type, dx_type = e.dx_type;
  const bool training = d->training != 0;
  if (!(d->eps >= 0.0f) || !std::isfinite(d->eps) || d->flags != 0 ||
      (!training &&
       (d->running_mean == nullptr || d->running_var == nullptr)) ||
      (training && (d->save_mean == nullptr) != (d->save_invstd == nullptr))) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  const size_t c = d->c, hw = d->hw;
  BatchBackwardArgs& a = p->args;
  a.n = d->n;
  a.c = c;
  a.dgamma = d->dgamma;
  a.dbeta = d->dbeta;
  // dgamma and dbeta: c floats whose end does not wrap.
  const bool sums_fit = c <= SIZE_MAX / sizeof(float);
  const Span dgamma = FloatsSpan(sums_fit ? d->dgamma : nullptr, c);
  const Span dbeta = FloatsSpan(sums_fit ? d->dbeta : nullptr, c);
  const bool sums_bad =
      (d->dgamma || d->dbeta) &&
      (!sums_fit || dgamma.end < dgamma.begin || dbeta.end < dbeta.begin);
  if (d->n == 0) {
    if (sums_bad) return SIMDNORM_INVALID_SHAPE;
    return Overlaps(dgamma, dbeta) ? SIMDNORM_OVERLAP : SIMDNORM_OK;
  }
  if (d->x == nullptr || d->dy == nullptr || d->dx == nullptr) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  size_t per_sample, total;
  if (c == 0 || hw == 0 || sums_bad ||
      __builtin_mul_overflow(c, hw, &per_sample) ||
      __builtin_mul_overflow(per_sample, d->n, &total)) {
    return SIMDNORM_INVALID_SHAPE;
  }
  if (training && d->n * hw == 1) return SIMDNORM_INVALID_SHAPE;
  const size_t x_elem = ElementSize(d->x_type);
  const size_t dy_elem = ElementSize(d->dy_type);
  const size_t dx_elem = ElementSize(d->dx_type);
  const size_t p_elem = ElementSize(d->param_type);
  Span x, dy, dx, gamma{};
  if (!RowsSpan(d->x, 1, total, total, x_elem, &x) ||
      !RowsSpan(d->dy, 1, total, total, dy_elem, &dy) ||
      !RowsSpan(d->dx, 1, total, total, dx_elem, &dx) ||
      (d->gamma && !RowsSpan(d->gamma, 1, c, c, p_elem, &gamma))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // The per-channel inputs: running statistics in inference, the saved
  // ones in training (each mode ignores the other's).
  const Span rm = FloatsSpan(training ? nullptr : d->running_mean, c);
  const Span rv = FloatsSpan(training ? nullptr : d->running_var, c);
  const Span sm = FloatsSpan(training ? d->save_mean : nullptr, c);
  const Span si = FloatsSpan(training ? d->save_invstd : nullptr, c);
  if ((training && d->save_mean && !sums_fit) || sm.end < sm.begin ||
      si.end < si.begin) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // Each output against every other buffer; the one exception is dx == dy
  // exactly. Empty spans overlap nothing.
  const bool dx_is_dy = d->dx == d->dy && dx_elem == dy_elem;
  const Span ins[] = {x, gamma, rm, rv, sm, si};
  const Span outs[] = {dx, dgamma, dbeta};
  for (size_t i = 0; i < 3; ++i) {
    for (const Span& in : ins) {
      if (Overlaps(outs[i], in)) return SIMDNORM_OVERLAP;
    }
    if (Overlaps(outs[i], dy) && !(i == 0 && dx_is_dy)) {
      return SIMDNORM_OVERLAP;
    }
    for (size_t j = i + 1; j < 3; ++j) {
      if (Overlaps(outs[i], outs[j])) return SIMDNORM_OVERLAP;
    }
  }

  a.hw = hw;
  a.x = d->x;
  a.dy = d->dy;
  a.dx = d->dx;
  a.gamma = nullptr;
  a.running_mean = training ? nullptr : d->running_mean;
  a.running_var = training ? nullptr : d->running_var;
  a.save_mean = training ? d->save_mean : nullptr;
  a.save_invstd = training ? d->save_invstd : nullptr;
  a.eps = d->eps;
  a.training = training;
  p->layout = layout;
  p->x_type = x_type;
  p->dy_type = dy_type;
  p->dx_type = dx_type;
  p->param_type = param_type;
  p->gamma = d->gamma;
  return SIMDNORM_OK;
}

}  // namespace internal
}  // namespace simdnorm
