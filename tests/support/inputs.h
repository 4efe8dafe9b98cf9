// Deterministic inputs of the tests: a portable random generator, the data
// families, rows and weights (cached, so that tests share them) and the
// row lengths of the spec.
#ifndef SIMDNORM_TESTS_SUPPORT_INPUTS_H_
#define SIMDNORM_TESTS_SUPPORT_INPUTS_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace simdnorm_test {

// Deterministic generator: std::mt19937 (fixed output by the standard) and
// our own Box-Muller, so data are the same with every standard library.
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}

  // Uniform in (0, 1) with 53 random bits.
  double Uniform();
  // N(0, 1).
  double Normal();

 private:
  std::mt19937 gen_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

enum class Family {
  kTypical,    // per-row mean in [-2, 2], std in [0.5, 3]
  kStdNormal,  // N(0, 1)
  kLargeMean,  // 1e4 + 1e-2 * N(0, 1)
  kOutliers,   // N(0, 1) with +-3000 in some channels
  kHuge,       // 1e25 * N(0, 1)
  kTiny,       // 1e-25 * N(0, 1)
  kConstant,   // every row constant (3, -7.25, 1e4, 0.1, 0, ...)
  kSubnormal,  // 1e-40 * N(0, 1): subnormal floats
  kLlm,        // LLM hidden state: per-channel scales, massive channels
};

const char* FamilyName(Family f);

// rows * cols float values of a family, row-major dense.
std::vector<float> MakeRows(Family f, size_t rows, size_t cols, uint32_t seed);

// Cached MakeRows with a seed derived from the arguments (tests share data).
const std::vector<float>& RowData(Family f, size_t rows, size_t cols);

// The residual rows of a fused add: the family's distribution, other values
// than RowData's.
const std::vector<float>& ResidualData(Family f, size_t rows, size_t cols);

// gamma ~ 1 + 0.5 N(0,1) (some negative), beta ~ 0.5 N(0,1); cols values.
const std::vector<float>& ParamData(bool gamma, size_t cols);

// Row lengths of the spec: 1..17, 31..33, 63..65, 127..129, 896, 897, 4096,
// 4097, 16384.
const std::vector<size_t>& AllCols();

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_INPUTS_H_
