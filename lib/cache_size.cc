// The share of the last-level cache one core can fill, from the CPU.
#include "lib/cache_size.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {
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

// SIMDNORM_STREAM: -1 never, 1 always, 0 the default policy (unset,
// "auto", or anything else).
int StreamOverride() {
  const char* env = std::getenv("SIMDNORM_STREAM");
  if (env == nullptr) return 0;
  if (strcasecmp(env, "always") == 0) return 1;
  if (strcasecmp(env, "never") == 0) return -1;
  return 0;
}

}  // namespace

size_t CacheResidentBytes() {
  static const size_t bytes = [] {
    const size_t l3 = CoreL3Bytes();
    return l3 > 0 ? l3 / 2 : size_t{16} << 20;
  }();
  return bytes;
}

bool AroundCaches(unsigned flags, size_t bytes) {
  if (flags & SIMDNORM_Y_CACHED) return false;
  if (flags & SIMDNORM_Y_STREAM) return true;
  static const int override = StreamOverride();
  if (override != 0) return override > 0;
  return bytes > CacheResidentBytes();
}

}  // namespace internal
}  // namespace simdnorm
