// The hand-written loop's threading and the memcpy peer.
#include "peers.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>

#include "naive_loops.h"

namespace simdnorm_peers {
namespace {

// Runs body(begin, end) over [0, n) split in blocks of at least `grain`, on
// the calling thread (threads == 1), the default arena (0) or an arena of
// `threads` threads.
template <class Body>
void ParallelRange(size_t n, size_t grain, size_t threads, const Body& body) {
  if (threads == 1 || n <= grain) {
    for (size_t b = 0; b < n; b += grain) body(b, std::min(n, b + grain));
    return;
  }
  auto run = [&] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, n, grain),
        [&](const tbb::blocked_range<size_t>& r) { body(r.begin(), r.end()); });
  };
  if (threads == 0) {
    run();
  } else {
    tbb::task_arena arena(static_cast<int>(threads));
    arena.execute(run);
  }
}

}  // namespace

const char* naive_flags() {
#ifdef SIMDNORM_NAIVE_FLAGS
  return SIMDNORM_NAIVE_FLAGS;
#else
  return "default flags";
#endif
}

size_t dtype_size(simdnorm_dtype t) { return t == SIMDNORM_BF16 ? 2 : 4; }

size_t moved_bytes(const simdnorm_desc& d) {
  return d.rows * d.cols * (dtype_size(d.x_type) + dtype_size(d.y_type));
}

bool naive_normalize(const simdnorm_desc& d) {
  if (d.rows == 0 || d.cols == 0 || d.x == nullptr || d.y == nullptr) {
    return false;
  }
  if (d.x_type != SIMDNORM_F32 && d.x_type != SIMDNORM_BF16) return false;
  // Blocks of >= 16 KiB of x, as a reasonable hand-written parallel loop does.
  const size_t row_bytes = d.cols * dtype_size(d.x_type);
  const size_t grain = std::max<size_t>(1, (16 << 10) / row_bytes);
  bool ok = true;
  ParallelRange(d.rows, grain, d.max_threads, [&](size_t r0, size_t r1) {
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
  ParallelRange(blocks, 1, d.max_threads, [&](size_t b0, size_t b1) {
    const size_t begin = b0 * block;
    const size_t end = std::min(n, b1 * block);
    std::memcpy(t + begin, s + begin, end - begin);
  });
}

}  // namespace simdnorm_peers
