// Validation of a descriptor at the API edge. Everything below it assumes a
// valid problem.
#ifndef SIMDNORM_LIB_VALIDATE_H_
#define SIMDNORM_LIB_VALIDATE_H_

#include <cstddef>

#include "lib/kernel_table.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

struct Problem {
  // Strides resolved (never 0), gamma_offset -0 for 0, quant_group in
  // [1, cols] (cols when y_type is not I8) and scales_per_row =
  // ceil(cols / quant_group).
  RowArgs args;
  size_t rows;
  int x_type, y_type, param_type;  // the kind is args.kind
};

inline size_t ElementSize(simdnorm_dtype t) {
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

// SIMDNORM_OK with *p filled (p->rows may be 0: nothing to do, and then
// only p->rows is set), or the status naming the first problem found, in
// this order: enums (I8 as x_type or param_type: UNSUPPORTED), y_scale and
// quant_group against y_type, eps, gamma_offset, flags; then, when rows > 0,
// NULL pointers, shapes and sizes, overlaps.
simdnorm_status Validate(const simdnorm_desc* d, Problem* p);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_VALIDATE_H_
