// simdnorm-profile's command line.
#ifndef SIMDNORM_TOOLS_PROFILE_OPTIONS_H_
#define SIMDNORM_TOOLS_PROFILE_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "common/vocabulary.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm_profile {

using simdnorm_tools::dtype_name;
using simdnorm_tools::Dtypes;
using simdnorm_tools::kind_name;
using simdnorm_tools::Variant;

// "f32", "bf16" when all three agree, else "x:y:w" ("bf16:f32:f32").
std::string DtypesName(const Dtypes& t);

// Where a configuration's buffers start, in bytes past a 64-byte boundary:
// x (and gamma, beta, residual, sum_out) at `x`, y at `y`.
struct Offset {
  size_t x = 0;
  size_t y = 0;
  bool zero() const { return x == 0 && y == 0; }
};
// "16", or "16:0" when x and y differ.
std::string OffsetName(const Offset& o);

struct Options {
  std::vector<size_t> cols = {896};
  std::vector<size_t> rows = {1, 64, 4096};
  std::vector<std::string> isas;  // empty = every ISA of this machine
  std::vector<simdnorm_kind> kinds = simdnorm_tools::all_kinds();
  std::vector<Dtypes> dtypes = {{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
                                {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16}};
  std::vector<Variant> variants = {Variant{}};  // plain
  // The default run also measures the fused-add line below (RMSNorm, bf16,
  // the vLLM pre-norm step, against the unfused add + norm); any of
  // --variant, --kind, --dtype, --cols or --rows drops it.
  bool fused_line = true;
  std::vector<size_t> threads = {1, 0};  // max_threads; 0 = all
  // Every configuration is measured at each offset: aligned, and 16 bytes
  // off as the rows of a std::vector are.
  std::vector<Offset> offsets = {{0, 0}, {16, 16}};
  size_t reps = 9;        // timed batches per measurement
  double batch_ms = 4.0;  // length of one batch
  bool peers = true;      // memcpy, hand loop, oneDNN
  bool check = true;      // compare outputs to the reference
  // Exit 1 when a simdnorm call fails or its output is off the reference.
  bool strict = false;
  bool table = true;           // the human table on stdout
  std::string json, csv, svg;  // "" = none, "-" = stdout
  std::string markdown;        // "" = none, "-" = stdout
  // A Markdown file whose block between the markers of report.h is
  // replaced with the Markdown summary ("" = none).
  std::string update_doc;
};

// Parses argv into *o. Returns 0 to go on, -1 after --help (exit 0), or 2
// after an error (the message already printed).
int ParseOptions(int argc, char** argv, Options* o);

}  // namespace simdnorm_profile

#endif  // SIMDNORM_TOOLS_PROFILE_OPTIONS_H_
