// The share of the last-level cache one core can fill, from the CPU.
#include "lib/cache_size.h"

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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

}  // namespace

size_t CacheResidentBytes() {
  static const size_t bytes = [] {
    const size_t l3 = CoreL3Bytes();
    return l3 > 0 ? l3 / 2 : size_t{16} << 20;
  }();
  return bytes;
}

}  // namespace internal
}  // namespace simdnorm
