// The core entry point: validate, pick the active ISA's kernel, run rows.
#include <strings.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstddef>
#include <cstdlib>

#include "lib/descriptor.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace {

// The last-level cache one core can fill: on AMD, one CCX's L3 (CPUID
// 0x8000001D), since the L3 the OS reports is the sum over every CCX (508
// MiB on the 32 MiB-per-CCX development VM); elsewhere the OS's figure (an
// Intel Xeon reported 480 MiB, and streaming measured slower there up to
// 16384 rows of 896 floats). 0 when unknown.
size_t CoreL3Bytes() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541) {  // "Auth"enticAMD
    for (unsigned sub = 0; sub < 8; ++sub) {
      __cpuid_count(0x8000001D, sub, a, b, c, d);
      if ((a & 31) == 0) break;
      if (((a >> 5) & 7) == 3) {
        return size_t{((b >> 22) & 0x3FF) + 1} * (((b >> 12) & 0x3FF) + 1) *
               ((b & 0xFFF) + 1) * (size_t{c} + 1);
      }
    }
    return size_t{32} << 20;  // hidden by the hypervisor: Zen 3-5's CCX L3
  }
#endif
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? static_cast<size_t>(l3) : 0;
}

// The default store policy (simdnorm.h, SIMDNORM_Y_STREAM): y goes around
// the caches when the call moves (x read + y written) more than half the
// L3 one core can fill (16 MiB when unknown). Such a call evicts its own
// output before it returns, so reading each line of y before writing it
// (what a cached store does) is wasted traffic: with a 32 MiB L3, 4096 rows
// of 896 floats are 2x faster (docs/performance.md). A host whose L3 holds
// the call keeps cached stores.
size_t StreamThresholdBytes() {
  static const size_t threshold = [] {
    const size_t l3 = CoreL3Bytes();
    return l3 > 0 ? l3 / 2 : size_t{16} << 20;
  }();
  return threshold;
}

// SIMDNORM_STREAM=always|never (any case), read once: -1 never, 1 always,
// 0 the default policy (unset, "auto", or anything else).
int StreamOverride() {
  static const int v = [] {
    const char* env = std::getenv("SIMDNORM_STREAM");
    if (env == nullptr) return 0;
    if (strcasecmp(env, "always") == 0) return 1;
    if (strcasecmp(env, "never") == 0) return -1;
    return 0;
  }();
  return v;
}

bool StreamOutput(const simdnorm_desc& d, const internal::Problem& p) {
  if (p.y_type == SIMDNORM_I8 || (d.flags & SIMDNORM_Y_CACHED)) return false;
  if (d.flags & SIMDNORM_Y_STREAM) return true;
  if (const int o = StreamOverride()) return o > 0;
  const size_t elem =
      internal::ElementSize(static_cast<simdnorm_dtype>(p.x_type)) +
      internal::ElementSize(static_cast<simdnorm_dtype>(p.y_type));
  // rows * cols * elem cannot overflow: validation bounded both spans.
  return p.rows * p.args.cols * elem > StreamThresholdBytes();
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
