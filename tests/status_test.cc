// Statuses: every bad argument of the normalize entry points (C and C++,
// kernels and reference) gives its status with nothing written; ISA
// selection; status strings.
#include <cctype>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/matrix.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

enum class Entry { kC, kCReference, kCpp, kCppReference };

simdnorm_status Call(Entry e, const simdnorm_desc& d) {
  switch (e) {
    case Entry::kC:
      return simdnorm_normalize(&d);
    case Entry::kCReference:
      return simdnorm_normalize_reference(&d);
    case Entry::kCpp:
      return static_cast<simdnorm_status>(simdnorm::normalize(d));
    case Entry::kCppReference:
      return static_cast<simdnorm_status>(simdnorm::normalize_reference(d));
  }
  return SIMDNORM_OK;
}

std::string EntryName(const ::testing::TestParamInfo<Entry>& info) {
  switch (info.param) {
    case Entry::kC:
      return "simdnorm_normalize";
    case Entry::kCReference:
      return "simdnorm_normalize_reference";
    case Entry::kCpp:
      return "cpp_normalize";
    case Entry::kCppReference:
      return "cpp_normalize_reference";
  }
  return "unknown";
}

// Writes an out-of-range value into an enum field without an out-of-range
// enum conversion in the test itself.
template <class E>
void SetRaw(E* field, int value) {
  static_assert(sizeof(E) == sizeof(int), "enum fields are int-sized");
  std::memcpy(field, &value, sizeof(value));
}

// All buffers live in one arena of 512 floats so that overlaps can be laid
// out at will. The default layout (float indices): x 4 x 8 at 32, y at 128,
// gamma at 256, beta at 288.
class StatusTest : public ::testing::TestWithParam<Entry> {
 protected:
  static constexpr size_t kArena = 512;

  void SetUp() override {
    arena_.resize(kArena);
    std::memset(arena_.data(), kSentinel, kArena * sizeof(float));
    for (size_t i = 0; i < 48; ++i)
      *F(32 + i) = 0.25f * static_cast<float>(i % 9);
    for (size_t i = 0; i < 8; ++i) {
      *F(256 + i) = 1.0f + 0.125f * static_cast<float>(i);
      *F(288 + i) = 0.5f - 0.125f * static_cast<float>(i);
    }
  }

  float* F(size_t i) { return arena_.data() + i; }
  // A pointer `bytes` bytes into the arena.
  void* B(size_t bytes) {
    return reinterpret_cast<unsigned char*>(arena_.data()) + bytes;
  }

  simdnorm_desc Base() {
    simdnorm_desc d{};
    d.kind = SIMDNORM_LAYERNORM;
    d.rows = 4;
    d.cols = 8;
    d.x = F(32);
    d.x_type = SIMDNORM_F32;
    d.y = F(128);
    d.y_type = SIMDNORM_F32;
    d.gamma = F(256);
    d.beta = F(288);
    d.param_type = SIMDNORM_F32;
    d.eps = 1e-5f;
    return d;
  }

  // Expects status `want`; unless the call may write (`may_write`), every
  // byte of the arena must be unchanged.
  void Expect(const simdnorm_desc& d, simdnorm_status want, const char* what,
              bool may_write = false) {
    const std::vector<float> before = arena_;
    const simdnorm_status got = Call(GetParam(), d);
    EXPECT_EQ(got, want) << what << ": got " << simdnorm_status_string(got)
                         << ", want " << simdnorm_status_string(want);
    if (!may_write) {
      EXPECT_EQ(
          std::memcmp(before.data(), arena_.data(), kArena * sizeof(float)), 0)
          << what << ": memory was written (status "
          << simdnorm_status_string(got) << ")";
    }
    arena_ = before;
  }
  void ExpectOk(const simdnorm_desc& d, const char* what) {
    Expect(d, SIMDNORM_OK, what, /*may_write=*/true);
  }

  std::vector<float> arena_;
};

TEST_P(StatusTest, BaseDescriptorIsValidAndWritesY) {
  const std::vector<float> before = arena_;
  ASSERT_EQ(Call(GetParam(), Base()), SIMDNORM_OK);
  EXPECT_NE(std::memcmp(before.data() + 128, arena_.data() + 128, 32 * 4), 0);
  EXPECT_EQ(std::memcmp(before.data() + 160, arena_.data() + 160, 352 * 4), 0)
      << "wrote past y";
  EXPECT_EQ(std::memcmp(before.data(), arena_.data(), 128 * 4), 0)
      << "wrote before y";
}

TEST_P(StatusTest, NullPointers) {
  simdnorm_desc d = Base();
  d.x = nullptr;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "x NULL, rows 4");
  d = Base();
  d.y = nullptr;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "y NULL, rows 4");
  d = Base();
  d.x = nullptr;
  d.y = nullptr;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "x and y NULL, rows 4");
}

TEST_P(StatusTest, ZeroRowsIsOkAndTouchesNothing) {
  simdnorm_desc d = Base();
  d.rows = 0;
  Expect(d, SIMDNORM_OK, "rows 0");
  d.x = nullptr;
  Expect(d, SIMDNORM_OK, "rows 0, x NULL");
  d.y = nullptr;
  Expect(d, SIMDNORM_OK, "rows 0, x and y NULL");
  d = Base();
  d.rows = 0;
  d.y = nullptr;
  Expect(d, SIMDNORM_OK, "rows 0, y NULL");
}

TEST_P(StatusTest, BadEps) {
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float eps;
    const char* what;
  } cases[] = {
      {-1e-5f, "eps -1e-5"},
      {-FLT_MIN, "eps -FLT_MIN"},
      {-inf, "eps -inf"},
      {inf, "eps +inf"},
      {std::numeric_limits<float>::quiet_NaN(), "eps NaN"},
      {-std::numeric_limits<float>::quiet_NaN(), "eps -NaN"},
  };
  for (const auto& c : cases) {
    simdnorm_desc d = Base();
    d.eps = c.eps;
    Expect(d, SIMDNORM_INVALID_ARGUMENT, c.what);
    d.kind = SIMDNORM_RMSNORM;
    Expect(d, SIMDNORM_INVALID_ARGUMENT, c.what);
  }
  simdnorm_desc d = Base();
  d.eps = FLT_MAX;  // large but finite is valid
  ExpectOk(d, "eps FLT_MAX");
}

TEST_P(StatusTest, UnknownEnums) {
  // The first value past the registry's kinds, and others.
  for (int bad : {static_cast<int>(simdnorm_op_count()), 7, -1}) {
    simdnorm_desc d = Base();
    SetRaw(&d.kind, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT,
           ("kind " + std::to_string(bad)).c_str());
    d.rows = 0;
    Expect(d, SIMDNORM_INVALID_ARGUMENT,
           ("kind " + std::to_string(bad) + ", rows 0").c_str());
  }
  for (int bad : {4, 7, -1}) {  // 0..3 are F32, BF16, F16, I8
    const std::string v = std::to_string(bad);
    simdnorm_desc d = Base();
    SetRaw(&d.x_type, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT, ("x_type " + v).c_str());
    d = Base();
    SetRaw(&d.y_type, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT, ("y_type " + v).c_str());
    d = Base();
    SetRaw(&d.param_type, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT, ("param_type " + v).c_str());
    d.gamma = nullptr;
    Expect(d, SIMDNORM_INVALID_ARGUMENT,
           ("param_type " + v + ", beta only").c_str());
    d.beta = nullptr;
    Expect(d, SIMDNORM_INVALID_ARGUMENT,
           ("param_type " + v + ", no parameters").c_str());
    d = Base();
    d.rows = 0;
    SetRaw(&d.y_type, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT, ("y_type " + v + ", rows 0").c_str());
  }
}

// ------------------------------------------- issue #7 fields: validation

// Free arena regions for the new operands (float indices): residual at 192,
// sum_out at 320, y_scale at 400 (x [32, 64), y [128, 160), gamma
// [256, 264), beta [288, 296)).
constexpr size_t kResidual = 192, kSumOut = 320, kScales = 400;

TEST_P(StatusTest, NewDTypesAreValid) {
  for (simdnorm_dtype t : {SIMDNORM_F16, SIMDNORM_BF16, SIMDNORM_F32}) {
    simdnorm_desc d = Base();
    d.x_type = t;
    d.y_type = t;
    d.param_type = t;
    ExpectOk(d, "x, y and parameters of one type");
  }
  simdnorm_desc d = Base();
  d.y_type = SIMDNORM_I8;
  d.y_scale = F(kScales);
  ExpectOk(d, "I8 y with scales");
  d.quant_group = 3;
  ExpectOk(d, "I8 y, groups of 3");
  d.quant_group = 100;
  ExpectOk(d, "I8 y, group longer than the row");
}

TEST_P(StatusTest, I8OnlyAsOutput) {
  simdnorm_desc d = Base();
  d.x_type = SIMDNORM_I8;
  Expect(d, SIMDNORM_UNSUPPORTED, "x_type I8");
  d.rows = 0;
  Expect(d, SIMDNORM_UNSUPPORTED, "x_type I8, rows 0");
  d = Base();
  d.param_type = SIMDNORM_I8;
  Expect(d, SIMDNORM_UNSUPPORTED, "param_type I8");
  d.gamma = nullptr;
  d.beta = nullptr;
  Expect(d, SIMDNORM_UNSUPPORTED, "param_type I8, no parameters");
  d = Base();
  d.x_type = SIMDNORM_I8;
  d.y_type = SIMDNORM_I8;
  d.y_scale = F(kScales);
  Expect(d, SIMDNORM_UNSUPPORTED, "x_type and y_type I8");
  // An unknown value is reported first (INVALID_ARGUMENT).
  d = Base();
  d.x_type = SIMDNORM_I8;
  SetRaw(&d.y_type, 9);
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "x_type I8, y_type 9");
}

TEST_P(StatusTest, ScalesGoWithI8Output) {
  simdnorm_desc d = Base();
  d.y_type = SIMDNORM_I8;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "I8 y, y_scale NULL");
  d.quant_group = 4;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "I8 y, y_scale NULL, group 4");
  d.rows = 0;  // like x and y, a NULL pointer is fine with no rows
  Expect(d, SIMDNORM_OK, "I8 y, y_scale NULL, rows 0");

  for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
    const std::string name = t == SIMDNORM_F32    ? "F32"
                             : t == SIMDNORM_BF16 ? "BF16"
                                                  : "F16";
    for (size_t rows : {4u, 0u}) {
      const std::string what = name + " y, rows " + std::to_string(rows);
      d = Base();
      d.rows = rows;
      d.y_type = t;
      d.y_scale = F(kScales);
      Expect(d, SIMDNORM_INVALID_ARGUMENT, (what + ", y_scale set").c_str());
      d.quant_group = 8;
      Expect(d, SIMDNORM_INVALID_ARGUMENT,
             (what + ", y_scale and quant_group set").c_str());
      d.y_scale = nullptr;
      Expect(d, SIMDNORM_INVALID_ARGUMENT, (what + ", quant_group 8").c_str());
      d.quant_group = 1;
      Expect(d, SIMDNORM_INVALID_ARGUMENT, (what + ", quant_group 1").c_str());
    }
  }
}

TEST_P(StatusTest, BadGammaOffset) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float off : {inf, -inf, nan, -nan}) {
    for (size_t rows : {4u, 0u}) {
      simdnorm_desc d = Base();
      d.rows = rows;
      d.gamma_offset = off;
      const std::string what =
          "gamma_offset " + Num(off) + ", rows " + std::to_string(rows);
      Expect(d, SIMDNORM_INVALID_ARGUMENT, what.c_str());
      d.gamma = nullptr;
      Expect(d, SIMDNORM_INVALID_ARGUMENT, (what + ", no gamma").c_str());
    }
  }
  for (float off : {1.0f, -0.0f, -1.0f, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN}) {
    simdnorm_desc d = Base();
    d.gamma_offset = off;
    ExpectOk(d, ("gamma_offset " + Num(off)).c_str());
  }
}

TEST_P(StatusTest, UnknownFlags) {
  // 6 = SIMDNORM_Y_STREAM | SIMDNORM_Y_CACHED: contradictory.
  for (unsigned flags : {6u, 7u, 16u, 17u, 0x100u, 0x80000000u, ~0u}) {
    for (size_t rows : {4u, 0u}) {
      simdnorm_desc d = Base();
      d.rows = rows;
      d.flags = flags;
      Expect(d, SIMDNORM_INVALID_ARGUMENT,
             ("flags " + Hex(flags, 8) + ", rows " + std::to_string(rows))
                 .c_str());
    }
  }
  for (unsigned flags : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 13u}) {
    simdnorm_desc d = Base();
    d.flags = flags;
    ExpectOk(d, ("flags " + Hex(flags, 8)).c_str());
  }
}

TEST_P(StatusTest, ResidualAndSumOutStrides) {
  for (int which = 0; which < 2; ++which) {
    const std::string name = which == 0 ? "residual" : "sum_out";
    auto with = [&](size_t stride) {
      simdnorm_desc d = Base();
      if (which == 0) {
        d.residual = F(kResidual);
        d.residual_stride = stride;
      } else {
        d.sum_out = F(kSumOut);
        d.sum_out_stride = stride;
      }
      return d;
    };
    Expect(with(7), SIMDNORM_INVALID_SHAPE, (name + "_stride 7 < 8").c_str());
    Expect(with(1), SIMDNORM_INVALID_SHAPE, (name + "_stride 1 < 8").c_str());
    ExpectOk(with(0), (name + "_stride 0 (= cols)").c_str());
    ExpectOk(with(8), (name + "_stride 8").c_str());
    ExpectOk(with(9), (name + "_stride 9").c_str());
    simdnorm_desc d = with(7);
    d.rows = 0;
    Expect(d, SIMDNORM_OK, (name + "_stride 7, rows 0").c_str());
    d = with(SIZE_MAX / 2);  // f32: the bytes of 2 rows overflow
    d.rows = 2;
    Expect(d, SIMDNORM_INVALID_SHAPE,
           (name + "_stride SIZE_MAX/2, rows 2").c_str());
    // Strides of absent operands are ignored.
    d = Base();
    (which == 0 ? d.residual_stride : d.sum_out_stride) = 3;
    ExpectOk(d, (name + " NULL, its stride 3").c_str());
  }
}

TEST_P(StatusTest, ScaleSizeOverflow) {
  // x f16 and y i8 fit, the 4-byte scales of rows * 8 groups do not:
  // 2^59 + 1 rows of 8 f16 are 2^63 + 16 bytes, the scales 2^64 + 32.
  simdnorm_desc d = Base();
  d.rows = (size_t{1} << 59) + 1;
  d.x_type = SIMDNORM_F16;
  d.y_type = SIMDNORM_I8;
  d.y_scale = F(kScales);
  d.quant_group = 1;
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows 2^59+1, 8 scales per row");
}

TEST_P(StatusTest, SumOutAliasesOnlyExactly) {
  simdnorm_desc d = Base();
  d.residual = F(kResidual);
  d.sum_out = F(kResidual);
  ExpectOk(d, "sum_out == residual");
  d.sum_out_stride = 8;
  ExpectOk(d, "sum_out == residual, strides 0 and 8 (= cols)");
  d.y = const_cast<void*>(d.x);
  ExpectOk(d, "vLLM: sum_out == residual and y == x");
  d = Base();
  d.residual = F(kResidual);
  d.sum_out = const_cast<void*>(d.x);
  ExpectOk(d, "sum_out == x");
  d.residual = nullptr;
  ExpectOk(d, "sum_out == x, no residual");
  d.residual = d.x;
  ExpectOk(d, "sum_out == residual == x");

  d = Base();
  d.residual = F(kResidual);
  d.residual_stride = 8;
  d.sum_out = F(kResidual);
  d.sum_out_stride = 9;
  Expect(d, SIMDNORM_OVERLAP, "sum_out == residual, strides 8 and 9");
  d.sum_out = F(kResidual + 1);
  d.sum_out_stride = 8;
  Expect(d, SIMDNORM_OVERLAP, "sum_out = residual + 1");
  d.sum_out = F(kResidual - 31);
  Expect(d, SIMDNORM_OVERLAP, "sum_out ends on residual's first element");
  d.sum_out = F(kResidual - 32);
  ExpectOk(d, "sum_out right before residual");

  d = Base();
  d.sum_out = const_cast<void*>(d.x);
  d.sum_out_stride = 10;
  Expect(d, SIMDNORM_OVERLAP, "sum_out == x, strides 8 and 10");
  d.sum_out = F(33);
  d.sum_out_stride = 0;
  Expect(d, SIMDNORM_OVERLAP, "sum_out = x + 1");
  d.sum_out = F(64);
  ExpectOk(d, "sum_out right after x");
  // Exactly x, but the residual overlaps x partly: sum_out overlaps it.
  d.sum_out = const_cast<void*>(d.x);
  d.residual = F(36);
  Expect(d, SIMDNORM_OVERLAP, "sum_out == x, residual = x + 4");
  d.residual = F(64);
  ExpectOk(d, "sum_out == x, residual right after x");
}

TEST_P(StatusTest, SumOutOverlapsOtherBuffers) {
  const struct {
    size_t at;
    const char* what;
  } cases[] = {{128, "sum_out == y"},
               {140, "sum_out inside y"},
               {97, "sum_out ends in y"},
               {256, "sum_out == gamma"},
               {260, "sum_out over gamma's end"},
               {288, "sum_out == beta"}};
  for (const auto& c : cases) {
    simdnorm_desc d = Base();
    d.residual = F(kResidual);
    d.sum_out = F(c.at);
    Expect(d, SIMDNORM_OVERLAP, c.what);
    d.residual = nullptr;
    Expect(d, SIMDNORM_OVERLAP,
           (std::string(c.what) + ", no residual").c_str());
  }
  simdnorm_desc d = Base();
  d.residual = F(kResidual);
  d.sum_out = F(kSumOut);
  d.y_type = SIMDNORM_I8;
  d.y_scale = F(kSumOut + 31);
  Expect(d, SIMDNORM_OVERLAP, "y_scale starts on sum_out's last element");
  d.y_scale = F(kSumOut + 32);
  ExpectOk(d, "y_scale right after sum_out");
  // y in place on x and sum_out == x: sum_out and y are the same bytes.
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.sum_out = const_cast<void*>(d.x);
  Expect(d, SIMDNORM_OVERLAP, "sum_out == y == x");
  d.residual = F(kResidual);
  Expect(d, SIMDNORM_OVERLAP, "sum_out == y == x, with residual");
  d = Base();
  d.residual = F(kResidual);
  d.sum_out = F(kResidual);
  d.y = F(kResidual);
  Expect(d, SIMDNORM_OVERLAP, "sum_out == residual == y");
}

TEST_P(StatusTest, YOverlapsResidual) {
  simdnorm_desc d = Base();  // y spans floats [128, 160)
  d.residual = F(128);
  Expect(d, SIMDNORM_OVERLAP, "residual == y");
  d.residual = F(150);
  Expect(d, SIMDNORM_OVERLAP, "residual starts inside y");
  d.residual = F(97);
  Expect(d, SIMDNORM_OVERLAP, "residual ends on y's first element");
  d.residual = F(96);
  ExpectOk(d, "residual right before y");
  d.residual = F(160);
  ExpectOk(d, "residual right after y");
  d.residual = d.x;
  ExpectOk(d, "residual == x (inputs may overlap)");
  d.residual = F(256);
  ExpectOk(d, "residual == gamma (inputs may overlap)");
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.residual = d.x;
  Expect(d, SIMDNORM_OVERLAP, "y == x in place, residual == x");
}

TEST_P(StatusTest, ScalesOverlapNothing) {
  // I8 y at float 128 spans 32 bytes = floats [128, 136); 4 rows of one
  // scale each span 4 floats.
  auto with = [&](size_t at) {
    simdnorm_desc d = Base();
    d.y_type = SIMDNORM_I8;
    d.y_scale = F(at);
    d.residual = F(kResidual);
    d.sum_out = F(kSumOut);
    return d;
  };
  const struct {
    size_t at;
    const char* what;
  } bad[] = {{32, "y_scale == x"},
             {60, "y_scale over x's end"},
             {125, "y_scale ends in y"},
             {128, "y_scale == y"},
             {135, "y_scale on y's end"},
             {kResidual, "y_scale == residual"},
             {kSumOut + 2, "y_scale inside sum_out"},
             {256, "y_scale == gamma"},
             {292, "y_scale inside beta"}};
  for (const auto& c : bad) Expect(with(c.at), SIMDNORM_OVERLAP, c.what);
  ExpectOk(with(136), "y_scale right after y");
  ExpectOk(with(124), "y_scale right before y");
  // Groups of 3 in a row of 8: 3 scales a row, 12 floats.
  simdnorm_desc d = with(117);
  d.quant_group = 3;
  Expect(d, SIMDNORM_OVERLAP, "12 scales from 117 end in y");
  d.y_scale = F(116);
  ExpectOk(d, "12 scales from 116 end right before y");
  d.y_scale = F(124);
  d.quant_group = 8;
  ExpectOk(d, "4 scales from 124 end right before y");
}

// A valid call with every new operand writes y, sum_out and the scales, and
// nothing else.
TEST_P(StatusTest, NewOutputsWriteOnlyTheirBytes) {
  simdnorm_desc d = Base();
  d.kind = SIMDNORM_RMSNORM;
  d.residual = F(kResidual);
  d.sum_out = F(kSumOut);
  d.y_type = SIMDNORM_I8;
  d.y_scale = F(kScales);
  d.quant_group = 3;  // 3 scales a row: 12 floats
  d.gamma_offset = 1.0f;
  d.flags = SIMDNORM_ROUND_NORMALIZED;
  for (size_t i = 0; i < 32; ++i) *F(kResidual + i) = 0.125f * (i % 5);
  const std::vector<float> before = arena_;
  ASSERT_EQ(Call(GetParam(), d), SIMDNORM_OK);
  auto changed = [&](size_t begin, size_t floats) {
    return std::memcmp(before.data() + begin, arena_.data() + begin,
                       floats * 4) != 0;
  };
  EXPECT_TRUE(changed(128, 8)) << "y (32 bytes)";
  EXPECT_TRUE(changed(kSumOut, 32)) << "sum_out";
  EXPECT_TRUE(changed(kScales, 12)) << "y_scale";
  std::vector<float> masked = arena_;
  std::memcpy(masked.data() + 128, before.data() + 128, 8 * 4);
  std::memcpy(masked.data() + kSumOut, before.data() + kSumOut, 32 * 4);
  std::memcpy(masked.data() + kScales, before.data() + kScales, 12 * 4);
  EXPECT_EQ(std::memcmp(masked.data(), before.data(), kArena * 4), 0)
      << "wrote outside y, sum_out and y_scale";
}

TEST_P(StatusTest, ChecksBeforeRowsZeroThenPointersShapesOverlaps) {
  // Field checks come first, whatever else is wrong.
  simdnorm_desc d = Base();
  d.x = nullptr;
  d.cols = 0;
  d.y = F(256);
  d.gamma = F(256);
  d.flags = 8;
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "bad flags, bad everything");
  // NULL pointers before shapes, shapes before overlaps.
  d = Base();
  d.y_type = SIMDNORM_I8;
  d.residual = F(kResidual);
  d.residual_stride = 3;
  d.sum_out = F(128);
  Expect(d, SIMDNORM_INVALID_ARGUMENT, "y_scale NULL, bad stride, overlap");
  d.y_scale = F(kScales);
  Expect(d, SIMDNORM_INVALID_SHAPE, "bad residual stride, overlap");
  d.residual_stride = 0;
  Expect(d, SIMDNORM_OVERLAP, "sum_out overlaps y");
}

TEST_P(StatusTest, BadShapes) {
  simdnorm_desc d = Base();
  d.cols = 0;
  Expect(d, SIMDNORM_INVALID_SHAPE, "cols 0");
  d = Base();
  d.x_stride = 7;
  Expect(d, SIMDNORM_INVALID_SHAPE, "x_stride 7 < cols 8");
  d = Base();
  d.x_stride = 1;
  Expect(d, SIMDNORM_INVALID_SHAPE, "x_stride 1 < cols 8");
  d = Base();
  d.y_stride = 7;
  Expect(d, SIMDNORM_INVALID_SHAPE, "y_stride 7 < cols 8");
  d = Base();
  d.x_stride = 8;
  d.y_stride = 8;
  ExpectOk(d, "explicit strides == cols");
}

TEST_P(StatusTest, SizeOverflow) {
  simdnorm_desc d = Base();
  d.rows = SIZE_MAX / 2;
  d.x_stride = SIZE_MAX / 4;
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows SIZE_MAX/2, x_stride SIZE_MAX/4");
  d = Base();
  d.rows = SIZE_MAX / 2;
  d.y_stride = SIZE_MAX / 4;
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows SIZE_MAX/2, y_stride SIZE_MAX/4");
  d = Base();
  d.rows = SIZE_MAX / 2;
  d.x_stride = 16;
  d.y_stride = 16;
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows SIZE_MAX/2, strides 16");
  d = Base();
  d.rows = SIZE_MAX / 8;  // rows * cols fits in size_t, the bytes do not
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows SIZE_MAX/8, dense f32 cols 8");
  d = Base();
  d.rows = 1;
  d.cols = SIZE_MAX / 2 + 1;  // one row whose byte size overflows
  d.x_type = SIMDNORM_BF16;
  d.y_type = SIMDNORM_BF16;
  d.gamma = nullptr;
  d.beta = nullptr;
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows 1, cols SIZE_MAX/2+1, bf16");
  d = Base();
  d.rows = 2;
  d.x_stride = SIZE_MAX / 2;  // (rows-1)*stride + cols fits, the bytes do not
  Expect(d, SIMDNORM_INVALID_SHAPE, "rows 2, x_stride SIZE_MAX/2, f32");
}

TEST_P(StatusTest, YOverlapsX) {
  simdnorm_desc d = Base();  // x spans floats [32, 64)
  d.y = F(33);
  Expect(d, SIMDNORM_OVERLAP, "y = x + 1 element");
  d.y = F(31);
  Expect(d, SIMDNORM_OVERLAP, "y = x - 1 element");
  d.y = F(63);
  Expect(d, SIMDNORM_OVERLAP, "y starts on the last element of x");
  d.y = F(1);
  Expect(d, SIMDNORM_OVERLAP, "y ends on the first element of x");
  d.y = F(64);
  ExpectOk(d, "y starts right after x");
  d.y = F(0);
  ExpectOk(d, "y ends right before x");
  d.y = B(32 * 4 + 2);  // half an element in
  d.y_type = SIMDNORM_BF16;
  Expect(d, SIMDNORM_OVERLAP, "bf16 y = x + 2 bytes");
}

TEST_P(StatusTest, InPlaceMustBeExact) {
  simdnorm_desc d = Base();
  d.y = const_cast<void*>(d.x);
  ExpectOk(d, "in place f32");
  d.x_stride = 10;
  d.y_stride = 10;
  ExpectOk(d, "in place f32, strides 10");
  d = Base();
  d.x_type = SIMDNORM_BF16;
  d.y_type = SIMDNORM_BF16;
  d.y = const_cast<void*>(d.x);
  ExpectOk(d, "in place bf16");

  d = Base();
  d.y = const_cast<void*>(d.x);
  d.y_type = SIMDNORM_BF16;
  Expect(d, SIMDNORM_OVERLAP, "y == x, x F32, y BF16");
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.x_type = SIMDNORM_BF16;
  Expect(d, SIMDNORM_OVERLAP, "y == x, x BF16, y F32");
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.x_stride = 8;
  d.y_stride = 9;
  Expect(d, SIMDNORM_OVERLAP, "y == x, strides 8 and 9");
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.y_stride = 10;
  Expect(d, SIMDNORM_OVERLAP, "y == x, strides 0 (= 8) and 10");
  d = Base();
  d.y = const_cast<void*>(d.x);
  d.x_stride = 10;
  Expect(d, SIMDNORM_OVERLAP, "y == x, strides 10 and 0 (= 8)");
}

TEST_P(StatusTest, OverlapIsJudgedOnSpannedBytes) {
  // x: 4 rows of 8, stride 16, from float 32: spans [32, 88).
  simdnorm_desc d = Base();
  d.x_stride = 16;
  d.y = F(40);      // rows interleaved with x's: no shared element, but the
  d.y_stride = 16;  // byte ranges overlap
  Expect(d, SIMDNORM_OVERLAP, "y rows interleaved with x rows");
  d.y = F(87);
  d.y_stride = 0;
  Expect(d, SIMDNORM_OVERLAP, "y starts on the last element of strided x");
  d.y = F(88);
  ExpectOk(d, "y starts right after the last element of strided x");
}

TEST_P(StatusTest, YOverlapsGammaOrBeta) {
  // y spans floats [128, 160).
  for (int which = 0; which < 2; ++which) {
    const char* name = which == 0 ? "gamma" : "beta";
    auto with = [&](const void* p) {
      simdnorm_desc d = Base();
      (which == 0 ? d.gamma : d.beta) = p;
      return d;
    };
    Expect(with(F(128)), SIMDNORM_OVERLAP,
           (std::string(name) + " == y").c_str());
    Expect(with(F(136)), SIMDNORM_OVERLAP,
           (std::string(name) + " inside y").c_str());
    Expect(with(F(159)), SIMDNORM_OVERLAP,
           (std::string(name) + " starts on y's last element").c_str());
    Expect(with(F(121)), SIMDNORM_OVERLAP,
           (std::string(name) + " ends on y's first element").c_str());
    ExpectOk(with(F(160)), (std::string(name) + " right after y").c_str());
    ExpectOk(with(F(120)), (std::string(name) + " right before y").c_str());

    // bf16 parameters span cols * 2 bytes: [496, 512) ends right before y
    // (byte 512); [498, 514) overlaps it.
    simdnorm_desc d = with(B(496));
    d.param_type = SIMDNORM_BF16;
    (which == 0 ? d.beta : d.gamma) = nullptr;
    ExpectOk(d, (std::string("bf16 ") + name + " right before y").c_str());
    (which == 0 ? d.gamma : d.beta) = B(498);
    Expect(d, SIMDNORM_OVERLAP,
           (std::string("bf16 ") + name + " ends 2 bytes into y").c_str());
  }
}

TEST_P(StatusTest, InputsMayOverlapEachOther) {
  simdnorm_desc d = Base();
  d.gamma = d.x;
  ExpectOk(d, "gamma == x");
  d.beta = d.x;
  ExpectOk(d, "gamma == beta == x");
  d = Base();
  d.beta = F(40);
  ExpectOk(d, "beta inside x");
}

INSTANTIATE_TEST_SUITE_P(Entries, StatusTest,
                         ::testing::Values(Entry::kC, Entry::kCReference,
                                           Entry::kCpp, Entry::kCppReference),
                         EntryName);

TEST(Status, NullDescriptor) {
  EXPECT_EQ(simdnorm_normalize(nullptr), SIMDNORM_INVALID_ARGUMENT);
  EXPECT_EQ(simdnorm_normalize_reference(nullptr), SIMDNORM_INVALID_ARGUMENT);
}

TEST(Status, StringsForEveryStatus) {
  const struct {
    simdnorm_status s;
    const char* name;
  } all[] = {
      {SIMDNORM_OK, "SIMDNORM_OK"},
      {SIMDNORM_INVALID_ARGUMENT, "SIMDNORM_INVALID_ARGUMENT"},
      {SIMDNORM_INVALID_SHAPE, "SIMDNORM_INVALID_SHAPE"},
      {SIMDNORM_OVERLAP, "SIMDNORM_OVERLAP"},
      {SIMDNORM_UNSUPPORTED, "SIMDNORM_UNSUPPORTED"},
  };
  std::vector<std::string> seen;
  for (const auto& a : all) {
    const char* str = simdnorm_status_string(a.s);
    ASSERT_NE(str, nullptr) << a.name;
    EXPECT_NE(std::string(str).find(a.name), std::string::npos)
        << "\"" << str << "\" does not name " << a.name;
    for (const std::string& other : seen) EXPECT_NE(other, str);
    seen.push_back(str);
  }
  // Out-of-range values that C++ can still hold in the enum (its values
  // span 0..7); larger ones cannot be passed from C++ without UB.
  for (int bad : {5, 6, 7}) {
    const char* str = simdnorm_status_string(static_cast<simdnorm_status>(bad));
    ASSERT_NE(str, nullptr) << "status " << bad;
    EXPECT_GT(std::strlen(str), 0u) << "status " << bad;
  }
}

// ---------------------------------------------------------------- ISAs

class IsaSelection : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK); }
};

TEST_F(IsaSelection, ListIsWellFormed) {
  const size_t n = simdnorm_isa_count();
  ASSERT_GE(n, 1u);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    const char* name = simdnorm_isa_name(i);
    ASSERT_NE(name, nullptr) << i;
    EXPECT_GT(std::strlen(name), 0u) << i;
    for (const std::string& other : names) EXPECT_NE(other, name);
    names.push_back(name);
  }
  EXPECT_EQ(simdnorm_isa_name(n), nullptr);
  EXPECT_EQ(simdnorm_isa_name(n + 1), nullptr);
  EXPECT_EQ(simdnorm_isa_name(SIZE_MAX), nullptr);
}

TEST_F(IsaSelection, EveryListedIsaCanBeForced) {
  for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
    const std::string name = simdnorm_isa_name(i);
    ASSERT_EQ(simdnorm_set_isa(name.c_str()), SIMDNORM_OK) << name;
    EXPECT_STREQ(simdnorm_active_isa(), name.c_str());
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
    ASSERT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
    ASSERT_EQ(simdnorm_set_isa(lower.c_str()), SIMDNORM_OK) << lower;
    EXPECT_STREQ(simdnorm_active_isa(), name.c_str()) << "set as " << lower;
  }
}

TEST_F(IsaSelection, AutoSelectsTheBest) {
  const std::string best = simdnorm_isa_name(0);
  const std::string last = simdnorm_isa_name(simdnorm_isa_count() - 1);
  for (const char* spelling : {"auto", "AUTO", "Auto", "aUtO"}) {
    ASSERT_EQ(simdnorm_set_isa(last.c_str()), SIMDNORM_OK);
    EXPECT_EQ(simdnorm_set_isa(spelling), SIMDNORM_OK) << spelling;
    EXPECT_STREQ(simdnorm_active_isa(), best.c_str()) << spelling;
  }
  ASSERT_EQ(simdnorm_set_isa(last.c_str()), SIMDNORM_OK);
  EXPECT_EQ(simdnorm_set_isa(nullptr), SIMDNORM_OK);
  EXPECT_STREQ(simdnorm_active_isa(), best.c_str()) << "set_isa(NULL)";
}

TEST_F(IsaSelection, UnknownNamesChangeNothing) {
  const std::string last = simdnorm_isa_name(simdnorm_isa_count() - 1);
  ASSERT_EQ(simdnorm_set_isa(last.c_str()), SIMDNORM_OK);
  std::vector<std::string> bad = {"nonsense", "", "AVX2 ", "autox"};
  for (const char* other : {"NEON", "SVE", "AVX3_DL", "EMU128"}) {
    bool listed = false;
    for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
      listed |= std::string(simdnorm_isa_name(i)) == other;
    }
    if (!listed) bad.push_back(other);
  }
  for (const std::string& name : bad) {
    EXPECT_EQ(simdnorm_set_isa(name.c_str()), SIMDNORM_UNSUPPORTED)
        << "\"" << name << "\"";
    EXPECT_STREQ(simdnorm_active_isa(), last.c_str())
        << "after set_isa(\"" << name << "\")";
  }
}

}  // namespace
}  // namespace simdnorm_test
