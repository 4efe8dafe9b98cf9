// One call of simdnorm_normalize as a test describes it (Case), and its
// operands filled with the test data, guarded, with the descriptor (Call).
#ifndef SIMDNORM_TESTS_SUPPORT_CASES_H_
#define SIMDNORM_TESTS_SUPPORT_CASES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/matrix.h"

namespace simdnorm_test {

// Where the h of a fused add is stored (simdnorm_desc.sum_out).
enum class SumOut {
  kNone,        // sum_out NULL
  kSeparate,    // its own buffer, sum_out_stride apart
  kIsResidual,  // sum_out == residual (same pointer and stride)
  kIsX,         // sum_out == x (same pointer and stride)
};

const char* SumOutName(SumOut s);

// One call of simdnorm_normalize, checked against the reference.
struct Case {
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  DTypes t{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32};
  size_t rows = 1;
  size_t cols = 1;
  size_t x_stride = 0;  // as passed to the library (0 = cols)
  size_t y_stride = 0;
  size_t x_offset = 0;  // elements after a 64-byte aligned address
  size_t y_offset = 0;
  size_t param_offset = 0;
  bool gamma = true;
  bool beta = true;
  bool in_place = false;  // y = x (requires t.x == t.y; uses x_stride)
  float eps = 1e-5f;
  size_t max_threads = 0;
  Family family = Family::kTypical;
  // The variants of issue #7; the defaults give the plain call.
  bool residual = false;       // fused add of ResidualData (x_offset too)
  size_t residual_stride = 0;  // as passed (0 = cols)
  SumOut sum_out = SumOut::kNone;
  size_t sum_out_stride = 0;  // kSeparate (0 = cols; y_offset too)
  float gamma_offset = 0.0f;
  unsigned flags = 0;
  size_t quant_group = 0;    // y_type I8 (0 = cols)
  double param_scale = 1.0;  // gamma and beta data are multiplied by it

  size_t Group() const { return quant_group ? quant_group : cols; }
  size_t Groups() const { return (cols + Group() - 1) / Group(); }

  // Every field, and the active ISA, for failure messages.
  std::string Describe() const;
};

// The operands of one call of case c, filled, and its descriptor.
struct Call {
  Case c;
  Matrix x, res, sum, gamma, beta, y, scales;
  simdnorm_desc d{};

  // values: rows * cols; residual_values: the same (NULL = ResidualData).
  Call(const Case& the_case, const std::vector<float>& values,
       const std::vector<float>* residual_values = nullptr);
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  const Matrix& Out() const { return c.in_place ? x : y; }
  const Matrix& SumOutMatrix() const {
    return c.sum_out == SumOut::kSeparate     ? sum
           : c.sum_out == SumOut::kIsResidual ? res
                                              : x;
  }
  // The elements of every output (y, sum_out, y_scale), dense, after the
  // call.
  std::vector<unsigned char> OutputBytes() const;
};

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_CASES_H_
