// libFuzzer target: random descriptors and rows through simdnorm_normalize
// and simdnorm_normalize_reference, on an ISA chosen by the input.
//
// Input layout (bytes; missing bytes read as 0; make_corpus.py writes it):
//   0 isa: k % (count + 1) (count = "auto"); >= 0xF8: an unknown name
//   1 kind   2 x_type   3 y_type   4 param_type: < 0xF0: value & 1,
//     else an invalid enum value (kBadEnums)
//   5 rows: < 0x80: 0..8, < 0xF0: 0..64, else kSpecialRows
//   6-7 cols (LE): top bits 00/01: 0..129, 10: 0..4100, 11: kSpecialCols
//   8-9 x stride (mode, arg)   10-11 y stride (mode, arg): see Stride()
//   12 eps mode, 13-16 eps bits: see Eps()
//   17 layout mode, 18 delta (int8), 19 gaps: see Place()
//   20 flags: low nibble 1 = x NULL, 2 = y NULL; 0x10 gamma, 0x20 beta,
//      0x40 beta = gamma
//   21 max_threads % 9
//   22 x family, 23 mean exponent, 24 spread exponent: see Value()
//   25 weight family   26-29 seed (PRNG of the data and of the arena)
//   30 base shift: the arena starts (k % 16) * 4 bytes past 64-byte aligned
//   then 7-byte patches: which (x/gamma/beta, row), col (LE16), raw bits
//   (LE32; bf16 elements take the low 16 bits)
//
// x, y, gamma and beta live in one arena (their offsets chosen so that in
// place, overlaps and near-overlaps happen); every other byte holds random
// data. Checks (any failure prints the case and aborts):
// - both entry points return the status of Predict(), an independent
//   implementation of the documented validation rules (docs/robustness.md);
// - on any status but OK the whole arena is unchanged;
// - on OK, no byte outside y's rows changed, each element meets the bound
//   against simdnorm::reference_f64 (CheckF32 / CheckBf16 of
//   tests/test_util.h; NaN where the reference is NaN), the reference's own
//   output is the float64 value rounded once, and a run with max_threads 1
//   gives the same bytes.
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "test_util.h"

namespace {

using simdnorm_test::Bf16IsFinite;
using simdnorm_test::Bf16IsNaN;
using simdnorm_test::Bf16Ordered;
using simdnorm_test::Bf16ToFloat;
using simdnorm_test::CheckBf16;
using simdnorm_test::CheckF32;
using simdnorm_test::F32Bound;
using simdnorm_test::FloatBits;
using simdnorm_test::FloatFromBits;
using simdnorm_test::RoundToBf16;

constexpr size_t kGuard = 64;           // bytes before and after the buffers
constexpr size_t kMaxPlaced = 1 << 19;  // elements of a buffer laid out

// ---------------------------------------------------------------- input

class Input {
 public:
  Input(const uint8_t* data, size_t size) : d_(data), n_(size) {}
  uint8_t U8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t U16() {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | (U8() << 8));
  }
  uint32_t U32() {
    const uint32_t lo = U16();
    return lo | (static_cast<uint32_t>(U16()) << 16);
  }
  size_t Left() const { return i_ < n_ ? n_ - i_ : 0; }

 private:
  const uint8_t* d_;
  size_t n_, i_ = 0;
};

// SplitMix64: the data of a case from its seed.
class Prng {
 public:
  explicit Prng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return (Next() >> 11) * 0x1p-53; }  // [0, 1)
  double Normal() {  // Irwin-Hall: cheap and bounded, good enough here
    double s = 0;
    for (int i = 0; i < 12; ++i) s += Uniform();
    return s - 6.0;
  }

 private:
  uint64_t s_;
};

constexpr int32_t kBadEnums[16] = {
    2,   3,     4,     7,         8,         15, 16, 255,
    256, 65535, 65536, INT32_MAX, INT32_MIN, -1, -2, 1 << 30};

int DecodeEnum(uint8_t b) { return b < 0xF0 ? (b & 1) : kBadEnums[b & 15]; }

size_t DecodeRows(uint8_t b) {
  static const size_t kSpecialRows[16] = {SIZE_MAX,
                                          SIZE_MAX / 2,
                                          SIZE_MAX / 2 + 1,
                                          SIZE_MAX / 4 + 1,
                                          SIZE_MAX / 8 + 1,
                                          size_t{1} << 32,
                                          size_t{1} << 40,
                                          size_t{1} << 62,
                                          65,
                                          100,
                                          2,
                                          3,
                                          1,
                                          0,
                                          64,
                                          63};
  // Few rows half of the time: most inputs stay small and fast.
  if (b < 0x80) return b % 9;
  return b < 0xF0 ? b % 65 : kSpecialRows[b & 15];
}

size_t DecodeCols(uint16_t u) {
  static const size_t kSpecialCols[16] = {0,
                                          1,
                                          15,
                                          16,
                                          17,
                                          33,
                                          896,
                                          897,
                                          4096,
                                          4097,
                                          4100,
                                          SIZE_MAX,
                                          SIZE_MAX / 2 + 1,
                                          SIZE_MAX / 4 + 1,
                                          size_t{1} << 40,
                                          size_t{1} << 62};
  switch (u >> 14) {
    case 0:
    case 1:
      return (u & 0x7F) % 130;
    case 2:
      return (u & 0x3FFF) % 4101;
    default:
      return kSpecialCols[u & 15];
  }
}

// A stride as passed (0 = cols): dense, explicit, padded, below cols,
// arbitrary small, huge; mode 7 (y only): the same as x.
size_t DecodeStride(uint8_t mode, uint8_t arg, size_t cols, size_t x_stride,
                    bool is_y) {
  static const size_t kHuge[8] = {
      SIZE_MAX,        SIZE_MAX / 2,    SIZE_MAX / 2 + 1, SIZE_MAX / 4 + 1,
      size_t{1} << 62, size_t{1} << 40, size_t{1} << 32,  SIZE_MAX - 1};
  switch (mode % 8) {
    case 1:
      return cols;
    case 2:
      return cols + arg % 64;
    case 3:
      return cols ? cols - 1 - arg % cols : arg;
    case 4:
      return arg;
    case 5:
      return kHuge[arg % 8];
    case 7:
      return is_y ? x_stride : 0;
    default:
      return 0;
  }
}

float DecodeEps(uint8_t mode, uint32_t bits) {
  static const float kOdd[8] = {NAN,    -NAN,    INFINITY, -INFINITY,
                                -1e-5f, FLT_MAX, 1e-6f,    FLT_MIN};
  switch (mode % 8) {
    case 0:
      return 1e-5f;
    case 1:
      return 0.0f;
    case 2:
      return FloatFromBits(bits);
    case 3:
      return 1.0f;
    case 4:
      return -0.0f;
    case 5:
      return FLT_TRUE_MIN;
    case 6:
      return kOdd[bits & 7];
    default:
      return 1e-6f;
  }
}

// Special values mixed into rows and weights.
constexpr float kSpecials[16] = {
    0.0f,    -0.0f,        1.0f,          -1.0f,    FLT_MAX,   -FLT_MAX,
    FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, INFINITY, -INFINITY, NAN,
    1e-38f,  3e38f,        65504.0f,      1e4f};

// One element of x: family 0 N(0,1); 1 m + s N(0,1) with m, s powers of two
// from the input (per-row jitter), which covers large means, huge, tiny,
// subnormal and constant rows (s = 0); 2 constant rows; 3 N(0,1) with
// specials mixed in; 4 raw random bits; 5 a family per row.
float Value(int family, Prng& rng, int mean_exp, int sd_exp, float row_const,
            int row_jitter) {
  switch (family) {
    case 0:
      return static_cast<float>(rng.Normal());
    case 1: {
      const double m =
          mean_exp <= -151 ? 0.0 : std::ldexp(1.0, mean_exp + row_jitter);
      const double s =
          sd_exp <= -151 ? 0.0 : std::ldexp(1.0, sd_exp - row_jitter);
      return static_cast<float>(m + s * rng.Normal());
    }
    case 2:
      return row_const;
    case 3:
      return (rng.Next() & 3) == 0 ? kSpecials[rng.Next() & 15]
                                   : static_cast<float>(rng.Normal());
    default:
      return FloatFromBits(static_cast<uint32_t>(rng.Next()));
  }
}

float Weight(int family, bool is_gamma, Prng& rng, int exp) {
  switch (family) {
    case 0:
      return static_cast<float>(is_gamma ? 1.0 + 0.5 * rng.Normal()
                                         : 0.5 * rng.Normal());
    case 1:
      return (rng.Next() & 3) == 0 ? kSpecials[rng.Next() & 15]
                                   : static_cast<float>(rng.Normal());
    case 2:
      return static_cast<float>(std::ldexp(rng.Normal(), exp));
    default:
      return FloatFromBits(static_cast<uint32_t>(rng.Next()));
  }
}

// ---------------------------------------------------------------- rules

size_t ElemBytes(int dtype) { return dtype == SIMDNORM_BF16 ? 2 : 4; }

struct Range {
  unsigned __int128 begin = 0, end = 0;  // [begin, end)
};

// The byte range of `rows` rows; false when it does not fit the address
// space (computed without any wrap-around in 128 bits).
bool SpanOf(const void* p, size_t rows, size_t cols, size_t stride, size_t elem,
            Range* r) {
  using U = unsigned __int128;
  const U elems = U{rows - 1} * stride + cols;
  if (elems > U{UINT64_MAX}) return false;
  r->begin = reinterpret_cast<uintptr_t>(p);
  r->end = r->begin + elems * elem;
  return r->end <= U{UINT64_MAX};
}

bool Intersect(const Range& a, const Range& b) {
  return a.begin < b.end && b.begin < a.end;
}

// The status the documented rules give, checked in this order:
// 1 INVALID_ARGUMENT: kind or a dtype outside its enum; eps NaN, infinite
//   or negative (-0 is fine);
// 2 OK when rows == 0 (nothing else is looked at);
// 3 INVALID_ARGUMENT: x or y NULL;
// 4 INVALID_SHAPE: cols 0, a stride (0 = cols) below cols, or the bytes of
//   x, y, gamma or beta beyond the address space;
// 5 OVERLAP: y's byte range meets x's (unless exactly in place: same
//   pointer, element size and stride), gamma's or beta's;
// 6 OK.
simdnorm_status Predict(const simdnorm_desc& d, int kind, int xt, int yt,
                        int pt) {
  auto valid = [](int t) { return t == SIMDNORM_F32 || t == SIMDNORM_BF16; };
  if ((kind != SIMDNORM_LAYERNORM && kind != SIMDNORM_RMSNORM) || !valid(xt) ||
      !valid(yt) || !valid(pt)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (std::isnan(d.eps) || std::isinf(d.eps) || d.eps < 0.0f) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (d.rows == 0) return SIMDNORM_OK;
  if (d.x == nullptr || d.y == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  const size_t xs = d.x_stride ? d.x_stride : d.cols;
  const size_t ys = d.y_stride ? d.y_stride : d.cols;
  if (d.cols == 0 || xs < d.cols || ys < d.cols) {
    return SIMDNORM_INVALID_SHAPE;
  }
  Range x, y, g, b;
  if (!SpanOf(d.x, d.rows, d.cols, xs, ElemBytes(xt), &x) ||
      !SpanOf(d.y, d.rows, d.cols, ys, ElemBytes(yt), &y) ||
      (d.gamma && !SpanOf(d.gamma, 1, d.cols, d.cols, ElemBytes(pt), &g)) ||
      (d.beta && !SpanOf(d.beta, 1, d.cols, d.cols, ElemBytes(pt), &b))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const bool in_place =
      d.x == d.y && ElemBytes(xt) == ElemBytes(yt) && xs == ys;
  if ((!in_place && Intersect(x, y)) || (d.gamma && Intersect(y, g)) ||
      (d.beta && Intersect(y, b))) {
    return SIMDNORM_OVERLAP;
  }
  return SIMDNORM_OK;
}

// ---------------------------------------------------------------- case

template <class E>
void SetRaw(E* field, int32_t value) {
  static_assert(sizeof(E) == sizeof(value), "enum fields are int-sized");
  std::memcpy(field, &value, sizeof(value));
}

struct Case {
  int isa_byte = 0;
  const char* isa = "";
  int kind = 0, xt = 0, yt = 0, pt = 0;
  simdnorm_desc d{};
  // Byte offsets of the buffers from the arena start; -1 = NULL.
  long long off_x = -1, off_y = -1, off_g = -1, off_b = -1;
  size_t arena_len = 0;
  simdnorm_status predicted = SIMDNORM_OK;
  int x_family = 0, w_family = 0;

  std::string Describe() const {
    char buf[1024];
    std::snprintf(
        buf, sizeof(buf),
        "isa %s (byte %d); kind %d x_type %d y_type %d param_type %d; rows "
        "%zu cols %zu x_stride %zu y_stride %zu; eps %.9g (0x%08X); "
        "max_threads %zu; arena %zu bytes, offsets x %lld y %lld gamma %lld "
        "beta %lld (-1 = NULL); x family %d, weight family %d; predicted %s",
        isa, isa_byte, kind, xt, yt, pt, d.rows, d.cols, d.x_stride, d.y_stride,
        static_cast<double>(d.eps), FloatBits(d.eps), d.max_threads, arena_len,
        off_x, off_y, off_g, off_b, x_family, w_family,
        simdnorm_status_string(predicted));
    return buf;
  }
};

[[noreturn]] void Fail(const Case& c, const std::string& what) {
  std::fprintf(stderr, "\nsimdnorm_fuzz FAILURE: %s\n  case: %s\n",
               what.c_str(), c.Describe().c_str());
  std::fflush(stderr);
  std::abort();
}

// The descriptor with its arena pointers moved from `from` to `to`.
simdnorm_desc Rebase(const simdnorm_desc& d, const uint8_t* from, uint8_t* to) {
  auto move = [&](const void* p) -> uint8_t* {
    return p ? to + (static_cast<const uint8_t*>(p) - from) : nullptr;
  };
  simdnorm_desc r = d;
  r.x = move(d.x);
  r.y = move(d.y);
  r.gamma = move(d.gamma);
  r.beta = move(d.beta);
  return r;
}

double LoadElem(const uint8_t* p, int dtype) {
  if (dtype == SIMDNORM_BF16) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return Bf16ToFloat(b);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

void StoreElem(uint8_t* p, int dtype, uint32_t bits) {
  if (dtype == SIMDNORM_BF16) {
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(p, &b, 2);
  } else {
    std::memcpy(p, &bits, 4);
  }
}

uint32_t BitsOf(float v, int dtype) {
  return dtype == SIMDNORM_BF16 ? simdnorm_test::Bf16Bits(v) : FloatBits(v);
}

// What the executions were (printed at exit when SIMDNORM_FUZZ_STATS is
// set): by predicted status, skipped valid descriptors beyond the arena,
// and elements checked.
struct Counts {
  size_t by_status[5] = {};
  size_t skipped = 0, rows0 = 0, in_place = 0, elements = 0, nan_refs = 0;
  size_t subnormal_tolerance = 0, inf_gamma_near_zero = 0;
  ~Counts() {
    if (std::getenv("SIMDNORM_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr,
                 "simdnorm_fuzz: OK %zu (rows 0: %zu, in place: %zu), "
                 "INVALID_ARGUMENT %zu, INVALID_SHAPE %zu, OVERLAP %zu; "
                 "skipped %zu; elements checked %zu (NaN truth %zu, passed "
                 "by the subnormal step only %zu, infinite gamma times "
                 "near-zero xhat %zu)\n",
                 by_status[0], rows0, in_place, by_status[1], by_status[2],
                 by_status[3], skipped, elements, nan_refs, subnormal_tolerance,
                 inf_gamma_near_zero);
  }
} g_counts;

// fp32 element: CheckF32, with two additions at the ends of the float
// range, where the relative bound cannot be met by any fp32 value:
// - where the truth is beyond the float range (|ref| + bound >= FLT_MAX),
//   infinity of the truth's sign;
// - among subnormals the fp32 grid is 2^-149 apart whatever the bound (e.g.
//   gamma = 2^-149, |xhat| < 1: the truth is below the smallest subnormal),
//   so an error up to bound + 2^-149 (one subnormal step) passes.
bool CheckF32Elem(float got, double ref, double xhat, double g, double b,
                  simdnorm_test::Stats* st, std::string* why) {
  const double bound = F32Bound(xhat, g, b);
  if (std::isfinite(ref) && std::fabs(ref) + bound >= FLT_MAX &&
      std::isinf(got) && std::signbit(got) == std::signbit(ref)) {
    return true;
  }
  if (std::isfinite(ref) && std::isfinite(got) &&
      std::fabs(static_cast<double>(got) - ref) <= bound + 0x1p-149) {
    if (std::fabs(static_cast<double>(got) - ref) > bound) {
      ++g_counts.subnormal_tolerance;
    }
    return true;
  }
  return CheckF32(got, ref, xhat, g, b, st, why);
}

// bf16 element: CheckBf16, and where the once-rounded truth overflows to
// infinity, also a finite value inside the fp32-bound window.
bool CheckBf16Elem(uint16_t got, uint16_t want, double ref, double bound,
                   simdnorm_test::Stats* st, std::string* why) {
  if (!Bf16IsNaN(want) && !Bf16IsFinite(want) && Bf16IsFinite(got) &&
      std::isfinite(ref)) {
    const int32_t o = Bf16Ordered(got);
    if (o >= Bf16Ordered(RoundToBf16(ref - bound)) &&
        o <= Bf16Ordered(RoundToBf16(ref + bound))) {
      return true;
    }
  }
  return CheckBf16(got, want, ref, bound, st, why);
}

// Reused between executions (the fuzzer runs one input at a time).
std::vector<uint8_t> g_arena, g_before, g_ref_arena, g_single;
std::vector<double> g_ref, g_xhat;

uint8_t* Base(std::vector<uint8_t>& v, size_t shift) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + (64 - p % 64) % 64 + shift;
}

// Checks that no byte of `got` outside y's rows differs from `want`.
void ExpectOnlyYWritten(const Case& c, const uint8_t* want, const uint8_t* got,
                        size_t len, const char* who) {
  const size_t ye = ElemBytes(c.yt);
  const size_t ys = c.d.y_stride ? c.d.y_stride : c.d.cols;
  size_t from = 0;
  for (size_t r = 0; r <= c.d.rows; ++r) {
    const size_t to =
        r < c.d.rows ? static_cast<size_t>(c.off_y) + r * ys * ye : len;
    if (to > from && std::memcmp(want + from, got + from, to - from) != 0) {
      size_t i = from;
      while (want[i] == got[i]) ++i;
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    "%s wrote outside y's rows: arena byte %zu (y starts at "
                    "%lld, row %zu of %zu)",
                    who, i, c.off_y, r, static_cast<size_t>(c.d.rows));
      Fail(c, buf);
    }
    if (r < c.d.rows) from = to + c.d.cols * ye;
  }
}

// Checks every output element of an OK call against the float64 truth.
// `before` is the arena before the call, `got` after it (d points into
// `got`), `ref_out` after simdnorm_normalize_reference.
void CheckValues(const Case& c, const uint8_t* before, uint8_t* got,
                 const uint8_t* ref_out) {
  const simdnorm_desc& d = c.d;
  const size_t n = d.rows * d.cols;
  g_ref.resize(n);
  g_xhat.resize(n);
  // The truth from the untouched copy (in place, x has been overwritten).
  const simdnorm_desc bd = Rebase(d, got, const_cast<uint8_t*>(before));
  if (simdnorm::reference_f64(bd, g_ref.data(), g_xhat.data()) !=
      simdnorm::Status::kOk) {
    Fail(c, "reference_f64 failed on a valid descriptor");
  }
  const size_t xe = ElemBytes(c.xt), ye = ElemBytes(c.yt), pe = ElemBytes(c.pt);
  const size_t xs = d.x_stride ? d.x_stride : d.cols;
  const size_t ys = d.y_stride ? d.y_stride : d.cols;
  simdnorm_test::Stats st;
  std::string why;
  for (size_t r = 0; r < d.rows; ++r) {
    for (size_t col = 0; col < d.cols; ++col) {
      const size_t i = r * d.cols + col;
      const size_t at = static_cast<size_t>(c.off_y) + (r * ys + col) * ye;
      const double g =
          c.off_g >= 0 ? LoadElem(before + c.off_g + col * pe, c.pt) : 1.0;
      const double b =
          c.off_b >= 0 ? LoadElem(before + c.off_b + col * pe, c.pt) : 0.0;
      const double ref = g_ref[i];
      ++g_counts.elements;
      if (std::isnan(ref)) ++g_counts.nan_refs;
      bool ok, ref_ok;
      if (c.yt == SIMDNORM_F32) {
        float y, yr;
        std::memcpy(&y, got + at, 4);
        std::memcpy(&yr, ref_out + at, 4);
        ok = CheckF32Elem(y, ref, g_xhat[i], g, b, &st, &why);
        const float once = static_cast<float>(ref);
        ref_ok = std::isnan(once) ? std::isnan(yr)
                                  : FloatBits(yr) == FloatBits(once);
      } else {
        uint16_t y, yr;
        std::memcpy(&y, got + at, 2);
        std::memcpy(&yr, ref_out + at, 2);
        // The truth rounded once by the test's own RoundToBf16 (not the
        // library's reference, checked separately just below).
        const uint16_t once = RoundToBf16(ref);
        ok = CheckBf16Elem(y, once, ref, F32Bound(g_xhat[i], g, b), &st, &why);
        ref_ok = Bf16IsNaN(once) ? Bf16IsNaN(yr) : yr == once;
      }
      // An infinite gamma times a near-zero xhat: the bound leaves xhat an
      // absolute error of 32 * 2^-23, so its sign (and whether it is 0) is
      // not defined there, and the product may be +-inf or NaN.
      if (!ok && std::isinf(g) && std::fabs(g_xhat[i]) <= 32 * 0x1p-23 &&
          !std::isfinite(LoadElem(got + at, c.yt))) {
        ++g_counts.inf_gamma_near_zero;
        ok = true;
      }
      if (!ok || !ref_ok) {
        const double x = LoadElem(before + c.off_x + (r * xs + col) * xe, c.xt);
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "row %zu col %zu: x %.9g gamma %.9g beta %.9g, truth "
                      "%.17g, xhat %.17g: ",
                      r, col, x, g, b, ref, g_xhat[i]);
        Fail(c, std::string(buf) + (ok ? "simdnorm_normalize_reference did "
                                         "not round the truth once"
                                       : why));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Case c;
  c.isa_byte = in.U8();
  const uint8_t kind_b = in.U8(), xt_b = in.U8(), yt_b = in.U8(),
                pt_b = in.U8();
  c.kind = DecodeEnum(kind_b);
  c.xt = DecodeEnum(xt_b);
  c.yt = DecodeEnum(yt_b);
  c.pt = DecodeEnum(pt_b);
  const size_t rows = DecodeRows(in.U8());
  const size_t cols = DecodeCols(in.U16());
  const uint8_t xm = in.U8(), xa = in.U8(), ym = in.U8(), ya = in.U8();
  const size_t x_stride = DecodeStride(xm, xa, cols, 0, false);
  const size_t y_stride = DecodeStride(ym, ya, cols, x_stride, true);
  const uint8_t eps_mode = in.U8();
  const float eps = DecodeEps(eps_mode, in.U32());
  const uint8_t layout = in.U8();
  const int delta = static_cast<int8_t>(in.U8());
  const uint8_t gaps = in.U8();
  const uint8_t flags = in.U8();
  const size_t max_threads = in.U8() % 9;
  c.x_family = in.U8() % 6;
  const int mean_exp = static_cast<int>(in.U8()) - 151;  // -151: 0 .. 104
  const int sd_exp = static_cast<int>(in.U8()) - 151;
  c.w_family = in.U8() % 4;
  const uint32_t seed = in.U32();
  const size_t base_shift = (in.U8() % 16) * 4;

  // ISA: a listed one, "auto", or an unknown name (which changes nothing).
  const size_t n_isa = simdnorm_isa_count();
  if (c.isa_byte >= 0xF8) {
    const std::string before = simdnorm_active_isa();
    if (simdnorm_set_isa("no-such-isa") != SIMDNORM_UNSUPPORTED ||
        before != simdnorm_active_isa()) {
      Fail(c, "simdnorm_set_isa(\"no-such-isa\") was accepted");
    }
  } else {
    const size_t k = static_cast<size_t>(c.isa_byte) % (n_isa + 1);
    const char* name = k == n_isa ? "auto" : simdnorm_isa_name(k);
    if (simdnorm_set_isa(name) != SIMDNORM_OK) {
      Fail(c, std::string("simdnorm_set_isa failed for ") + name);
    }
    if (k < n_isa && std::strcmp(simdnorm_active_isa(), name) != 0) {
      Fail(c, "simdnorm_active_isa is not the ISA just set");
    }
  }
  c.isa = simdnorm_active_isa();

  // Layout: sizes of the buffers (0 when too large to lay out).
  const size_t xe = ElemBytes(c.xt), ye = ElemBytes(c.yt), pe = ElemBytes(c.pt);
  auto placed_bytes = [&](size_t r, size_t stride, size_t es) -> size_t {
    if (r == 0 || cols == 0) return 0;
    const size_t s = stride ? stride : cols;
    const unsigned __int128 elems =
        static_cast<unsigned __int128>(r - 1) * s + cols;
    return elems > kMaxPlaced ? 0 : static_cast<size_t>(elems) * es;
  };
  const size_t size_x = placed_bytes(rows, x_stride, xe);
  const size_t size_y = placed_bytes(rows, y_stride, ye);
  const size_t size_p = placed_bytes(1, 0, pe);
  auto gap = [&](int k) {
    return static_cast<long long>((gaps >> (2 * k)) & 3) * 8;
  };
  long long ox = 0;
  long long oy = ox + static_cast<long long>(size_x) + gap(0);
  long long og = oy + static_cast<long long>(size_y) + gap(1);
  long long ob = og + static_cast<long long>(size_p) + gap(2);
  switch (layout % 8) {
    case 2:
      oy = ox;
      break;
    case 3:
      oy = ox + delta * static_cast<long long>(ye);
      break;
    case 4:
      og = oy + delta * static_cast<long long>(pe);
      break;
    case 5:
      ob = oy + delta * static_cast<long long>(pe);
      break;
    case 6:
      og = ox + delta * static_cast<long long>(pe);
      ob = og;
      break;
    case 7:
      ox = oy + delta * static_cast<long long>(xe);
      break;
    default:
      break;
  }
  ox &= ~static_cast<long long>(xe - 1);
  oy &= ~static_cast<long long>(ye - 1);
  og &= ~static_cast<long long>(pe - 1);
  ob &= ~static_cast<long long>(pe - 1);
  if ((flags & 0x40) && (flags & 0x30) == 0x30) ob = og;  // beta = gamma
  const long long lowest = std::min(std::min(ox, oy), std::min(og, ob));
  const long long shift = static_cast<long long>(kGuard) - (lowest & ~3LL);
  ox += shift;
  oy += shift;
  og += shift;
  ob += shift;
  const long long end =
      std::max(std::max(ox + static_cast<long long>(size_x),
                        oy + static_cast<long long>(size_y)),
               std::max(og, ob) + static_cast<long long>(size_p));
  c.arena_len = static_cast<size_t>(end) + kGuard;

  g_arena.resize(c.arena_len + 128);
  uint8_t* base = Base(g_arena, base_shift);

  // Random bytes everywhere, then the rows and the weights.
  Prng rng(seed * 0x9E3779B97F4A7C15ull + 1);
  for (size_t i = 0; i < g_arena.size(); i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(g_arena.data() + i, &v,
                std::min<size_t>(8, g_arena.size() - i));
  }
  const size_t xs = x_stride ? x_stride : cols;
  if (size_x) {
    for (size_t r = 0; r < rows; ++r) {
      const int family =
          c.x_family == 5 ? static_cast<int>(rng.Next() % 4) : c.x_family;
      const float row_const = (rng.Next() & 1)
                                  ? kSpecials[rng.Next() & 15]
                                  : static_cast<float>(rng.Normal() * 100.0);
      const int jitter = static_cast<int>(rng.Next() % 5) - 2;
      for (size_t col = 0; col < cols; ++col) {
        const float v = Value(family, rng, mean_exp, sd_exp, row_const, jitter);
        uint32_t bits = BitsOf(v, c.xt);
        if (family == 4 && c.xt == SIMDNORM_BF16) bits >>= 16;  // raw bf16
        StoreElem(base + ox + (r * xs + col) * xe, c.xt, bits);
      }
    }
  }
  const int w_exp = static_cast<int>(rng.Next() % 256) - 128;
  if (size_p) {
    for (size_t col = 0; col < cols; ++col) {
      StoreElem(base + og + col * pe, c.pt,
                BitsOf(Weight(c.w_family, true, rng, w_exp), c.pt));
      StoreElem(base + ob + col * pe, c.pt,
                BitsOf(Weight(c.w_family, false, rng, w_exp), c.pt));
    }
  }
  // Patches: exact values at chosen places.
  while (in.Left() >= 7) {
    const uint8_t which = in.U8();
    const uint16_t pos = in.U16();
    const uint32_t bits = in.U32();
    if (cols == 0) continue;
    const size_t col = pos % cols;
    if (which % 3 == 0 && size_x) {
      const size_t r = (which / 3) % rows;
      StoreElem(base + ox + (r * xs + col) * xe, c.xt, bits);
    } else if (which % 3 == 1 && size_p) {
      StoreElem(base + og + col * pe, c.pt, bits);
    } else if (which % 3 == 2 && size_p) {
      StoreElem(base + ob + col * pe, c.pt, bits);
    }
  }

  // The descriptor.
  simdnorm_desc& d = c.d;
  SetRaw(&d.kind, c.kind);
  SetRaw(&d.x_type, c.xt);
  SetRaw(&d.y_type, c.yt);
  SetRaw(&d.param_type, c.pt);
  d.rows = rows;
  d.cols = cols;
  d.x_stride = x_stride;
  d.y_stride = y_stride;
  d.eps = eps;
  d.max_threads = max_threads;
  c.off_x = (flags & 0x0F) == 0x01 ? -1 : ox;
  c.off_y = (flags & 0x0F) == 0x02 ? -1 : oy;
  c.off_g = (flags & 0x10) ? og : -1;
  c.off_b = (flags & 0x20) ? ob : -1;
  d.x = c.off_x >= 0 ? base + c.off_x : nullptr;
  d.y = c.off_y >= 0 ? base + c.off_y : nullptr;
  d.gamma = c.off_g >= 0 ? base + c.off_g : nullptr;
  d.beta = c.off_b >= 0 ? base + c.off_b : nullptr;
  c.predicted = Predict(d, c.kind, c.xt, c.yt, c.pt);

  // A descriptor that is valid but reaches outside the arena (huge strides
  // that do not overflow) cannot be run: skip it.
  if (c.predicted == SIMDNORM_OK && rows > 0) {
    const unsigned __int128 lo = reinterpret_cast<uintptr_t>(base);
    const unsigned __int128 hi = lo + c.arena_len;
    Range r;
    auto inside = [&](const void* p, size_t n_rows, size_t stride, size_t es) {
      return p == nullptr || (SpanOf(p, n_rows, cols, stride, es, &r) &&
                              r.begin >= lo && r.end <= hi);
    };
    if (!inside(d.x, rows, xs, xe) ||
        !inside(d.y, rows, y_stride ? y_stride : cols, ye) ||
        !inside(d.gamma, 1, cols, pe) || !inside(d.beta, 1, cols, pe)) {
      ++g_counts.skipped;
      return 0;
    }
  }
  ++g_counts.by_status[c.predicted];
  if (c.predicted == SIMDNORM_OK && rows == 0) ++g_counts.rows0;
  if (c.predicted == SIMDNORM_OK && rows > 0 && d.x == d.y) ++g_counts.in_place;

  g_before = g_arena;
  const uint8_t* before = Base(g_before, base_shift);

  const simdnorm_status got = simdnorm_normalize(&d);
  if (got != c.predicted) {
    Fail(c, std::string("simdnorm_normalize returned ") +
                simdnorm_status_string(got));
  }
  g_ref_arena = g_before;
  uint8_t* ref_base = Base(g_ref_arena, base_shift);
  const simdnorm_desc rd = Rebase(d, base, ref_base);
  const simdnorm_status ref_got = simdnorm_normalize_reference(&rd);
  if (ref_got != c.predicted) {
    Fail(c, std::string("simdnorm_normalize_reference returned ") +
                simdnorm_status_string(ref_got));
  }
  if (got != SIMDNORM_OK || rows == 0) {
    if (g_arena != g_before) Fail(c, "simdnorm_normalize wrote memory");
    if (g_ref_arena != g_before) {
      Fail(c, "simdnorm_normalize_reference wrote memory");
    }
    return 0;
  }
  ExpectOnlyYWritten(c, before, base, c.arena_len, "simdnorm_normalize");
  ExpectOnlyYWritten(c, before, ref_base, c.arena_len,
                     "simdnorm_normalize_reference");
  if (std::memcmp(g_arena.data(), g_before.data(), base - g_arena.data()) ||
      std::memcmp(base + c.arena_len, before + c.arena_len,
                  g_arena.size() - c.arena_len -
                      static_cast<size_t>(base - g_arena.data()))) {
    Fail(c, "simdnorm_normalize wrote outside the arena");
  }
  CheckValues(c, before, base, ref_base);

  // The same call on one thread gives the same bytes, NaN payloads
  // included, and writes nothing else.
  if (max_threads != 1 && rows > 1) {
    g_single = g_before;
    uint8_t* single = Base(g_single, base_shift);
    simdnorm_desc sd = Rebase(d, base, single);
    sd.max_threads = 1;
    if (simdnorm_normalize(&sd) != SIMDNORM_OK) {
      Fail(c, "the call failed with max_threads 1");
    }
    ExpectOnlyYWritten(c, before, single, c.arena_len,
                       "simdnorm_normalize with max_threads 1");
    const size_t ys = y_stride ? y_stride : cols;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t col = 0; col < cols; ++col) {
        const size_t at = static_cast<size_t>(c.off_y) + (r * ys + col) * ye;
        if (std::memcmp(single + at, base + at, ye) == 0) continue;
        const double v1 = LoadElem(single + at, c.yt);
        const double vn = LoadElem(base + at, c.yt);
        uint32_t b1 = 0, bn = 0;
        std::memcpy(&b1, single + at, ye);
        std::memcpy(&bn, base + at, ye);
        char buf[200];
        std::snprintf(buf, sizeof(buf),
                      "max_threads 1 gives other bits than max_threads %zu "
                      "at row %zu col %zu: 0x%X (%.9g) vs 0x%X (%.9g)",
                      max_threads, r, col, b1, v1, bn, vn);
        Fail(c, buf);
      }
    }
  }
  return 0;
}
