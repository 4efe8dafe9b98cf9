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
  RowArgs args;  // strides resolved (never 0)
  size_t rows;
  int kind, x_type, y_type, param_type;
};

size_t ElementSize(simdnorm_dtype t);

// SIMDNORM_OK with *p filled (p->rows may be 0: nothing to do), or the
// status naming the first problem found.
simdnorm_status Validate(const simdnorm_desc* d, Problem* p);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_VALIDATE_H_
