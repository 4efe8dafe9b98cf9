// The core entry point: validate, pick the active ISA's kernel, run rows.
#include <cstddef>

#include "lib/descriptor.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace {

// Calls that move more than this many bytes (x read + y written) write y
// with non-temporal stores. Such a call evicts its own output from the
// core's caches before it returns, so reading each line of y before
// writing it (what a normal store does) is wasted traffic: at 4096 rows of
// 896 floats it makes the call about 2x slower (docs/performance.md). A fixed
// size rather than the OS's cache size: in virtual machines the reported
// last-level cache is often the host's (320 MiB on the development VM).
constexpr size_t kStreamThresholdBytes = size_t{16} << 20;

bool StreamOutput(const internal::Problem& p) {
  if (p.y_type == SIMDNORM_I8) return false;
  const size_t elem =
      internal::ElementSize(static_cast<simdnorm_dtype>(p.x_type)) +
      internal::ElementSize(static_cast<simdnorm_dtype>(p.y_type));
  // rows * cols * elem cannot overflow: validation bounded both spans.
  return p.rows * p.args.cols * elem > kStreamThresholdBytes;
}

}  // namespace

namespace internal {

Status Normalize(const simdnorm_desc& d) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK || p.rows == 0) return static_cast<Status>(s);
  p.args.stream_y = StreamOutput(p);
  const internal::Isa& isa = internal::ActiveIsa();
  const internal::RowsFn fn = isa.fn[p.kind][p.x_type][p.y_type][p.param_type];
  internal::ParallelRows(fn, p.args, p.rows, d.max_threads);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm
