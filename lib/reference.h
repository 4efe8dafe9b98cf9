// What the float64 references (reference.cc, reference_backward.cc) share.
#ifndef SIMDNORM_LIB_REFERENCE_H_
#define SIMDNORM_LIB_REFERENCE_H_

#include <cstddef>

#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

// Element i of base, of F32, BF16 or F16: v rounded once, to nearest-even
// (I8: nothing; those outputs are quantized per group).
void StoreRounded(void* base, simdnorm_dtype t, size_t i, double v);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_REFERENCE_H_
