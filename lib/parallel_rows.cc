#include "lib/parallel_rows.h"

#include <algorithm>
#include <cstdlib>

#include "tbb/blocked_range.h"
#include "tbb/parallel_for.h"
#include "tbb/partitioner.h"
#include "tbb/task_arena.h"

namespace simdnorm {
namespace internal {
namespace {

// A block should take several microseconds, so that handing it to a worker
// (~1 us) is cheap beside it: 64 Ki elements is ~10 us at 25 GB/s.
constexpr size_t kMinElementsPerBlock = size_t{1} << 16;

// The process-wide cap from SIMDNORM_NUM_THREADS (0 = none), read once.
size_t ProcessThreadCap() {
  static const size_t cap = [] {
    const char* env = std::getenv("SIMDNORM_NUM_THREADS");
    if (env == nullptr || *env == '\0') return size_t{0};
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    return *end == '\0' ? static_cast<size_t>(v) : size_t{0};
  }();
  return cap;
}

}  // namespace

void ParallelRanges(size_t count, size_t elements, size_t max_threads,
                    void (*fn)(void* ctx, size_t begin, size_t end),
                    void* ctx) {
  const size_t cap = ProcessThreadCap();
  if (cap != 0 && (max_threads == 0 || max_threads > cap)) max_threads = cap;
  const size_t work_blocks =
      std::max<size_t>(1, count * elements / kMinElementsPerBlock);
  if (max_threads == 1 || work_blocks == 1 || count == 1) {
    fn(ctx, 0, count);  // small work: no task scheduling at all
    return;
  }
  const size_t arena =
      static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  const size_t threads =
      max_threads == 0 ? arena : std::min(max_threads, arena);
  // One block per thread: with no more blocks than threads, no more than
  // `threads` threads can work on the call at once.
  const size_t blocks = std::min({threads, work_blocks, count});
  if (blocks <= 1) {
    fn(ctx, 0, count);
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, blocks, 1),
      [&](const tbb::blocked_range<size_t>& r) {
        for (size_t b = r.begin(); b != r.end(); ++b) {
          fn(ctx, count * b / blocks, count * (b + 1) / blocks);
        }
      },
      tbb::simple_partitioner());
}

void ParallelRows(RowsFn fn, const RowArgs& args, size_t rows,
                  size_t max_threads) {
  struct Call {
    RowsFn fn;
    const RowArgs& args;
  } call{fn, args};
  ParallelRanges(
      rows, args.cols, max_threads,
      [](void* ctx, size_t begin, size_t end) {
        const Call& c = *static_cast<const Call*>(ctx);
        c.fn(c.args, begin, end);
      },
      &call);
}

}  // namespace internal
}  // namespace simdnorm
