// Command line of simdnorm-accuracy.
#ifndef SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
#define SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common.h"

namespace simdnorm_accuracy {

constexpr size_t kDefaultRows = 64;
constexpr uint64_t kDefaultSeed = 1;
constexpr float kDefaultEps = 1e-5f;
// Qwen2-0.5B, Llama-7B and an odd size (1001 = 62*16 + 9: every vector
// width leaves a remainder).
const std::vector<size_t>& default_cols();

struct Options {
  bool help = false;
  bool detail = false;
  bool quiet = false;
  bool shortcuts = true;
  bool json = false;
  std::string json_path;  // "" or "-": stdout
  bool csv = false;
  std::string csv_path;               // "" or "-": stdout
  std::string svg_path;               // "" = none
  std::vector<std::string> isas;      // empty = every ISA of the machine
  std::vector<simdnorm_kind> kinds;   // empty = both
  std::vector<Dtypes> dtypes;         // empty = all 8
  std::vector<std::string> families;  // empty = all
  std::vector<size_t> cols;           // empty = default_cols()
  size_t rows = 0;                    // 0 = default (or all of --input)
  uint64_t seed = kDefaultSeed;
  float eps = kDefaultEps;
  std::string input;  // --input FILE
  bool input_dtype_given = false;
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  size_t threads = 0;
};

// Parses argv; returns false with a message in *error on a usage error.
bool parse_options(int argc, char** argv, Options* opt, std::string* error);

void print_usage(std::ostream& os);

// All 8 combinations, x major: f32/f32/f32, f32/f32/bf16, f32/bf16/f32, ...
std::vector<Dtypes> all_dtypes();

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
