// Command line of simdnorm-accuracy.
#ifndef SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
#define SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_

#include <cstddef>
#include <cstdint>
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
// The hidden sizes of the default f16 combinations (a full-vector and an
// odd size: the conversions' tails) and of the default engine variants.
const std::vector<size_t>& default_f16_cols();
const std::vector<size_t>& default_variant_cols();

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
  std::vector<Dtypes> dtypes;         // empty = the defaults (--help)
  std::vector<std::string> families;  // empty = all (variants: realistic)
  std::vector<Variant> variants;      // empty = default_variants()
  std::vector<size_t> cols;           // empty = default_cols()
  size_t rows = 0;                    // 0 = default (or all of --input)
  uint64_t seed = kDefaultSeed;
  float eps = kDefaultEps;
  std::string input;  // --input FILE
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  size_t threads = 0;
};

// Parses argv; returns false with a message in *error on a usage error.
// With -h or --help, prints the help on stdout and sets opt->help. --isa
// takes the names in `isas` (any case; stored as spelled there).
bool parse_options(int argc, char** argv, const std::vector<std::string>& isas,
                   Options* opt, std::string* error);

// The 8 combinations of f32 and bf16, x major: f32/f32/f32, f32/f32/bf16,
// f32/bf16/f32, ...
std::vector<Dtypes> f32_bf16_dtypes();
// The 7 combinations of f32 and f16 with at least one f16, x major.
std::vector<Dtypes> f16_dtypes();
// All 27 combinations of f32, bf16 and f16, x major.
std::vector<Dtypes> all_dtypes();
// The engine variants' default: f32/f32/f32, bf16/bf16/bf16, f16/f16/f16,
// bf16/bf16/f32 (int8 variants replace y with i8).
std::vector<Dtypes> variant_dtypes();

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
