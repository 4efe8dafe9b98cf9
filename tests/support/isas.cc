#include "support/isas.h"

#include <cstddef>

#include "simdnorm/simdnorm.h"

namespace simdnorm_test {

std::vector<std::string> SupportedIsas() {
  std::vector<std::string> v;
  for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
    const char* n = simdnorm_isa_name(i);
    if (n) v.push_back(n);
  }
  return v;
}

}  // namespace simdnorm_test
