// Runs a row kernel over all rows, split into blocks over oneTBB workers.
#ifndef SIMDNORM_LIB_PARALLEL_ROWS_H_
#define SIMDNORM_LIB_PARALLEL_ROWS_H_

#include <cstddef>

#include "lib/kernel_table.h"

namespace simdnorm {
namespace internal {

// At most max_threads threads (0 = the current arena's concurrency) work on
// the call, the caller among them; small work stays in the calling thread.
void ParallelRows(RowsFn fn, const RowArgs& args, size_t rows,
                  size_t max_threads);

// The same split for any work: [0, count) in at most max_threads
// contiguous ranges (one per thread, none under ~64 Ki elements of work at
// `elements` per item), fn(ctx, begin, end) called once for each.
void ParallelRanges(size_t count, size_t elements, size_t max_threads,
                    void (*fn)(void* ctx, size_t begin, size_t end), void* ctx);

// ParallelRanges over a kernel fn(args, begin, end) of [0, count).
template <class Args>
void ParallelUnits(void (*fn)(const Args&, size_t, size_t), const Args& args,
                   size_t count, size_t elements, size_t max_threads) {
  struct Call {
    void (*fn)(const Args&, size_t, size_t);
    const Args* args;
  } call{fn, &args};
  ParallelRanges(
      count, elements, max_threads,
      [](void* ctx, size_t begin, size_t end) {
        const Call& c = *static_cast<const Call*>(ctx);
        c.fn(*c.args, begin, end);
      },
      &call);
}

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_PARALLEL_ROWS_H_
