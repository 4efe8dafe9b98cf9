// The C API: a thin layer over the C++ core.
#include "lib/backward.h"
#include "lib/batch_backward.h"
#include "lib/batch_norm.h"
#include "lib/descriptor.h"
#include "lib/group_backward.h"
#include "lib/group_norm.h"
#include "lib/isa.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

extern "C" {

simdnorm_status simdnorm_normalize_sized(const simdnorm_desc* d,
                                         size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::Normalize));
}

simdnorm_status simdnorm_normalize_reference_sized(const simdnorm_desc* d,
                                                   size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::NormalizeReference));
}

simdnorm_status simdnorm_backward_sized(const simdnorm_backward_desc* d,
                                        size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::Backward));
}

simdnorm_status simdnorm_backward_reference_sized(
    const simdnorm_backward_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::BackwardReference));
}

simdnorm_status simdnorm_group_norm_sized(const simdnorm_group_desc* d,
                                          size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::GroupNorm));
}

simdnorm_status simdnorm_group_norm_reference_sized(
    const simdnorm_group_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::GroupNormReference));
}

simdnorm_status simdnorm_group_norm_backward_sized(
    const simdnorm_group_backward_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::GroupBackward));
}

simdnorm_status simdnorm_group_norm_backward_reference_sized(
    const simdnorm_group_backward_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::GroupBackwardReference));
}

simdnorm_status simdnorm_batch_norm_sized(const simdnorm_batch_desc* d,
                                          size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::BatchNorm));
}

simdnorm_status simdnorm_batch_norm_reference_sized(
    const simdnorm_batch_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::BatchNormReference));
}

simdnorm_status simdnorm_batch_norm_backward_sized(
    const simdnorm_batch_backward_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::BatchBackward));
}

simdnorm_status simdnorm_batch_norm_backward_reference_sized(
    const simdnorm_batch_backward_desc* d, size_t desc_size) {
  return static_cast<simdnorm_status>(simdnorm::internal::WithWholeDescriptor(
      d, desc_size, simdnorm::internal::BatchBackwardReference));
}

unsigned simdnorm_version(void) { return SIMDNORM_VERSION; }

const char* simdnorm_version_string(void) {
#define SIMDNORM_STR2(x) #x
#define SIMDNORM_STR(x) SIMDNORM_STR2(x)
  return SIMDNORM_STR(SIMDNORM_VERSION_MAJOR) "." SIMDNORM_STR(
      SIMDNORM_VERSION_MINOR) "." SIMDNORM_STR(SIMDNORM_VERSION_PATCH);
#undef SIMDNORM_STR
#undef SIMDNORM_STR2
}

const char* simdnorm_status_string(simdnorm_status s) {
  switch (s) {
    case SIMDNORM_OK:
      return "SIMDNORM_OK: success";
    case SIMDNORM_INVALID_ARGUMENT:
      return "SIMDNORM_INVALID_ARGUMENT: NULL descriptor or data pointer, "
             "descriptor size below SIMDNORM_DESC_MIN_SIZE "
             "(y_scale with int8 output), unknown enum value or flag (or both "
             "SIMDNORM_Y_STREAM and SIMDNORM_Y_CACHED), eps "
             "negative, NaN or infinite, gamma_offset not finite, or "
             "y_scale/quant_group without int8 output (batch: momentum not "
             "finite, only one of running_mean and running_var, or neither "
             "in inference)";
    case SIMDNORM_INVALID_SHAPE:
      return "SIMDNORM_INVALID_SHAPE: cols is 0, a stride is below cols, or a "
             "size overflows (groups: c, hw or groups is 0, or c is not a "
             "multiple of groups; batch: c or hw is 0, or training with one "
             "value per channel)";
    case SIMDNORM_OVERLAP:
      return "SIMDNORM_OVERLAP: an output (y, sum_out, y_scale; backward: "
             "dx, dgamma, dbeta) overlaps another buffer other than exactly "
             "y == x (in place), sum_out == x or residual, or dx == dy";
    case SIMDNORM_UNSUPPORTED:
      return "SIMDNORM_UNSUPPORTED: int8 as an input type, an unknown ISA "
             "or one this CPU does not support, a descriptor field this "
             "version of the library does not know (non-zero bytes past its "
             "simdnorm_desc)";
  }
  return "simdnorm: unknown status";
}

size_t simdnorm_isa_count(void) { return simdnorm::internal::IsaCount(); }

const char* simdnorm_isa_name(size_t i) {
  const simdnorm::internal::Isa* isa = simdnorm::internal::IsaAt(i);
  return isa ? isa->name : nullptr;
}

simdnorm_status simdnorm_set_isa(const char* name) {
  return simdnorm::internal::SetActiveIsa(name) ? SIMDNORM_OK
                                                : SIMDNORM_UNSUPPORTED;
}

const char* simdnorm_active_isa(void) {
  return simdnorm::internal::ActiveIsa().name;
}

}  // extern "C"
