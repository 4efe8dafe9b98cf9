// Statuses: every bad argument of the normalize entry points (C and C++,
// kernels and reference) gives its status with nothing written; ISA
// selection; status strings.
#include <cctype>
#include <cfloat>
#include <cstdint>

#include "test_util.h"

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
  for (int bad : {2, 7, -1}) {
    const std::string v = std::to_string(bad);
    simdnorm_desc d = Base();
    SetRaw(&d.kind, bad);
    Expect(d, SIMDNORM_INVALID_ARGUMENT, ("kind " + v).c_str());
    d = Base();
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
  }
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
