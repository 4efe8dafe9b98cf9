// The ISAs the library offers on this machine.
#ifndef SIMDNORM_TESTS_SUPPORT_ISAS_H_
#define SIMDNORM_TESTS_SUPPORT_ISAS_H_

#include <string>
#include <vector>

namespace simdnorm_test {

// The ISAs this machine supports, as listed by the library (best first).
std::vector<std::string> SupportedIsas();

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_ISAS_H_
