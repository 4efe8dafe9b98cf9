// Command line of simdnorm-accuracy.
#ifndef SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
#define SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace simdnorm_accuracy {

struct Options {
  bool detail = false;
  bool quiet = false;
  bool shortcuts = true;
  bool json = false;
  std::string json_path;  // "" or "-": stdout
  bool csv = false;
  std::string csv_path;               // "" or "-": stdout
  std::string svg_path;               // "" = none
  std::vector<std::string> isas;      // empty = every ISA of the machine
  std::vector<simdnorm_kind> kinds;   // empty = all
  std::vector<Dtypes> dtypes;         // empty = the defaults (--help)
  std::vector<std::string> families;  // empty = all (variants: realistic)
  std::vector<Variant> variants;      // empty = the defaults
  std::vector<size_t> cols;           // empty = the defaults
  size_t rows = 0;                    // 0 = 64 (or all of --input)
  uint64_t seed = 1;
  float eps = 1e-5f;
  std::string input;  // --input FILE
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  size_t threads = 0;
};

// Parses argv into *opt: 0 to go on, -1 after printing the help, 2 with the
// message of a usage error in *error. --isa takes the names in `isas` (any
// case; stored as spelled there).
int parse_options(int argc, char** argv, const std::vector<std::string>& isas,
                  Options* opt, std::string* error);

// The combinations x/y/w of `types`, x major (f32/f32/f32, f32/f32/bf16,
// ...); with need_f16 only those with an f16.
std::vector<Dtypes> combinations(const std::vector<simdnorm_dtype>& types,
                                 bool need_f16 = false);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_OPTIONS_H_
