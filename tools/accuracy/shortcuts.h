// Textbook normalization shortcuts, measured beside the library to show why
// its design matters. They live here, in the tool, never in the library.
#ifndef SIMDNORM_TOOLS_ACCURACY_SHORTCUTS_H_
#define SIMDNORM_TOOLS_ACCURACY_SHORTCUTS_H_

#include <cstddef>

#include "numerics.h"

namespace simdnorm_accuracy {

enum class Shortcut {
  // Centered kinds (LayerNorm): mean and E[x^2] - mean^2 from one pass of
  // plain fp32 sums. The others (RMSNorm): the fp32 sum of x^2, their only
  // pass.
  kOnePassF32,
  // Centered kinds only: fp32 mean, then fp32 sum of (x - mean)^2.
  kTwoPassF32,
  // Exact (float64) statistics, but eps added outside the square root:
  // (x - mean) / (sqrt(var) + eps), x / (sqrt(mean(x^2)) + eps).
  kEpsOutside,
  // bf16 output by truncating the library's fp32 output (bits >> 16)
  // instead of rounding the truth once.
  kTruncBf16,
};
constexpr Shortcut kShortcuts[] = {Shortcut::kOnePassF32, Shortcut::kTwoPassF32,
                                   Shortcut::kEpsOutside, Shortcut::kTruncBf16};

const char* shortcut_name(Shortcut s);

// Whether the shortcut is a distinct method for this kind and output dtype.
bool shortcut_applies(Shortcut s, simdnorm_kind kind, simdnorm_dtype y);

// fp32 shortcuts (all but kTruncBf16): rows x cols dense, gamma required,
// beta may be null.
void run_shortcut(Shortcut s, simdnorm_kind kind, const float* x, size_t rows,
                  size_t cols, const float* gamma, const float* beta, float eps,
                  float* y);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_SHORTCUTS_H_
