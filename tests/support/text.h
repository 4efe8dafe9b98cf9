// Numbers as the messages of the tests print them.
#ifndef SIMDNORM_TESTS_SUPPORT_TEXT_H_
#define SIMDNORM_TESTS_SUPPORT_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace simdnorm_test {

// "0x" and v in `digits` upper-case hex digits (zero-padded): Hex(5, 4)
// is "0x0005".
std::string Hex(uint32_t v, int digits);
// v with 9 significant digits (%.9g): enough to tell floats apart.
std::string Num(double v);
// 100 a / b (100 when b is 0).
double Percent(size_t a, size_t b);

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_TEXT_H_
