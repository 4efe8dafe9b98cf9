// The names and sizes of simdnorm's kinds and dtypes, and the combinations
// of (x_type, y_type, param_type) the tests run.
#ifndef SIMDNORM_TESTS_SUPPORT_DTYPES_H_
#define SIMDNORM_TESTS_SUPPORT_DTYPES_H_

#include <cstddef>
#include <vector>

#include "simdnorm/simdnorm.h"

namespace simdnorm_test {

// Every row kind of the library's registry of operations (simdnorm_op_at;
// descriptor SIMDNORM_ROW_DESC), in order: the tests that hold for any
// kind of simdnorm_desc loop over these.
std::vector<simdnorm_kind> AllKinds();
// Its title in the registry ("LayerNorm", "RMSNorm", "L2Norm").
const char* KindName(simdnorm_kind k);
const char* DTypeName(simdnorm_dtype t);

inline size_t ElemSize(simdnorm_dtype t) {
  return t == SIMDNORM_F32 ? 4 : t == SIMDNORM_I8 ? 1 : 2;
}
// BF16 or F16: the two 16-bit float types.
inline bool Is16(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 || t == SIMDNORM_F16;
}

struct DTypes {
  simdnorm_dtype x, y, param;
};

// The 8 combinations of (x_type, y_type, param_type).
std::vector<DTypes> AllDTypes();

// The 19 combinations of (x_type, y_type, param_type) over F32, BF16 and F16
// that involve F16 (the other 8 are AllDTypes()).
std::vector<DTypes> F16DTypes();

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_DTYPES_H_
