// The descriptor's compatibility promise (simdnorm.h): a program built with an
// older, shorter simdnorm_desc is served as if its missing fields were zero,
// and a newer program's longer one as long as the fields this library does
// not know are zero. Also the version macros and functions.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_test {
namespace {

// simdnorm 0.1's descriptor: the fields up to max_threads.
struct DescV01 {
  simdnorm_kind kind;
  size_t rows;
  size_t cols;
  const void* x;
  simdnorm_dtype x_type;
  size_t x_stride;
  void* y;
  simdnorm_dtype y_type;
  size_t y_stride;
  const void* gamma;
  const void* beta;
  simdnorm_dtype param_type;
  float eps;
  size_t max_threads;
};
static_assert(sizeof(DescV01) == SIMDNORM_DESC_MIN_SIZE,
              "0.1's layout is the smallest accepted");

// A later version's descriptor: this one plus two fields.
struct DescNext {
  simdnorm_desc d;
  uint64_t future[2];
};

constexpr size_t kRows = 3, kCols = 37;

std::vector<float> Input() {
  std::vector<float> x(kRows * kCols);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 11) - 4.5f;
  return x;
}

simdnorm_desc Full(const float* x, float* y, const float* gamma) {
  simdnorm_desc d = {};
  d.kind = SIMDNORM_RMSNORM;
  d.rows = kRows;
  d.cols = kCols;
  d.x = x;
  d.y = y;
  d.gamma = gamma;
  d.eps = 1e-5f;
  return d;
}

using Entry = simdnorm_status (*)(const simdnorm_desc*, size_t);

class AbiTest : public ::testing::TestWithParam<Entry> {};

// The old struct lives in a heap block of exactly its size: under
// AddressSanitizer a read past it is reported.
TEST_P(AbiTest, OlderShorterLayoutIsServed) {
  const std::vector<float> x = Input(), gamma(kCols, 1.25f);
  std::vector<float> want(kRows * kCols), got(kRows * kCols, -1.0f);
  const simdnorm_desc full = Full(x.data(), want.data(), gamma.data());
  ASSERT_EQ(GetParam()(&full, sizeof full), SIMDNORM_OK);

  auto old = std::make_unique<DescV01>();
  std::memcpy(old.get(), &full, sizeof(DescV01));
  old->y = got.data();
  ASSERT_EQ(GetParam()(reinterpret_cast<const simdnorm_desc*>(old.get()),
                       sizeof(DescV01)),
            SIMDNORM_OK);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4));
}

// Fields after the old layout are zero for an old caller, whatever bytes
// follow its struct in memory.
TEST_P(AbiTest, BytesPastAShortLayoutAreNotRead) {
  const std::vector<float> x = Input();
  std::vector<float> want(kRows * kCols), got(kRows * kCols);
  const simdnorm_desc full = Full(x.data(), want.data(), nullptr);
  ASSERT_EQ(GetParam()(&full, sizeof full), SIMDNORM_OK);
  simdnorm_desc garbage;
  std::memset(static_cast<void*>(&garbage), 0xA5, sizeof garbage);
  std::memcpy(static_cast<void*>(&garbage), &full, SIMDNORM_DESC_MIN_SIZE);
  garbage.y = got.data();
  ASSERT_EQ(GetParam()(&garbage, SIMDNORM_DESC_MIN_SIZE), SIMDNORM_OK);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4));
}

TEST_P(AbiTest, NewerLayoutWithZeroUnknownFieldsIsServed) {
  const std::vector<float> x = Input();
  std::vector<float> want(kRows * kCols), got(kRows * kCols);
  const simdnorm_desc full = Full(x.data(), want.data(), nullptr);
  ASSERT_EQ(GetParam()(&full, sizeof full), SIMDNORM_OK);
  DescNext next = {};
  next.d = full;
  next.d.y = got.data();
  ASSERT_EQ(GetParam()(&next.d, sizeof next), SIMDNORM_OK);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4));
}

TEST_P(AbiTest, NewerLayoutWithAnUnknownFieldSetIsUnsupported) {
  const std::vector<float> x = Input();
  std::vector<float> y(kRows * kCols, 7.0f);
  DescNext next = {};
  next.d = Full(x.data(), y.data(), nullptr);
  next.future[1] = 1;
  EXPECT_EQ(GetParam()(&next.d, sizeof next), SIMDNORM_UNSUPPORTED);
  for (float v : y) ASSERT_EQ(v, 7.0f);  // nothing written
}

TEST_P(AbiTest, TooSmallOrNullIsInvalid) {
  const std::vector<float> x = Input();
  std::vector<float> y(kRows * kCols, 7.0f);
  const simdnorm_desc full = Full(x.data(), y.data(), nullptr);
  EXPECT_EQ(GetParam()(&full, SIMDNORM_DESC_MIN_SIZE - 1),
            SIMDNORM_INVALID_ARGUMENT);
  EXPECT_EQ(GetParam()(&full, 0), SIMDNORM_INVALID_ARGUMENT);
  EXPECT_EQ(GetParam()(nullptr, sizeof full), SIMDNORM_INVALID_ARGUMENT);
  for (float v : y) ASSERT_EQ(v, 7.0f);
}

INSTANTIATE_TEST_SUITE_P(Entries, AbiTest,
                         ::testing::Values(&simdnorm_normalize_sized,
                                           &simdnorm_normalize_reference_sized),
                         [](const ::testing::TestParamInfo<Entry>& info) {
                           return std::string(info.index == 0 ? "kernels"
                                                              : "reference");
                         });

TEST(AbiReferenceF64, OlderLayoutIsServed) {
  const std::vector<float> x = Input();
  std::vector<float> y(kRows * kCols);
  const simdnorm_desc full = Full(x.data(), y.data(), nullptr);
  std::vector<double> want(kRows * kCols), got(kRows * kCols);
  ASSERT_EQ(simdnorm::reference_f64(full, want.data(), nullptr),
            simdnorm::Status::kOk);
  auto old = std::make_unique<DescV01>();
  std::memcpy(old.get(), &full, sizeof(DescV01));
  ASSERT_EQ(
      simdnorm::reference_f64(reinterpret_cast<const simdnorm_desc*>(old.get()),
                              sizeof(DescV01), got.data(), nullptr),
      simdnorm::Status::kOk);
  EXPECT_EQ(want, got);
}

TEST(Version, HeaderAndLibraryAgree) {
  EXPECT_EQ(simdnorm_version(), unsigned{SIMDNORM_VERSION});
  const std::string want = std::to_string(SIMDNORM_VERSION_MAJOR) + "." +
                           std::to_string(SIMDNORM_VERSION_MINOR) + "." +
                           std::to_string(SIMDNORM_VERSION_PATCH);
  EXPECT_EQ(want, simdnorm_version_string());
}

}  // namespace
}  // namespace simdnorm_test
