// The core entry point: validate, pick the active ISA's kernel, run rows.
#include "lib/isa.h"
#include "lib/parallel_rows.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {

Status normalize(const simdnorm_desc& d) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK || p.rows == 0) return static_cast<Status>(s);
  const internal::Isa& isa = internal::ActiveIsa();
  const internal::RowsFn fn = isa.fn[p.kind][p.x_type][p.y_type][p.param_type];
  internal::ParallelRows(fn, p.args, p.rows, d.max_threads);
  return Status::kOk;
}

}  // namespace simdnorm
