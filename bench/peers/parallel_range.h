// Row splitting shared by the peers (internal to simdnorm_peers): on the
// calling thread, the default oneTBB arena, or an arena of N threads, as
// simdnorm's max_threads means it.
#ifndef SIMDNORM_BENCH_PEERS_PARALLEL_RANGE_H_
#define SIMDNORM_BENCH_PEERS_PARALLEL_RANGE_H_

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>

namespace simdnorm_peers {
namespace detail {

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

// Rows per block: at least 16 KiB of a row_bytes-wide operand, as a
// reasonable hand-written parallel loop splits.
inline size_t RowGrain(size_t row_bytes) {
  return std::max<size_t>(1,
                          (size_t{16} << 10) / std::max<size_t>(1, row_bytes));
}

}  // namespace detail
}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_PARALLEL_RANGE_H_
