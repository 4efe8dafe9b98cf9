// The names and sizes of simdnorm's kinds and dtypes, and the combinations
// of (x_type, y_type, param_type) the tests run.
#ifndef SIMDNORM_TESTS_SUPPORT_DTYPES_H_
#define SIMDNORM_TESTS_SUPPORT_DTYPES_H_

#include <cstddef>
#include <initializer_list>
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

// The dtypes of x, y and the weights (gamma, beta) of one call.
struct DTypes {
  simdnorm_dtype x = SIMDNORM_F32, y = SIMDNORM_F32, param = SIMDNORM_F32;
  bool operator==(const DTypes& o) const {
    return x == o.x && y == o.y && param == o.param;
  }
};

// Every (x_type, y_type, param_type) over `types`, x major (F32/F32/F32,
// F32/F32/BF16, ...); with need_f16 only those that involve F16.
std::vector<DTypes> DTypeCombinations(
    std::initializer_list<simdnorm_dtype> types, bool need_f16 = false);

// The 8 combinations of (x_type, y_type, param_type) over F32 and BF16.
inline std::vector<DTypes> AllDTypes() {
  return DTypeCombinations({SIMDNORM_F32, SIMDNORM_BF16});
}

// The 19 combinations of (x_type, y_type, param_type) over F32, BF16 and F16
// that involve F16 (the other 8 are AllDTypes()).
inline std::vector<DTypes> F16DTypes() {
  return DTypeCombinations({SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}, true);
}

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_DTYPES_H_
