// Which ISA's kernels run: the registry of compiled targets, the list of
// those this CPU supports, and the process-wide choice.
#ifndef SIMDNORM_LIB_ISA_H_
#define SIMDNORM_LIB_ISA_H_

#include <cstddef>
#include <cstdint>

#include "lib/backward.h"
#include "lib/batch_backward.h"
#include "lib/batch_norm.h"
#include "lib/group_backward.h"
#include "lib/group_norm.h"
#include "lib/kernel_table.h"

namespace simdnorm {
namespace internal {

struct Isa {
  int64_t target;  // Highway target bit
  const char* name;
  RowsFn fn[kNumRowKinds][kNumInTypes][kNumOutTypes][kNumInTypes];
  BackwardTable backward;  // every kind: [x_type][dy_type][dx_type]
  GroupTable group;        // [layout][x_type][y_type]
  BatchTable batch;        // [layout][x_type][y_type]
  // GroupNorm's backward: [layout][x_type] (dy and dx types at run time).
  GroupBackwardTable group_backward;
  // [layout][x_type][dy_type][dx_type]
  BatchBackwardTable batch_backward;
};

// Supported ISAs, best first. Stable for the life of the process.
size_t IsaCount();
const Isa* IsaAt(size_t i);  // nullptr past the end

// The ISA in use; a call reads it once and keeps it to the end.
const Isa& ActiveIsa();

// nullptr or "auto" (any case): the best. Returns false, changing nothing,
// when the name is not in the list.
bool SetActiveIsa(const char* name);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_ISA_H_
