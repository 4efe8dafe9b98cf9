// libFuzzer target: random descriptors and rows through simdnorm_normalize
// and simdnorm_normalize_reference, on an ISA chosen by the input.
//
// Input layout (bytes; missing bytes read as 0; make_corpus.py writes it):
//   0 isa: k % (count + 1) (count = "auto"); >= 0xF8: an unknown name
//   1 kind   2 x_type   3 y_type   4 param_type: < 0xF0: value & 1,
//     else a value of kBadEnums (2 and 3, F16 and I8, are valid dtypes)
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
//   30 base shift: the arena starts (k % 16) * 4 bytes past 64-byte
//      aligned; bit 6 (0x40): the 12-byte extension below follows
//   extension (issue #7 fields; without it they are all zero):
//   31 dtype overrides, 2 bits each for x (bits 0-1), y (2-3), param (4-5):
//      0 keep, 1 F16, 2 I8, 3 F32
//   32 residual mode (low nibble % 5), sum_out mode (high nibble % 8):
//      see PlaceExtension()
//   33-34 residual stride (mode, arg; mode 7 = x's)
//   35-36 sum_out stride (mode, arg; mode 7 = the residual's)
//   37 gamma_offset (% 8: 0, 1, -0, -1, NaN, inf, 0.5, FLT_MAX)
//   38 flags: < 0x80: bit 0 (SIMDNORM_ROUND_NORMALIZED), bits 5 and 6
//      (SIMDNORM_Y_STREAM, SIMDNORM_Y_CACHED), bit 1
//      (SIMDNORM_FAST_ROUNDING); 0xFF: 1 << 31;
//      else the byte itself (unknown bits)
//   39-40 quant_group (mode, arg): see DecodeGroup()
//   41 y_scale mode (% 8), 42 its delta (int8): see PlaceExtension()
//   then 7-byte patches: which (x/gamma/beta, row), col (LE16), raw bits
//   (LE32; 16-bit elements take the low 16 bits)
//
// x, y, gamma, beta, residual, sum_out and y_scale live in one arena (their
// offsets chosen so that in place, overlaps and near-overlaps happen);
// every other byte holds random data. Checks (any failure prints the case
// and aborts):
// - both entry points return the status of Predict(), an independent
//   implementation of the documented validation rules (docs/robustness.md,
//   notes/spec7.md);
// - on any status but OK the whole arena is unchanged;
// - on OK, no byte outside the outputs (y's rows, sum_out's rows, the
//   scales) changed; each y element meets the bound against
//   simdnorm::reference_f64 (CheckF32 / CheckHalf / CheckRoundNormalized /
//   CheckI8Group of tests/support/checks.h; NaN where the reference is
//   NaN); the reference's own output is the float64 value rounded once;
//   sum_out holds the reference's h bit for bit (NaN for NaN), itself x
//   (+ residual, rounded once); and a run with max_threads 1 gives the
//   same bytes.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/checks.h"
#include "support/half.h"
#include "support/text.h"

namespace {

using simdnorm_test::CheckF32;
using simdnorm_test::CheckHalf;
using simdnorm_test::CheckI8Group;
using simdnorm_test::CheckRoundNormalized;
using simdnorm_test::EffectiveScale;
using simdnorm_test::F32Bound;
using simdnorm_test::FloatBits;
using simdnorm_test::FloatFromBits;
using simdnorm_test::Half;
using simdnorm_test::HalfIsFinite;
using simdnorm_test::HalfIsNaN;
using simdnorm_test::HalfOf;
using simdnorm_test::HalfOrdered;
using simdnorm_test::HalfToDouble;
using simdnorm_test::RoundToHalf;

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

float DecodeGammaOffset(uint8_t b) {
  static const float kOffsets[8] = {0.0f, 1.0f,     -0.0f, -1.0f,
                                    NAN,  INFINITY, 0.5f,  FLT_MAX};
  return kOffsets[b % 8];
}

unsigned DecodeFlags(uint8_t b) {
  // bit 0: ROUND_NORMALIZED; bits 5, 6: y stores; bit 1: FAST_ROUNDING.
  if (b < 0x80) return (b & 1u) | ((b >> 4) & 6u) | ((b & 2u) << 2);
  return b == 0xFF ? 1u << 31 : b;
}

size_t DecodeGroup(uint8_t mode, uint8_t arg, size_t cols) {
  switch (mode % 8) {
    case 1:
      return 1;
    case 2:
      return 1 + arg % 64;
    case 3:
      return 32;
    case 4:
      return 128;
    case 5:
      return cols + arg;
    case 6:
      return SIZE_MAX;
    case 7:
      return arg;
    default:
      return 0;
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

// Element bytes of a dtype (4 for invalid values: they are laid out as f32).
size_t ElemBytes(int dtype) {
  return dtype == SIMDNORM_BF16 || dtype == SIMDNORM_F16 ? 2
         : dtype == SIMDNORM_I8                          ? 1
                                                         : 4;
}
bool Is16(int dtype) { return dtype == SIMDNORM_BF16 || dtype == SIMDNORM_F16; }

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

// Scales per row of an I8 output: ceil(cols / group), group 0 = cols.
size_t ScalesPerRow(size_t cols, size_t group) {
  if (cols == 0) return 0;
  const size_t g = group == 0 || group > cols ? cols : group;
  return (cols - 1) / g + 1;
}

// The status the documented rules give, checked in this order:
// 1 INVALID_ARGUMENT: kind not a row kind of the registry, or a dtype
//   outside its enum;
// 2 UNSUPPORTED: I8 as x_type or param_type;
// 3 INVALID_ARGUMENT: y_type not I8 with y_scale or quant_group set; eps
//   NaN, infinite or negative (-0 is fine); gamma_offset not finite; a
//   flag other than SIMDNORM_ROUND_NORMALIZED, _Y_STREAM and _Y_CACHED, or
//   both of the last two;
// 4 OK when rows == 0 (nothing else is looked at);
// 5 INVALID_ARGUMENT: x or y NULL, or y_scale NULL for I8;
// 6 INVALID_SHAPE: cols 0, a stride (0 = cols) below cols (residual's and
//   sum_out's only when they are set), or the bytes of x, y, gamma, beta,
//   residual, sum_out or the scales beyond the address space;
// 7 OVERLAP: an output (y, sum_out, scales) meets another buffer, except
//   y == x exactly (same pointer, element size and stride), sum_out == x
//   or sum_out == residual exactly (same pointer and stride);
// 8 OK.
simdnorm_status Predict(const simdnorm_desc& d, int kind, int xt, int yt,
                        int pt) {
  auto valid = [](int t) { return t >= SIMDNORM_F32 && t <= SIMDNORM_I8; };
  // A kind of simdnorm_desc: the registry's row kinds (L2 among them; not
  // GroupNorm, whose descriptor is another).
  const simdnorm_op_info* op = simdnorm_op_of(static_cast<simdnorm_kind>(kind));
  if (op == nullptr || op->descriptor != SIMDNORM_ROW_DESC || !valid(xt) ||
      !valid(yt) || !valid(pt)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (xt == SIMDNORM_I8 || pt == SIMDNORM_I8) return SIMDNORM_UNSUPPORTED;
  const bool i8 = yt == SIMDNORM_I8;
  if (!i8 && (d.y_scale != nullptr || d.quant_group != 0)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (std::isnan(d.eps) || std::isinf(d.eps) || d.eps < 0.0f ||
      !std::isfinite(d.gamma_offset) || (d.flags | 15u) != 15u ||
      (d.flags & 6u) == 6u) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  if (d.rows == 0) return SIMDNORM_OK;
  if (d.x == nullptr || d.y == nullptr || (i8 && d.y_scale == nullptr)) {
    return SIMDNORM_INVALID_ARGUMENT;
  }
  const size_t xs = d.x_stride ? d.x_stride : d.cols;
  const size_t ys = d.y_stride ? d.y_stride : d.cols;
  const size_t rs = d.residual_stride ? d.residual_stride : d.cols;
  const size_t ss = d.sum_out_stride ? d.sum_out_stride : d.cols;
  if (d.cols == 0 || xs < d.cols || ys < d.cols ||
      (d.residual && rs < d.cols) || (d.sum_out && ss < d.cols)) {
    return SIMDNORM_INVALID_SHAPE;
  }
  const size_t spr = ScalesPerRow(d.cols, d.quant_group);
  const size_t xe = ElemBytes(xt);
  Range x, y, g, b, r, s, q;
  if (!SpanOf(d.x, d.rows, d.cols, xs, xe, &x) ||
      !SpanOf(d.y, d.rows, d.cols, ys, ElemBytes(yt), &y) ||
      (d.gamma && !SpanOf(d.gamma, 1, d.cols, d.cols, ElemBytes(pt), &g)) ||
      (d.beta && !SpanOf(d.beta, 1, d.cols, d.cols, ElemBytes(pt), &b)) ||
      (d.residual && !SpanOf(d.residual, d.rows, d.cols, rs, xe, &r)) ||
      (d.sum_out && !SpanOf(d.sum_out, d.rows, d.cols, ss, xe, &s)) ||
      (i8 && !SpanOf(d.y_scale, d.rows, spr, spr, 4, &q))) {
    return SIMDNORM_INVALID_SHAPE;
  }
  // Every (output, other buffer) pair, but the allowed exact aliases.
  enum { kX, kGamma, kBeta, kResidual, kY, kSumOut, kScales, kBufs };
  const void* const ptr[kBufs] = {d.x,
                                  d.gamma,
                                  d.beta,
                                  d.residual,
                                  d.y,
                                  d.sum_out,
                                  i8 ? d.y_scale : nullptr};
  const Range range[kBufs] = {x, g, b, r, y, s, q};
  auto allowed = [&](int out, int other) {
    if (out == kY && other == kX) {
      return d.y == d.x && ElemBytes(xt) == ElemBytes(yt) && ys == xs;
    }
    if (out == kSumOut && other == kX) return d.sum_out == d.x && ss == xs;
    if (out == kSumOut && other == kResidual) {
      return d.sum_out == d.residual && ss == rs;
    }
    return false;
  };
  for (int out : {kY, kSumOut, kScales}) {
    if (ptr[out] == nullptr) continue;
    for (int other = 0; other < kBufs; ++other) {
      if (other == out || ptr[other] == nullptr) continue;
      if (Intersect(range[out], range[other]) && !allowed(out, other)) {
        return SIMDNORM_OVERLAP;
      }
    }
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
  long long off_r = -1, off_s = -1, off_q = -1;  // residual, sum_out, scales
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
        "beta %lld residual %lld sum_out %lld y_scale %lld (-1 = NULL); "
        "residual_stride %zu sum_out_stride %zu gamma_offset %.9g flags 0x%X "
        "quant_group %zu; x family %d, weight family %d; predicted %s",
        isa, isa_byte, kind, xt, yt, pt, d.rows, d.cols, d.x_stride, d.y_stride,
        static_cast<double>(d.eps), FloatBits(d.eps), d.max_threads, arena_len,
        off_x, off_y, off_g, off_b, off_r, off_s, off_q, d.residual_stride,
        d.sum_out_stride, static_cast<double>(d.gamma_offset), d.flags,
        d.quant_group, x_family, w_family, simdnorm_status_string(predicted));
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
  r.residual = move(d.residual);
  r.sum_out = move(d.sum_out);
  r.y_scale = reinterpret_cast<float*>(move(d.y_scale));
  return r;
}

double LoadElem(const uint8_t* p, int dtype) {
  if (Is16(dtype)) {
    uint16_t b;
    std::memcpy(&b, p, 2);
    return HalfToDouble(HalfOf(static_cast<simdnorm_dtype>(dtype)), b);
  }
  if (dtype == SIMDNORM_I8) return static_cast<int8_t>(*p);
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

void StoreElem(uint8_t* p, int dtype, uint32_t bits) {
  if (Is16(dtype)) {
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(p, &b, 2);
  } else if (dtype == SIMDNORM_I8) {
    *p = static_cast<uint8_t>(bits);
  } else {
    std::memcpy(p, &bits, 4);
  }
}

uint32_t BitsOf(float v, int dtype) {
  if (dtype == SIMDNORM_BF16) return simdnorm_test::Bf16Bits(v);
  if (dtype == SIMDNORM_F16) return simdnorm_test::F16Bits(v);
  return FloatBits(v);
}

// What the executions were (printed at exit when SIMDNORM_FUZZ_STATS is
// set): by predicted status, skipped valid descriptors beyond the arena,
// and elements checked.
struct Counts {
  size_t by_status[5] = {};
  size_t skipped = 0, rows0 = 0, in_place = 0, elements = 0, nan_refs = 0;
  size_t fused = 0, int8 = 0, i8_overflow = 0, i8_subnormal = 0;
  size_t i8_round_normalized = 0, i8_wide_bound = 0;
  size_t subnormal_tolerance = 0, inf_gamma_near_zero = 0;
  ~Counts() {
    if (std::getenv("SIMDNORM_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr,
                 "simdnorm_fuzz: OK %zu (rows 0: %zu, in place: %zu, fused "
                 "add: %zu, int8: %zu), INVALID_ARGUMENT %zu, INVALID_SHAPE "
                 "%zu, OVERLAP %zu, UNSUPPORTED %zu; skipped %zu; elements "
                 "checked %zu (NaN truth %zu, passed by the subnormal step "
                 "only %zu, infinite gamma times near-zero xhat %zu; int8 "
                 "groups passed as overflowing %zu, with a subnormal scale "
                 "%zu, with a neighbouring rounded xhat %zu, within a wide "
                 "fp32 bound %zu)\n",
                 by_status[0], rows0, in_place, fused, int8, by_status[1],
                 by_status[2], by_status[3], by_status[4], skipped, elements,
                 nan_refs, subnormal_tolerance, inf_gamma_near_zero,
                 i8_overflow, i8_subnormal, i8_round_normalized, i8_wide_bound);
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

// 16-bit element (bf16 or f16): CheckHalf, and where the once-rounded
// truth overflows to infinity, also a finite value inside the fp32-bound
// window.
bool CheckHalfElem(Half h, uint16_t got, uint16_t want, double ref,
                   double bound, simdnorm_test::Stats* st, std::string* why) {
  if (!HalfIsNaN(h, want) && !HalfIsFinite(h, want) && HalfIsFinite(h, got) &&
      std::isfinite(ref)) {
    const int32_t o = HalfOrdered(got);
    if (o >= HalfOrdered(RoundToHalf(h, ref - bound)) &&
        o <= HalfOrdered(RoundToHalf(h, ref + bound))) {
      return true;
    }
  }
  return CheckHalf(h, got, want, ref, bound, st, why);
}

// One int8 group: CheckI8Group, with the ends of the float range again:
// - a group whose fp32 results may overflow (|y64| + bound >= FLT_MAX for
//   some element) may have scale +inf and q 0, as if y were infinite;
// - a scale below FLT_MIN is stored as a float subnormal, up to 2^-149 off
//   whatever its relative precision: such groups need the scale within
//   1e-6 relative + 2^-149, and q in range with the sign of y (or 0);
// - with ROUND_NORMALIZED the library's xhat may round to the neighbour of
//   the float64 one (see CheckRoundNormalized): the scale then needs to be
//   within 1e-6 + `spacing` (x_type's relative spacing) and q within 2.
std::vector<double> g_terms;

bool CheckI8Elem(const int8_t* q, float scale, const int8_t* ref_q,
                 float ref_scale, const double* y64, const double* bounds,
                 size_t n, double spacing, simdnorm_test::Stats* st,
                 std::string* why) {
  double m = 0.0;
  bool may_overflow = false, nan = false;
  for (size_t i = 0; i < n; ++i) {
    nan |= std::isnan(y64[i]);
    m = std::max(m, std::fabs(y64[i]));
    may_overflow |= std::fabs(y64[i]) + bounds[i] >= FLT_MAX;
  }
  bool zeros = true;
  for (size_t i = 0; i < n; ++i) zeros &= q[i] == 0;
  if (!nan && std::isfinite(m) && may_overflow && scale == HUGE_VALF && zeros) {
    ++g_counts.i8_overflow;
    return true;
  }
  const double s64 = m / 127.0;
  if (!nan && std::isfinite(s64) && s64 > 0.0 && s64 < FLT_MIN) {
    ++g_counts.i8_subnormal;
    double m_bound = 0.0;  // y's fp32 bound may exceed y itself here
    for (size_t i = 0; i < n; ++i) m_bound = std::max(m_bound, bounds[i]);
    if (!(std::fabs(scale - s64) <= 1e-6 * s64 + 0x1p-149 + m_bound / 127)) {
      *why = "subnormal scale " + simdnorm_test::Num(scale) + ", want " +
             simdnorm_test::Num(s64);
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      if (q[i] < -127 || (q[i] > 0 && y64[i] <= 0) ||
          (q[i] < 0 && y64[i] >= 0)) {
        *why = "q " + std::to_string(q[i]) + " for y " +
               simdnorm_test::Num(y64[i]) + " (subnormal scale)";
        return false;
      }
    }
    return true;
  }
  // The scaled form of the 1e-6 rule (see CheckI8Group): Terms recovered
  // from the fp32 bounds, bounds = 32 * 2^-23 * Terms.
  g_terms.resize(n);
  for (size_t i = 0; i < n; ++i) g_terms[i] = bounds[i] * 0x1p18;
  if (CheckI8Group(q, scale, ref_q, ref_scale, y64, g_terms.data(), n, st,
                   why)) {
    return true;
  }
  // Where the fp32 bound of y is wide against y itself (e.g. gamma ~1e38
  // times an xhat ~1e-38, whose fp32 error is absolute), the scale may be
  // off by that much (the scaled rule above) and so may every q: q then
  // needs to be within 1 + bound / scale of y64 / scale.
  if (!nan && std::isfinite(s64) && s64 > 0.0 && scale >= 0.0f &&
      std::isfinite(scale)) {
    double m_bound = 0.0;
    for (size_t i = 0; i < n; ++i) m_bound = std::max(m_bound, bounds[i]);
    if (scale == 0.0f) {  // every fp32 y may be 0 within its bound
      bool ok = zeros;
      for (size_t i = 0; ok && i < n; ++i) ok = std::fabs(y64[i]) <= bounds[i];
      if (ok) ++g_counts.i8_wide_bound;
      return ok;
    }
    bool ok = std::fabs(scale - s64) <= (m_bound + 1e-6 * m) / 127.0;
    for (size_t i = 0; ok && i < n; ++i) {
      ok = q[i] != -128 &&
           std::fabs(q[i] - y64[i] / scale) <= 1.0 + bounds[i] / scale;
    }
    if (ok) {
      ++g_counts.i8_wide_bound;
      return true;
    }
  }
  if (spacing == 0.0 || nan || !std::isfinite(s64) || s64 == 0.0) return false;
  if (!(std::fabs(scale - s64) <= (1e-6 + spacing) * s64)) return false;
  for (size_t i = 0; i < n; ++i) {
    if (q[i] == -128 || std::fabs(q[i] - std::nearbyint(y64[i] / s64)) > 2) {
      return false;
    }
  }
  ++g_counts.i8_round_normalized;
  return true;
}

// Reused between executions (the fuzzer runs one input at a time).
std::vector<uint8_t> g_arena, g_before, g_ref_arena, g_single, g_mask;
std::vector<double> g_ref, g_xhat, g_plain, g_true_xhat, g_bounds;

uint8_t* Base(std::vector<uint8_t>& v, size_t shift) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + (64 - p % 64) % 64 + shift;
}

// Resolved strides of a case (0 = cols).
struct Strides {
  size_t x, y, residual, sum_out, scales;
  explicit Strides(const simdnorm_desc& d)
      : x(d.x_stride ? d.x_stride : d.cols),
        y(d.y_stride ? d.y_stride : d.cols),
        residual(d.residual_stride ? d.residual_stride : d.cols),
        sum_out(d.sum_out_stride ? d.sum_out_stride : d.cols),
        scales(ScalesPerRow(d.cols, d.quant_group)) {}
};

// Marks the bytes of the outputs (y's rows, sum_out's rows, the scales) in
// g_mask, over the arena.
void MarkOutputs(const Case& c) {
  const simdnorm_desc& d = c.d;
  const Strides st(d);
  g_mask.assign(c.arena_len, 0);
  auto mark = [&](long long off, size_t stride, size_t len, size_t es) {
    if (off < 0) return;
    for (size_t r = 0; r < d.rows; ++r) {
      const size_t from = static_cast<size_t>(off) + r * stride * es;
      std::memset(&g_mask[from], 1, len * es);
    }
  };
  mark(c.off_y, st.y, d.cols, ElemBytes(c.yt));
  mark(c.off_s, st.sum_out, d.cols, ElemBytes(c.xt));
  mark(c.off_q, st.scales, st.scales, 4);
}

// Checks that no byte of `got` outside the outputs differs from `want`.
void ExpectOnlyOutputsWritten(const Case& c, const uint8_t* want,
                              const uint8_t* got, const char* who) {
  for (size_t i = 0; i < c.arena_len; ++i) {
    if (g_mask[i] || want[i] == got[i]) continue;
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "%s wrote outside its outputs: arena byte %zu (y at %lld, "
                  "sum_out at %lld, y_scale at %lld)",
                  who, i, c.off_y, c.off_s, c.off_q);
    Fail(c, buf);
  }
}

// The relative spacing of x_type's values (an upper bound): how far a
// neighbouring rounded xhat may be from the float64 one.
double XSpacing(int xt) {
  return xt == SIMDNORM_F32 ? 0x1p-23 : xt == SIMDNORM_BF16 ? 0x1p-7 : 0x1p-10;
}

// h of one element as the contract defines it: x, or x + residual rounded
// once to x_type.
double WantH(int xt, double x, double r, bool has_residual) {
  if (!has_residual) return x;
  const double sum = x + r;
  if (Is16(xt)) {
    const Half h = HalfOf(static_cast<simdnorm_dtype>(xt));
    return HalfToDouble(h, RoundToHalf(h, sum));
  }
  return static_cast<float>(sum);
}

// Checks every output of an OK call against the float64 truth. `before`
// is the arena before the call, `got` after it (d points into `got`),
// `ref_out` after simdnorm_normalize_reference.
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
  // With ROUND_NORMALIZED, xhat before its rounding (the true xhat).
  const bool round_normalized = (d.flags & SIMDNORM_ROUND_NORMALIZED) != 0;
  if (round_normalized) {
    simdnorm_desc plain = bd;
    plain.flags = 0;
    g_plain.resize(n);
    g_true_xhat.resize(n);
    if (simdnorm::reference_f64(plain, g_plain.data(), g_true_xhat.data()) !=
        simdnorm::Status::kOk) {
      Fail(c, "reference_f64 failed without ROUND_NORMALIZED");
    }
  }
  const size_t xe = ElemBytes(c.xt), ye = ElemBytes(c.yt), pe = ElemBytes(c.pt);
  const Strides s(d);
  simdnorm_test::Stats st;
  std::string why;
  auto fail = [&](size_t r, size_t col, const std::string& what) {
    const double x = LoadElem(before + c.off_x + (r * s.x + col) * xe, c.xt);
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "row %zu col %zu: x %.9g, truth %.17g, xhat %.17g: ", r, col,
                  x, g_ref[r * d.cols + col], g_xhat[r * d.cols + col]);
    Fail(c, buf + what);
  };
  g_bounds.resize(d.cols);
  for (size_t r = 0; r < d.rows; ++r) {
    // sum_out: the reference's h bit for bit (NaN for NaN), and that h is
    // x (+ residual) rounded once.
    for (size_t col = 0; d.sum_out && col < d.cols; ++col) {
      const size_t at =
          static_cast<size_t>(c.off_s) + (r * s.sum_out + col) * xe;
      const double x = LoadElem(before + c.off_x + (r * s.x + col) * xe, c.xt);
      const double res =
          d.residual
              ? LoadElem(before + c.off_r + (r * s.residual + col) * xe, c.xt)
              : 0.0;
      const double want = WantH(c.xt, x, res, d.residual != nullptr);
      const double h_ref = LoadElem(ref_out + at, c.xt);
      const bool ref_ok =
          std::isnan(want)
              ? std::isnan(h_ref)
              : h_ref == want && std::signbit(h_ref) == std::signbit(want);
      if (!ref_ok) fail(r, col, "the reference's sum_out is not x + residual");
      if (!simdnorm_test::SameElement(static_cast<simdnorm_dtype>(c.xt),
                                      got + at, ref_out + at)) {
        fail(r, col,
             "sum_out " + simdnorm_test::Num(LoadElem(got + at, c.xt)) +
                 ", the reference's " + simdnorm_test::Num(h_ref));
      }
    }
    // y.
    for (size_t col = 0; col < d.cols; ++col) {
      const size_t i = r * d.cols + col;
      const size_t at = static_cast<size_t>(c.off_y) + (r * s.y + col) * ye;
      const double g =
          c.off_g >= 0 ? LoadElem(before + c.off_g + col * pe, c.pt) : 1.0;
      const double b =
          c.off_b >= 0 ? LoadElem(before + c.off_b + col * pe, c.pt) : 0.0;
      const double scale = EffectiveScale(d.gamma_offset, g);
      const double ref = g_ref[i];
      g_bounds[col] = F32Bound(g_xhat[i], scale, b);
      ++g_counts.elements;
      if (std::isnan(ref)) ++g_counts.nan_refs;
      if (c.yt == SIMDNORM_I8) continue;  // by group, below
      uint32_t y = 0, yr = 0;
      std::memcpy(&y, got + at, ye);
      std::memcpy(&yr, ref_out + at, ye);
      // The truth rounded once by the test's own rounding (not the
      // library's reference, checked separately just below).
      uint32_t once;
      bool ref_ok, ok;
      if (c.yt == SIMDNORM_F32) {
        const float f = static_cast<float>(ref);
        once = FloatBits(f);
        ref_ok = std::isnan(f) ? std::isnan(FloatFromBits(yr)) : yr == once;
      } else {
        const Half h = HalfOf(static_cast<simdnorm_dtype>(c.yt));
        once = RoundToHalf(h, ref);
        // The reference rounds the exact result, which the double truth
        // need not resolve (a tiny xhat in a row of huge values has a large
        // relative error in double): any rounding of a value within the
        // fp32 bound of the truth (the kernels are held to the reference's
        // bytes below).
        // Results of inf or NaN weights are inf or NaN, by the sign of the
        // exact xhat (or its zero), which a double xhat near 0 may get wrong.
        const double slack = g_bounds[col];
        const int32_t o = HalfOrdered(static_cast<uint16_t>(yr));
        if (!std::isfinite(slack)) {
          ref_ok = !HalfIsFinite(h, static_cast<uint16_t>(yr));
        } else if (HalfIsNaN(h, static_cast<uint16_t>(once))) {
          ref_ok = HalfIsNaN(h, static_cast<uint16_t>(yr));
        } else if (!std::isfinite(ref)) {
          ref_ok = yr == once;
        } else {
          ref_ok = o >= HalfOrdered(RoundToHalf(h, ref - slack)) &&
                   o <= HalfOrdered(RoundToHalf(h, ref + slack));
        }
      }
      if (round_normalized) {
        ok = CheckRoundNormalized(static_cast<simdnorm_dtype>(c.xt),
                                  static_cast<simdnorm_dtype>(c.yt), y,
                                  static_cast<uint16_t>(once), ref,
                                  g_true_xhat[i], scale, b, &st, &why);
        // Subnormal fp32 outputs: one step of 2^-149 more, as in
        // CheckF32Elem (the bound here: the fp32 one plus a neighbouring
        // rounded xhat).
        const double got_f = FloatFromBits(y);
        const double tol =
            g_bounds[col] + XSpacing(c.xt) * std::fabs(g_xhat[i] * scale);
        if (!ok && c.yt == SIMDNORM_F32 && std::isfinite(got_f) &&
            std::isfinite(ref) && std::fabs(ref) + tol < FLT_MIN &&
            std::fabs(got_f - ref) <= tol + 0x1p-149) {
          ++g_counts.subnormal_tolerance;
          ok = true;
        }
      } else if (c.yt == SIMDNORM_F32) {
        ok =
            CheckF32Elem(FloatFromBits(y), ref, g_xhat[i], scale, b, &st, &why);
      } else {
        ok = CheckHalfElem(
            HalfOf(static_cast<simdnorm_dtype>(c.yt)), static_cast<uint16_t>(y),
            static_cast<uint16_t>(once), ref, g_bounds[col], &st, &why);
      }
      // An infinite scale times a near-zero xhat: the bound leaves xhat an
      // absolute error of 32 * 2^-23, so its sign (and whether it is 0) is
      // not defined there, and the product may be +-inf or NaN.
      if (!ok && std::isinf(scale) && std::fabs(g_xhat[i]) <= 32 * 0x1p-23 &&
          !std::isfinite(LoadElem(got + at, c.yt))) {
        ++g_counts.inf_gamma_near_zero;
        ok = true;
      }
      // Correctly rounded 16-bit outputs: the reference's bytes exactly.
      if (ok && ref_ok && c.yt != SIMDNORM_F32 &&
          (d.flags & SIMDNORM_FAST_ROUNDING) == 0) {
        const Half h = HalfOf(static_cast<simdnorm_dtype>(c.yt));
        const bool same = HalfIsNaN(h, static_cast<uint16_t>(y))
                              ? HalfIsNaN(h, static_cast<uint16_t>(yr))
                              : y == yr;
        if (!same) {
          ok = false;
          why = "not the reference's correctly rounded bits " +
                simdnorm_test::Hex(yr, 4) + " (got " +
                simdnorm_test::Hex(y, 4) + ")";
        }
      }
      if (!ok || !ref_ok) {
        fail(r, col,
             ok ? std::string("simdnorm_normalize_reference did not round "
                              "the truth once")
                : why);
      }
    }
    if (c.yt != SIMDNORM_I8) continue;
    const double spacing = round_normalized ? XSpacing(c.xt) : 0.0;
    const size_t len =
        d.quant_group == 0 || d.quant_group > d.cols ? d.cols : d.quant_group;
    for (size_t k = 0; k < s.scales; ++k) {
      const size_t begin = k * len, end = std::min(d.cols, begin + len);
      const size_t q_at = static_cast<size_t>(c.off_y) + r * s.y + begin;
      const size_t s_at = static_cast<size_t>(c.off_q) + (r * s.scales + k) * 4;
      float scale, ref_scale;
      std::memcpy(&scale, got + s_at, 4);
      std::memcpy(&ref_scale, ref_out + s_at, 4);
      if (!CheckI8Elem(reinterpret_cast<const int8_t*>(got + q_at), scale,
                       reinterpret_cast<const int8_t*>(ref_out + q_at),
                       ref_scale, &g_ref[r * d.cols + begin], &g_bounds[begin],
                       end - begin, spacing, &st, &why)) {
        fail(r, begin, "int8 group " + std::to_string(k) + ": " + why);
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
  const uint8_t shift_byte = in.U8();
  const size_t base_shift = (shift_byte % 16) * 4;

  // The extension: the fields of issue #7 (all zero without it).
  const bool ext = (shift_byte & 0x40) != 0;
  uint8_t e[12] = {};
  if (ext) {
    for (uint8_t& v : e) v = in.U8();
  }
  static const int kOverride[4] = {-1, SIMDNORM_F16, SIMDNORM_I8, SIMDNORM_F32};
  if (kOverride[e[0] & 3] >= 0) c.xt = kOverride[e[0] & 3];
  if (kOverride[(e[0] >> 2) & 3] >= 0) c.yt = kOverride[(e[0] >> 2) & 3];
  if (kOverride[(e[0] >> 4) & 3] >= 0) c.pt = kOverride[(e[0] >> 4) & 3];
  const int residual_mode = (e[1] & 15) % 5;
  const int sum_mode = (e[1] >> 4) % 8;
  const size_t residual_stride = DecodeStride(e[2], e[3], cols, x_stride, true);
  const size_t sum_stride =
      DecodeStride(e[4], e[5], cols, residual_stride, true);
  const float gamma_offset = DecodeGammaOffset(e[6]);
  const unsigned desc_flags = DecodeFlags(e[7]);
  const size_t quant_group = DecodeGroup(e[8], e[9], cols);
  const int scale_mode = e[10] % 8;
  const int delta2 = static_cast<int8_t>(e[11]);

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
  auto placed = [&](size_t r, size_t c_elems, size_t stride,
                    size_t es) -> size_t {
    if (r == 0 || c_elems == 0) return 0;
    const size_t s = stride ? stride : c_elems;
    const unsigned __int128 elems =
        static_cast<unsigned __int128>(r - 1) * s + c_elems;
    return elems > kMaxPlaced ? 0 : static_cast<size_t>(elems) * es;
  };
  auto placed_bytes = [&](size_t r, size_t stride, size_t es) {
    return placed(r, cols, stride, es);
  };
  const size_t size_x = placed_bytes(rows, x_stride, xe);
  const size_t size_y = placed_bytes(rows, y_stride, ye);
  const size_t size_p = placed_bytes(1, 0, pe);
  // The new buffers take room only with the extension (old inputs keep
  // their arena, hence their data).
  const size_t spr = ScalesPerRow(cols, quant_group);
  const size_t size_r = ext ? placed_bytes(rows, residual_stride, xe) : 0;
  const size_t size_s = ext ? placed_bytes(rows, sum_stride, xe) : 0;
  const size_t size_q = ext ? placed(rows, spr, spr, 4) : 0;
  auto gap = [&](int k) {
    return static_cast<long long>((gaps >> (2 * k)) & 3) * 8;
  };
  long long ox = 0;
  long long oy = ox + static_cast<long long>(size_x) + gap(0);
  long long og = oy + static_cast<long long>(size_y) + gap(1);
  long long ob = og + static_cast<long long>(size_p) + gap(2);
  long long orr = ob + static_cast<long long>(size_p) + gap(3);
  long long os = orr + static_cast<long long>(size_r) + gap(0);
  long long oq = os + static_cast<long long>(size_s) + gap(1);
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
  const long long xd = delta2 * static_cast<long long>(xe), qd = delta2 * 4LL;
  switch (residual_mode) {
    case 2:
      orr = ox;
      break;
    case 3:
      orr = oy + xd;
      break;
    case 4:
      orr = ox + xd;
      break;
    default:
      break;
  }
  switch (sum_mode) {
    case 2:
      os = orr;
      break;
    case 3:
      os = ox;
      break;
    case 4:
      os = oy;
      break;
    case 5:
      os = orr + xd;
      break;
    case 6:
      os = ox + xd;
      break;
    case 7:
      os = og + xd;
      break;
    default:
      break;
  }
  switch (scale_mode) {
    case 3:
      oq = oy + qd;
      break;
    case 4:
      oq = ox + qd;
      break;
    case 5:
      oq = os + qd;
      break;
    case 6:
      oq = og + qd;
      break;
    case 7:
      oq = orr + qd;
      break;
    default:
      break;
  }
  ox &= ~static_cast<long long>(xe - 1);
  oy &= ~static_cast<long long>(ye - 1);
  og &= ~static_cast<long long>(pe - 1);
  ob &= ~static_cast<long long>(pe - 1);
  orr &= ~static_cast<long long>(xe - 1);
  os &= ~static_cast<long long>(xe - 1);
  oq &= ~3LL;
  if ((flags & 0x40) && (flags & 0x30) == 0x30) ob = og;  // beta = gamma
  long long lowest = std::min(std::min(ox, oy), std::min(og, ob));
  if (ext) lowest = std::min(lowest, std::min(orr, std::min(os, oq)));
  const long long shift = static_cast<long long>(kGuard) - (lowest & ~3LL);
  for (long long* o : {&ox, &oy, &og, &ob, &orr, &os, &oq}) *o += shift;
  long long end = std::max(std::max(ox + static_cast<long long>(size_x),
                                    oy + static_cast<long long>(size_y)),
                           std::max(og, ob) + static_cast<long long>(size_p));
  if (ext) {
    end =
        std::max(end, std::max(orr + static_cast<long long>(size_r),
                               std::max(os + static_cast<long long>(size_s),
                                        oq + static_cast<long long>(size_q))));
  }
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
  auto fill_rows = [&](long long off, size_t stride) {
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
        if (family == 4 && Is16(c.xt)) bits = FloatBits(v) >> 16;  // raw
        StoreElem(base + off + (r * stride + col) * xe, c.xt, bits);
      }
    }
  };
  if (size_x) fill_rows(ox, xs);
  const int w_exp = static_cast<int>(rng.Next() % 256) - 128;
  if (size_p) {
    for (size_t col = 0; col < cols; ++col) {
      StoreElem(base + og + col * pe, c.pt,
                BitsOf(Weight(c.w_family, true, rng, w_exp), c.pt));
      StoreElem(base + ob + col * pe, c.pt,
                BitsOf(Weight(c.w_family, false, rng, w_exp), c.pt));
    }
  }
  const size_t rs = residual_stride ? residual_stride : cols;
  if (size_r && residual_mode != 0 && residual_mode != 2) fill_rows(orr, rs);
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
  c.off_r = residual_mode != 0 ? orr : -1;
  c.off_s = sum_mode != 0 ? os : -1;
  const bool scales_set =
      scale_mode == 0 ? c.yt == SIMDNORM_I8 : scale_mode != 1;
  c.off_q = ext && scales_set ? oq : -1;
  d.x = c.off_x >= 0 ? base + c.off_x : nullptr;
  d.y = c.off_y >= 0 ? base + c.off_y : nullptr;
  d.gamma = c.off_g >= 0 ? base + c.off_g : nullptr;
  d.beta = c.off_b >= 0 ? base + c.off_b : nullptr;
  d.residual = c.off_r >= 0 ? base + c.off_r : nullptr;
  d.residual_stride = residual_stride;
  d.sum_out = c.off_s >= 0 ? base + c.off_s : nullptr;
  d.sum_out_stride = sum_stride;
  d.gamma_offset = gamma_offset;
  d.flags = desc_flags;
  d.y_scale = c.off_q >= 0 ? reinterpret_cast<float*>(base + c.off_q) : nullptr;
  d.quant_group = quant_group;
  c.predicted = Predict(d, c.kind, c.xt, c.yt, c.pt);

  // A descriptor that is valid but reaches outside the arena (huge strides
  // that do not overflow) cannot be run: skip it.
  if (c.predicted == SIMDNORM_OK && rows > 0) {
    const unsigned __int128 lo = reinterpret_cast<uintptr_t>(base);
    const unsigned __int128 hi = lo + c.arena_len;
    Range r;
    auto inside = [&](const void* p, size_t n_rows, size_t n_cols,
                      size_t stride, size_t es) {
      return p == nullptr || (SpanOf(p, n_rows, n_cols, stride, es, &r) &&
                              r.begin >= lo && r.end <= hi);
    };
    const Strides s(d);
    if (!inside(d.x, rows, cols, s.x, xe) ||
        !inside(d.y, rows, cols, s.y, ye) ||
        !inside(d.gamma, 1, cols, cols, pe) ||
        !inside(d.beta, 1, cols, cols, pe) ||
        !inside(d.residual, rows, cols, s.residual, xe) ||
        !inside(d.sum_out, rows, cols, s.sum_out, xe) ||
        !inside(d.y_scale, rows, s.scales, s.scales, 4)) {
      ++g_counts.skipped;
      return 0;
    }
  }
  ++g_counts.by_status[c.predicted];
  if (c.predicted == SIMDNORM_OK && rows == 0) ++g_counts.rows0;
  if (c.predicted == SIMDNORM_OK && rows > 0) {
    if (d.x == d.y) ++g_counts.in_place;
    if (d.residual || d.sum_out) ++g_counts.fused;
    if (c.yt == SIMDNORM_I8) ++g_counts.int8;
  }

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
  MarkOutputs(c);
  ExpectOnlyOutputsWritten(c, before, base, "simdnorm_normalize");
  ExpectOnlyOutputsWritten(c, before, ref_base, "simdnorm_normalize_reference");
  if (std::memcmp(g_arena.data(), g_before.data(), base - g_arena.data()) ||
      std::memcmp(base + c.arena_len, before + c.arena_len,
                  g_arena.size() - c.arena_len -
                      static_cast<size_t>(base - g_arena.data()))) {
    Fail(c, "simdnorm_normalize wrote outside the arena");
  }
  CheckValues(c, before, base, ref_base);

  // The same call on one thread gives the same bytes (every output, NaN
  // payloads included) and writes nothing else.
  if (max_threads != 1 && rows > 1) {
    g_single = g_before;
    uint8_t* single = Base(g_single, base_shift);
    simdnorm_desc sd = Rebase(d, base, single);
    sd.max_threads = 1;
    if (simdnorm_normalize(&sd) != SIMDNORM_OK) {
      Fail(c, "the call failed with max_threads 1");
    }
    if (g_single != g_arena) {
      size_t i = 0;
      while (g_single[i] == g_arena[i]) ++i;
      char buf[200];
      std::snprintf(buf, sizeof(buf),
                    "max_threads 1 gives other bytes than max_threads %zu at "
                    "arena byte %zd: 0x%02X vs 0x%02X",
                    max_threads,
                    static_cast<ptrdiff_t>(i) - (base - g_arena.data()),
                    g_single[i], g_arena[i]);
      Fail(c, buf);
    }
  }
  return 0;
}
