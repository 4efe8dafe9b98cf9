// The hand-written loop's threading, the byte counts, the memcpy peer and
// the consumer of y.
#include "peers.h"

#include <algorithm>
#include <cstring>

#include "naive_loops.h"
#include "parallel_range.h"
#include "simdnorm/simdnorm.hpp"
#include "unfused_loops.h"

namespace simdnorm_peers {

const char* naive_flags() {
#ifdef SIMDNORM_NAIVE_FLAGS
  return SIMDNORM_NAIVE_FLAGS;
#else
  return "default flags";
#endif
}

size_t dtype_size(simdnorm_dtype t) {
  switch (t) {
    case SIMDNORM_BF16:
    case SIMDNORM_F16:
      return 2;
    case SIMDNORM_I8:
      return 1;
    default:
      return 4;
  }
}

float load_float(const void* p, simdnorm_dtype t, size_t i) {
  const auto* b = static_cast<const unsigned char*>(p) + i * dtype_size(t);
  if (t == SIMDNORM_I8) return static_cast<float>(static_cast<int8_t>(*b));
  if (t == SIMDNORM_F32) {
    float f;
    std::memcpy(&f, b, sizeof(f));
    return f;
  }
  uint16_t h;
  std::memcpy(&h, b, sizeof(h));
  return t == SIMDNORM_BF16 ? simdnorm::bf16::from_bits(h).to_float()
                            : simdnorm::f16::from_bits(h).to_float();
}

size_t scales_per_row(const simdnorm_desc& d) {
  if (d.y_type != SIMDNORM_I8 || d.cols == 0) return 0;
  const size_t g = d.quant_group ? d.quant_group : d.cols;
  return (d.cols + g - 1) / g;
}

size_t moved_bytes(const simdnorm_desc& d) {
  const size_t sx = dtype_size(d.x_type);
  size_t per_element = sx + dtype_size(d.y_type);
  if (d.residual) per_element += sx;
  if (d.sum_out) per_element += sx;
  return d.rows * d.cols * per_element + d.rows * scales_per_row(d) * 4;
}

bool naive_normalize(const simdnorm_desc& d) {
  if (d.rows == 0 || d.cols == 0 || d.x == nullptr || d.y == nullptr) {
    return false;
  }
  // The textbook loop has none of the fused variants.
  if (d.residual || d.sum_out || d.gamma_offset != 0.0f || d.flags != 0 ||
      d.y_type == SIMDNORM_I8) {
    return false;
  }
  if (d.x_type != SIMDNORM_F32 && d.x_type != SIMDNORM_BF16) return false;
  const size_t grain = detail::RowGrain(d.cols * dtype_size(d.x_type));
  bool ok = true;
  detail::ParallelRange(d.rows, grain, d.max_threads,
                        [&](size_t r0, size_t r1) {
                          if (!detail::naive_rows(d, r0, r1)) ok = false;
                        });
  return ok;
}

void copy_bytes(const simdnorm_desc& d, const void* src, void* dst) {
  // Blocks of 64 KiB also on one thread: one large memcpy switches glibc to
  // non-temporal stores, which bypass the caches a normalize call writes
  // through, and would make the peer slower than it is for cache-sized data.
  const size_t n = moved_bytes(d) / 2;
  const size_t block = 64 << 10;
  const size_t blocks = (n + block - 1) / block;
  const char* s = static_cast<const char*>(src);
  char* t = static_cast<char*>(dst);
  detail::ParallelRange(blocks, 1, d.max_threads, [&](size_t b0, size_t b1) {
    const size_t begin = b0 * block;
    const size_t end = std::min(n, b1 * block);
    std::memcpy(t + begin, s + begin, end - begin);
  });
}

float dot_y(const simdnorm_desc& d, const float* w) {
  return detail::dot_rows(d, w);
}

}  // namespace simdnorm_peers
