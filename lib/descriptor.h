// The caller's descriptor made whole, and the entry points that take it.
//
// A caller compiled against another version of simdnorm.h passes its own
// sizeof(simdnorm_desc). Fields past the end of its struct read as zero;
// bytes past the end of this library's struct must be zero (fields this
// version does not know). The usual caller, whose size is this library's,
// costs one comparison.
#ifndef SIMDNORM_LIB_DESCRIPTOR_H_
#define SIMDNORM_LIB_DESCRIPTOR_H_

#include <cstddef>
#include <cstring>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// The smallest size a caller may pass of each descriptor.
inline constexpr size_t MinDescriptorSize(const simdnorm_desc*) {
  return SIMDNORM_DESC_MIN_SIZE;
}
inline constexpr size_t MinDescriptorSize(const simdnorm_backward_desc*) {
  return SIMDNORM_BACKWARD_DESC_MIN_SIZE;
}
inline constexpr size_t MinDescriptorSize(const simdnorm_group_desc*) {
  return SIMDNORM_GROUP_DESC_MIN_SIZE;
}
inline constexpr size_t MinDescriptorSize(const simdnorm_group_backward_desc*) {
  return SIMDNORM_GROUP_BACKWARD_DESC_MIN_SIZE;
}
inline constexpr size_t MinDescriptorSize(const simdnorm_batch_desc*) {
  return SIMDNORM_BATCH_DESC_MIN_SIZE;
}
inline constexpr size_t MinDescriptorSize(const simdnorm_batch_backward_desc*) {
  return SIMDNORM_BATCH_BACKWARD_DESC_MIN_SIZE;
}

// Sets *whole to d itself, or to `copy` filled from d's first `size` bytes
// and zeros; or returns why d cannot be served (NULL or too small:
// INVALID_ARGUMENT; a non-zero byte this version does not know:
// UNSUPPORTED), reading no byte past d + size.
template <class Desc>
simdnorm_status WholeDescriptor(const Desc* d, size_t size, Desc* copy,
                                const Desc** whole) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  if (size == sizeof(Desc)) {
    *whole = d;
    return SIMDNORM_OK;
  }
  if (size < MinDescriptorSize(d)) return SIMDNORM_INVALID_ARGUMENT;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(d);
  for (size_t i = sizeof(Desc); i < size; ++i) {
    if (bytes[i] != 0) return SIMDNORM_UNSUPPORTED;
  }
  std::memset(static_cast<void*>(copy), 0, sizeof(*copy));
  std::memcpy(static_cast<void*>(copy), d,
              size < sizeof(*copy) ? size : sizeof(*copy));
  *whole = copy;
  return SIMDNORM_OK;
}

// f(whole descriptor), or the status of WholeDescriptor.
template <class Desc, class F>
Status WithWholeDescriptor(const Desc* d, size_t size, F f) {
  Desc copy;
  const Desc* whole;
  const simdnorm_status s = WholeDescriptor(d, size, &copy, &whole);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  return f(*whole);
}

// The entry points over a whole descriptor (normalize.cc, reference.cc).
Status Normalize(const simdnorm_desc& d);
Status NormalizeReference(const simdnorm_desc& d);
Status ReferenceF64(const simdnorm_desc& d, double* out, double* xhat);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_DESCRIPTOR_H_
