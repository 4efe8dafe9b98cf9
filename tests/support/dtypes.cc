#include "support/dtypes.h"

namespace simdnorm_test {

std::vector<simdnorm_kind> AllKinds() {
  std::vector<simdnorm_kind> kinds;
  for (size_t i = 0; const simdnorm_op_info* op = simdnorm_op_at(i); ++i) {
    if (op->descriptor == SIMDNORM_ROW_DESC) kinds.push_back(op->kind);
  }
  return kinds;
}

const char* KindName(simdnorm_kind k) {
  const simdnorm_op_info* op = simdnorm_op_of(k);
  return op ? op->title : "?";
}

const char* DTypeName(simdnorm_dtype t) {
  switch (t) {
    case SIMDNORM_F32:
      return "F32";
    case SIMDNORM_BF16:
      return "BF16";
    case SIMDNORM_F16:
      return "F16";
    case SIMDNORM_I8:
      return "I8";
  }
  return "?";
}

std::vector<DTypes> DTypeCombinations(
    std::initializer_list<simdnorm_dtype> types, bool need_f16) {
  std::vector<DTypes> v;
  for (simdnorm_dtype x : types) {
    for (simdnorm_dtype y : types) {
      for (simdnorm_dtype p : types) {
        const bool f16 =
            x == SIMDNORM_F16 || y == SIMDNORM_F16 || p == SIMDNORM_F16;
        if (!need_f16 || f16) v.push_back({x, y, p});
      }
    }
  }
  return v;
}

}  // namespace simdnorm_test
