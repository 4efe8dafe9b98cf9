#include "support/isa_test.h"

#include "simdnorm/simdnorm.h"

namespace simdnorm_test {

std::string IsaTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s) {
    const bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                       (ch >= 'A' && ch <= 'Z');
    if (!alnum) ch = '_';
  }
  return s.empty() ? "unnamed" : s;
}

void IsaTest::SetUp() {
  ASSERT_EQ(simdnorm_set_isa(GetParam().c_str()), SIMDNORM_OK) << GetParam();
  const char* active = simdnorm_active_isa();
  ASSERT_NE(active, nullptr);
  ASSERT_STREQ(active, GetParam().c_str());
}

void IsaTest::TearDown() { EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK); }

}  // namespace simdnorm_test
