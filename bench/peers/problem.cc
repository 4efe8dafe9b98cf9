#include "problem.h"

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

void Fill(void* p, simdnorm_dtype t, size_t n, float offset, float scale,
          Rng& rng) {
  if (t == SIMDNORM_BF16) {
    uint16_t* q = static_cast<uint16_t*>(p);
    for (size_t i = 0; i < n; ++i) q[i] = ToBf16(offset + scale * rng.Bell());
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

Problem::Problem(const ProblemShape& s) : shape_(s) {
  const size_t n = s.rows * s.cols;
  x_ = AllocateAligned(n * 4);
  y_ = AllocateAligned(n * 4);
  Rng rng{0x5EED0000ull + s.cols};
  Fill(x_.get(), s.x_type, n, 0.25f, 1.0f, rng);
  std::memset(y_.get(), 0, n * 4);
  desc_.kind = s.kind;
  desc_.rows = s.rows;
  desc_.cols = s.cols;
  desc_.x = x_.get();
  desc_.x_type = s.x_type;
  desc_.y = y_.get();
  desc_.y_type = s.y_type;
  desc_.param_type = s.param_type;
  desc_.eps = s.eps;
  desc_.max_threads = s.max_threads;
  const size_t pbytes = s.cols * dtype_size(s.param_type);
  if (s.gamma) {
    gamma_ = AllocateAligned(pbytes);
    Fill(gamma_.get(), s.param_type, s.cols, 1.0f, 0.1f, rng);
    desc_.gamma = gamma_.get();
  }
  if (s.beta) {
    beta_ = AllocateAligned(pbytes);
    Fill(beta_.get(), s.param_type, s.cols, 0.0f, 0.1f, rng);
    desc_.beta = beta_.get();
  }
}

}  // namespace simdnorm_peers
