// The C API: a thin layer over the C++ core.
#include "lib/isa.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

extern "C" {

simdnorm_status simdnorm_normalize(const simdnorm_desc* d) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  return static_cast<simdnorm_status>(simdnorm::normalize(*d));
}

simdnorm_status simdnorm_normalize_reference(const simdnorm_desc* d) {
  if (d == nullptr) return SIMDNORM_INVALID_ARGUMENT;
  return static_cast<simdnorm_status>(simdnorm::normalize_reference(*d));
}

const char* simdnorm_status_string(simdnorm_status s) {
  switch (s) {
    case SIMDNORM_OK:
      return "SIMDNORM_OK: success";
    case SIMDNORM_INVALID_ARGUMENT:
      return "SIMDNORM_INVALID_ARGUMENT: NULL descriptor or data pointer, "
             "unknown enum value, "
             "or eps negative, NaN or infinite";
    case SIMDNORM_INVALID_SHAPE:
      return "SIMDNORM_INVALID_SHAPE: cols is 0, a stride is below cols, or a "
             "size overflows";
    case SIMDNORM_OVERLAP:
      return "SIMDNORM_OVERLAP: y overlaps x, gamma or beta other than exactly "
             "in place "
             "(y == x, same element size, same stride)";
    case SIMDNORM_UNSUPPORTED:
      return "SIMDNORM_UNSUPPORTED: unknown ISA or one this CPU does not "
             "support";
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
