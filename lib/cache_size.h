// How many bytes a call may move and still find them in the caches (the
// store policy of simdnorm_normalize, the row pairs of simdnorm_backward).
#ifndef SIMDNORM_LIB_CACHE_SIZE_H_
#define SIMDNORM_LIB_CACHE_SIZE_H_

#include <cstddef>

namespace simdnorm {
namespace internal {

// Half the L3 one core can fill (on AMD one CCX's, from CPUID 0x8000001D,
// as the OS reports the sum over every CCX; elsewhere the OS's figure),
// 16 MiB when unknown: a call that moves more evicts its own data before
// it returns. Read once.
size_t CacheResidentBytes();

// The store policy of a call's output (simdnorm.h, SIMDNORM_Y_STREAM):
// whether it goes around the caches. The flags' SIMDNORM_Y_STREAM or
// SIMDNORM_Y_CACHED decide; else SIMDNORM_STREAM=always|never in the
// environment (any case, read once); else whether the call moves more
// than CacheResidentBytes().
bool AroundCaches(unsigned flags, size_t bytes);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_CACHE_SIZE_H_
