#include "problem.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "peers.h"

namespace simdnorm_peers {
namespace {

// SplitMix64: fast, fixed, good enough for benchmark data.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Sum of 4 uniforms in [-1, 1), scaled to unit variance: bell-shaped.
  float Bell() {
    const uint64_t u = Next();
    float sum = 0.0f;
    for (int i = 0; i < 4; ++i) {
      sum += static_cast<float>((u >> (16 * i)) & 0xFFFF) / 32768.0f - 1.0f;
    }
    return sum * 0.8660254f;  // sqrt(3 / 4)
  }
};

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even (finite inputs)
  return static_cast<uint16_t>(u >> 16);
}

// IEEE binary16, round to nearest even, for the finite values Fill makes
// (|f| < 65504; tiny ones become subnormal or zero).
uint16_t ToF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = f < 0.0f ? -f : f;
  if (a < 6.103515625e-05f) {  // below 2^-14: subnormal steps of 2^-24
    const float steps = a * 16777216.0f;  // exact: a power-of-two scaling
    uint32_t q = static_cast<uint32_t>(steps);
    const float rest = steps - static_cast<float>(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t m = u & 0x7FFFFFFFu;
  m += 0xFFFu + ((m >> 13) & 1u);                     // round off 13 bits
  const uint32_t h = (m >> 13) - ((127 - 15) << 10);  // rebias the exponent
  return static_cast<uint16_t>(sign | h);
}

void Fill(void* p, simdnorm_dtype t, size_t n, float offset, float scale,
          Rng& rng) {
  if (t == SIMDNORM_BF16) {
    uint16_t* q = static_cast<uint16_t*>(p);
    for (size_t i = 0; i < n; ++i) q[i] = ToBf16(offset + scale * rng.Bell());
  } else if (t == SIMDNORM_F16) {
    uint16_t* q = static_cast<uint16_t*>(p);
    for (size_t i = 0; i < n; ++i) q[i] = ToF16(offset + scale * rng.Bell());
  } else {
    float* q = static_cast<float*>(p);
    for (size_t i = 0; i < n; ++i) q[i] = offset + scale * rng.Bell();
  }
}

}  // namespace

Buffer AllocateAligned(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) throw std::bad_alloc();
  return Buffer(p);
}

namespace {

// `offset` bytes into a fresh 64-byte aligned block of bytes + offset.
char* Offset(Buffer* b, size_t bytes, size_t offset) {
  *b = AllocateAligned(bytes + offset);
  return static_cast<char*>(b->get()) + offset;
}

}  // namespace

bool ProblemShape::operator==(const ProblemShape& o) const {
  return kind == o.kind && rows == o.rows && cols == o.cols &&
         x_type == o.x_type && y_type == o.y_type &&
         param_type == o.param_type && gamma == o.gamma && beta == o.beta &&
         max_threads == o.max_threads && eps == o.eps &&
         residual == o.residual && in_place == o.in_place &&
         x_stride == o.x_stride && quant_group == o.quant_group &&
         gamma_offset == o.gamma_offset && flags == o.flags &&
         x_offset == o.x_offset && y_offset == o.y_offset;
}

Problem::Problem(const ProblemShape& s) : shape_(s) {
  const size_t n = s.rows * s.cols;
  const size_t xs = s.x_stride ? s.x_stride : s.cols;
  const size_t sx = dtype_size(s.x_type);
  desc_.kind = s.kind;
  desc_.rows = s.rows;
  desc_.cols = s.cols;
  desc_.x_type = s.x_type;
  desc_.x_stride = s.x_stride;
  desc_.y_type = s.y_type;
  desc_.param_type = s.param_type;
  desc_.eps = s.eps;
  desc_.max_threads = s.max_threads;
  desc_.gamma_offset = s.gamma_offset;
  desc_.flags = s.flags;
  desc_.quant_group = s.y_type == SIMDNORM_I8 ? s.quant_group : 0;
  // Pointers set below; non-null placeholders first so that moved_bytes
  // counts the operands that will be there.
  static char placeholder;
  if (s.residual) desc_.residual = desc_.sum_out = &placeholder;
  const size_t bytes = std::max(s.rows * xs * 4, moved_bytes(desc_) / 2 + 64);

  Rng rng{0x5EED0000ull + s.cols};
  char* x = Offset(&x_, bytes, s.x_offset);
  std::memset(x, 0, bytes);  // the gaps between strided rows too
  for (size_t r = 0; r < s.rows; ++r) {
    Fill(x + r * xs * sx, s.x_type, s.cols, 0.25f, 1.0f, rng);
  }
  char* y = Offset(&y_, bytes, s.y_offset);
  std::memset(y, 0, bytes);
  x_data_ = x;
  y_data_ = y;
  desc_.x = x;
  if (s.in_place) {
    desc_.y = x;
    desc_.y_stride = s.x_stride;
  } else {
    desc_.y = y;
  }
  if (s.residual) {
    char* residual = Offset(&residual_, n * sx, s.x_offset);
    Fill(residual, s.x_type, n, 0.0f, 1.0f, rng);
    desc_.residual = residual;
    if (s.in_place) {
      desc_.sum_out = residual;
    } else {
      char* sum = Offset(&sum_, n * sx, s.x_offset);
      std::memset(sum, 0, n * sx);
      desc_.sum_out = sum;
    }
  }
  if (s.y_type == SIMDNORM_I8) {
    const size_t scale_bytes = s.rows * scales_per_row(desc_) * 4;
    y_scale_ = AllocateAligned(scale_bytes);
    std::memset(y_scale_.get(), 0, scale_bytes);
    desc_.y_scale = static_cast<float*>(y_scale_.get());
    scratch_ = AllocateAligned(n * 4);
    std::memset(scratch_.get(), 0, n * 4);
  }
  const size_t pbytes = s.cols * dtype_size(s.param_type);
  if (s.gamma) {
    char* gamma = Offset(&gamma_, pbytes, s.x_offset);
    Fill(gamma, s.param_type, s.cols, 1.0f, 0.1f, rng);
    desc_.gamma = gamma;
  }
  if (s.beta) {
    char* beta = Offset(&beta_, pbytes, s.x_offset);
    Fill(beta, s.param_type, s.cols, 0.0f, 0.1f, rng);
    desc_.beta = beta;
  }
}

}  // namespace simdnorm_peers
