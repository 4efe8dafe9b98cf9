// Tests run once per ISA: the parameterized fixture that forces one of the
// supported ISAs (support/isas.h) for the duration of a test.
#ifndef SIMDNORM_TESTS_SUPPORT_ISA_TEST_H_
#define SIMDNORM_TESTS_SUPPORT_ISA_TEST_H_

#include <gtest/gtest.h>

#include <string>

#include "support/isas.h"

namespace simdnorm_test {

// The ISA's name as a test name: characters other than [0-9A-Za-z]
// become '_'.
std::string IsaTestName(const ::testing::TestParamInfo<std::string>& info);

// Forces the ISA of the test parameter for the duration of the test.
class IsaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;
};

}  // namespace simdnorm_test

// Declares a per-ISA fixture; instantiate it at the end of the file with
// SIMDNORM_INSTANTIATE_PER_ISA. Test names read PerIsa/Fixture.Test/AVX3.
#define SIMDNORM_ISA_FIXTURE(Fixture) \
  class Fixture : public ::simdnorm_test::IsaTest {}

#define SIMDNORM_INSTANTIATE_PER_ISA(Fixture)                                 \
  INSTANTIATE_TEST_SUITE_P(                                                   \
      PerIsa, Fixture, ::testing::ValuesIn(::simdnorm_test::SupportedIsas()), \
      ::simdnorm_test::IsaTestName)

#endif  // SIMDNORM_TESTS_SUPPORT_ISA_TEST_H_
