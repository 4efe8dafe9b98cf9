// simdnorm-profile's measurements: one problem (kind, shape, dtypes, thread
// count, buffer offsets) at a time, every implementation on the same
// buffers, interleaved.
#ifndef SIMDNORM_TOOLS_PROFILE_MEASURE_H_
#define SIMDNORM_TOOLS_PROFILE_MEASURE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "options.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm_profile {

struct Config {
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  size_t cols = 896;
  size_t rows = 1;
  Dtypes dtypes;       // for int8 variants y is SIMDNORM_I8
  size_t threads = 1;  // max_threads: 1 or 0 = all
  Variant variant;
  Offset offset;  // of the buffers every implementation runs on
};

// kUnfused: the fused variants' work as separate passes (an add loop,
// simdnorm on the first ISA, a quantize loop), bench/peers' unfused peer.
enum class ImplType { kSimdnorm, kMemcpy, kLoop, kOneDnn, kUnfused };

struct ImplResult {
  std::string name;  // the ISA for simdnorm; "memcpy", "loop", "oneDNN",
                     // "unfused"
  ImplType type = ImplType::kSimdnorm;
  std::string error;       // non-empty: not measured, this says why
  std::string note;        // a remark printed under the table
  double median_ns = 0.0;  // per call, median of the batches
  double min_ns = 0.0;     // per call, fastest batch
  size_t bytes = 0;        // moved per call by this implementation
  // Largest |y - reference| over the checked rows, in units of the last
  // place of y's dtype at max(|reference|, 1) (int8 output: largest
  // |q - q_reference|); negative when not checked.
  double err_ulp = -1.0;
  bool err_ok = true;  // within the tolerance (simdnorm only)
  // Why err_ok is false beyond err_ulp (an int8 scale, sum_out); or "".
  std::string err_detail;
};

struct ConfigResult {
  Config config;
  // Per call: x read + y written (+ residual, sum_out, int8 scales).
  size_t moved_bytes = 0;
  std::vector<ImplResult> impls;
};

struct MeasureSettings {
  std::vector<std::string> isas;  // forced with simdnorm_set_isa, in order;
                                  // the unfused peer runs on the first
  bool peers = true;
  bool check = true;
  size_t reps = 9;
  double batch_ms = 4.0;
};

// Progress text for stderr ("AVX3 calibrating", ...).
using Progress = std::function<void(const std::string&)>;

ConfigResult MeasureConfig(const Config& c, const MeasureSettings& s,
                           const Progress& progress);

}  // namespace simdnorm_profile

#endif  // SIMDNORM_TOOLS_PROFILE_MEASURE_H_
