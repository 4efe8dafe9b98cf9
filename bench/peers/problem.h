// One benchmark problem: x, y, gamma and beta buffers filled with fixed
// pseudo-random data, and the simdnorm_desc that points at them. Buffers
// start on a cache line, or `offset` bytes past one, as callers' buffers do
// (std::vector's rows sit 16 bytes off a 64-byte line).
// Shared by the benchmarks and simdnorm-profile.
#ifndef SIMDNORM_BENCH_PEERS_PROBLEM_H_
#define SIMDNORM_BENCH_PEERS_PROBLEM_H_

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "simdnorm/simdnorm.h"

namespace simdnorm_peers {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, FreeDeleter>;

// `bytes` bytes aligned to 64 (a cache line, and a whole AVX-512 vector).
Buffer AllocateAligned(size_t bytes);

struct ProblemShape {
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  size_t rows = 1;
  size_t cols = 896;
  simdnorm_dtype x_type = SIMDNORM_F32;
  simdnorm_dtype y_type = SIMDNORM_F32;
  simdnorm_dtype param_type = SIMDNORM_F32;
  bool gamma = true;
  bool beta = true;
  size_t max_threads = 1;
  float eps = 1e-5f;
  // The fused variants; the defaults keep the plain problem above.
  bool residual = false;  // a residual operand; h = x + residual to sum_out
  // vLLM's in-place form: y = x (same stride; x_type == y_type) and, with a
  // residual, sum_out = residual. Otherwise every output has its own buffer.
  bool in_place = false;
  size_t x_stride = 0;     // elements between rows of x; 0 = cols
  size_t quant_group = 0;  // y_type I8: elements per scale, 0 = the row
  float gamma_offset = 0.0f;
  unsigned flags = 0;
  // Bytes past a 64-byte boundary where x (and the weights, residual and
  // sum_out) start, and where y starts (the same or another offset).
  size_t x_offset = 0;
  size_t y_offset = 0;

  bool operator==(const ProblemShape& o) const;
  bool operator!=(const ProblemShape& o) const { return !(*this == o); }
};

class Problem {
 public:
  // x ~ 0.25 + N(0, 1)-ish, residual ~ N(0, 1)-ish, gamma ~ 1 + small,
  // beta small; outputs zeroed (so their pages are touched before any
  // timing). x and y each hold at least max(rows * x_stride * 4,
  // moved_bytes(desc()) / 2) bytes, so the memcpy peer may copy either way.
  explicit Problem(const ProblemShape& s);

  const simdnorm_desc& desc() const { return desc_; }
  const ProblemShape& shape() const { return shape_; }
  void* x() const { return x_data_; }
  void* y() const { return y_data_; }
  // rows * cols floats for the unfused peer's f32 rows (I8 output only,
  // else null).
  float* scratch() const { return static_cast<float*>(scratch_.get()); }

 private:
  ProblemShape shape_;
  Buffer x_, y_, gamma_, beta_, residual_, sum_, y_scale_, scratch_;
  void* x_data_ = nullptr;  // x_ and y_ past their offsets
  void* y_data_ = nullptr;
  simdnorm_desc desc_{};
};

}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_PROBLEM_H_
