// Input families of simdnorm-accuracy: seeded, reproducible rows that stress
// the statistics (large offsets, heavy tails, extreme magnitudes) plus the
// weights, and raw rows read from a user's file.
#ifndef SIMDNORM_TOOLS_ACCURACY_INPUTS_H_
#define SIMDNORM_TOOLS_ACCURACY_INPUTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics.h"

namespace simdnorm_accuracy {

// How a family's values are drawn (see inputs.cc for each formula).
enum class Gen {
  kNormal,        // N(0,1)
  kOffset1e3,     // 1e3 + s*N(0,1), s log-uniform in [1e-2, 1] per row
  kOffset1e4,     // 1e4 + s*N(0,1), likewise
  kLlmHidden,     // log-normal channel scales + a few channels of +-1e3..1e4
  kFirstOutlier,  // N(0,1) with x[0] = +-1e3..1e4 (a poor shift K = x[0])
  kStudentT2,     // Student-t, 2 degrees of freedom
  kCauchy,        // Cauchy, clipped to +-1e30
  kNearConstant,  // c * (1 + k*2^-22), k in -2..2: a few fp32 ulps apart
  kConstant,      // c: every element of the row equal
  kHuge1e25,      // 1e25 * N(0,1)
  kHuge1e36,      // 1e36 * N(0,1)
  kTiny1e25,      // 1e-25 * N(0,1)
  kSubnormal,     // 1e-40 * N(0,1): fp32 subnormals
  kUser,          // rows from --input FILE
};

struct Family {
  std::string name;  // e.g. "offset1e4", "bf16q:huge1e36-eps0"
  Gen gen = Gen::kNormal;
  bool eps_zero = false;  // the family uses eps = 0 instead of the default
  bool bf16q = false;     // values rounded to bf16 even when x is fp32
  // Whether it runs with x of type t: the bf16q copies only with fp32 x
  // (bf16 and f16 x quantize anyway); with f16 x only the families that fit
  // f16 (not huge, tiny, subnormal, which would become infinities, zeros).
  bool runs_with(simdnorm_dtype t) const;
};

// The generated families, in report order: the plain ones, then their
// bf16-quantized copies.
std::vector<Family> default_families();

// The families that look like real activations (normal, llm-hidden,
// student-t2): what the engine variants run on by default.
std::vector<Family> realistic_families();

// rows x cols values of a generator, reproducible from (seed, gen, cols);
// the residual stream of the fused add is an independent second draw.
std::vector<float> generate(Gen gen, size_t rows, size_t cols, uint64_t seed,
                            bool residual = false);

// gamma ~ 1 + 0.1*N(0,1), beta ~ 0.1*N(0,1), reproducible from (seed, cols).
void make_weights(size_t cols, uint64_t seed, std::vector<float>* gamma,
                  std::vector<float>* beta);

// Reads raw little-endian rows of fp32, bf16 or f16 (cols elements each) and
// widens them to float. On failure returns false with a message in *error.
bool read_rows(const std::string& path, simdnorm_dtype type, size_t cols,
               std::vector<float>* out, std::string* error);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_INPUTS_H_
