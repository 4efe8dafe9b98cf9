// The core entry point: validate, pick the active ISA's kernel, run rows.
#include <cstddef>

#include "lib/cache_size.h"
#include "lib/descriptor.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace {

// The default store policy (simdnorm.h, SIMDNORM_Y_STREAM): y goes around
// the caches when the call moves (x read + y written) more than half the
// L3 one core can fill (CacheResidentBytes). Such a call evicts its own
// output before it returns, so reading each line of y before writing it
// (what a cached store does) is wasted traffic: with a 32 MiB L3, 4096 rows
// of 896 floats are 2x faster (docs/performance.md). A host whose L3 holds
// the call keeps cached stores.
bool StreamOutput(const simdnorm_desc& d, const internal::Problem& p) {
  if (p.y_type == SIMDNORM_I8) return false;
  const size_t elem =
      internal::ElementSize(static_cast<simdnorm_dtype>(p.x_type)) +
      internal::ElementSize(static_cast<simdnorm_dtype>(p.y_type));
  // rows * cols * elem cannot overflow: validation bounded both spans.
  return internal::AroundCaches(d.flags, p.rows * p.args.cols * elem);
}

}  // namespace

namespace internal {

Status Normalize(const simdnorm_desc& d) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK || p.rows == 0) return static_cast<Status>(s);
  p.args.stream_y = StreamOutput(d, p);
  const internal::Isa& isa = internal::ActiveIsa();
  const internal::RowsFn fn =
      isa.fn[p.args.kind][p.x_type][p.y_type][p.param_type];
  internal::ParallelRows(fn, p.args, p.rows, d.max_threads);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm
