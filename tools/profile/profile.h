// simdnorm-profile's parts: the command line, the machine and the run
// (main.cc), the measurements (measure.cc: one problem at a time, every
// implementation on the same buffers, interleaved) and the outputs
// (report.cc: the table, JSON, CSV, Markdown and the SVG bar chart).
#ifndef SIMDNORM_TOOLS_PROFILE_PROFILE_H_
#define SIMDNORM_TOOLS_PROFILE_PROFILE_H_

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/vocabulary.h"
#include "family_problem.h"

namespace simdnorm_profile {

using simdnorm_tools::dtype_name;
using simdnorm_tools::Dtypes;
using simdnorm_tools::kind_name;
using simdnorm_tools::Variant;

// Where a configuration's buffers start, in bytes past a 64-byte boundary:
// x (and gamma, beta, residual, sum_out) at `x`, y at `y`.
struct Offset {
  size_t x = 0, y = 0;
  bool zero() const { return x == 0 && y == 0; }
};

struct Options {
  std::vector<size_t> cols = {896};
  std::vector<size_t> rows = {1, 64, 4096};
  std::vector<std::string> isas;  // empty = every ISA of this machine
  std::vector<simdnorm_kind> kinds = simdnorm_tools::AllKinds();
  // --op: these instead of the row kinds (MeasureFamilies).
  std::vector<simdnorm_peers::FamilyOp> ops;
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
  bool table = true;  // the human table on stdout
  // "" = none, "-" = stdout (not for svg).
  std::string json, csv, svg, markdown;
  // A Markdown file whose block between the markers (UpdateDoc) is
  // replaced with the Markdown summary ("" = none).
  std::string update_doc;
};

struct Config {
  simdnorm_kind kind{};
  size_t cols = 896;
  size_t rows = 1;
  Dtypes dtypes;       // for int8 variants y is SIMDNORM_I8
  size_t threads = 1;  // max_threads: 1 or 0 = all
  Variant variant;
  Offset offset;  // of the buffers every implementation runs on
};
// "rmsnorm fused-add bf16 896x4096 threads all offset 16": one
// configuration in the progress line and in messages.
std::string ConfigName(const Config& c);

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

// Gets text for stderr ("AVX3 calibrating", ...).
using Progress = std::function<void(const std::string&)>;

// Every implementation on c: the ISAs of o.isas (forced with
// simdnorm_set_isa, in order; the unfused peer runs on the first) and the
// peers.
ConfigResult MeasureConfig(const Config& c, const Options& o,
                           const Progress& progress);

// --op: one op on one shape, dtype and thread count; impls are the ISAs,
// then memcpy of the same bytes.
struct FamilyResult {
  std::string op, shape;
  Dtypes dtypes;
  size_t threads = 1;
  size_t bytes = 0;  // x (and dy) read, y (or dx) written
  std::vector<ImplResult> impls;
};
std::vector<FamilyResult> MeasureFamilies(const Options& o,
                                          const Progress& progress);
void WriteFamilies(std::FILE* f, const std::vector<FamilyResult>& results);
void WriteFamiliesJson(std::FILE* f, const std::vector<FamilyResult>& results);

struct Machine {
  std::string cpu;   // "AMD EPYC" (model name in /proc/cpuinfo)
  std::string arch;  // the architecture this binary was built for
  unsigned logical_cpus = 0;
  std::string caches;    // "L1d 48 KiB, L2 1024 KiB, L3 32768 KiB" (cpu0)
  std::string compiler;  // "GCC 12.2.0"
  // 1-minute load average when the run started (/proc/loadavg), or < 0.
  double load1 = -1.0;
  // Non-empty when the process seems to run under an emulator (qemu): why.
  std::string emulated;
};

// What the outputs say beside the results.
struct Meta {
  const Options& options;  // with the ISAs resolved
  std::string version;
  Machine machine;
  std::string onednn;
  std::string loop_flags;  // how the hand-written loop was compiled
  double wall_s = 0.0;     // whole run
};

// The header lines (machine, compiler, emulation warning, definitions).
void WriteHeader(std::FILE* f, const Meta& m);
void WriteTable(std::FILE* f, const std::vector<ConfigResult>& results);
void WriteJson(std::FILE* f, const Meta& m,
               const std::vector<ConfigResult>& results);
void WriteCsv(std::FILE* f, const std::vector<ConfigResult>& results);
void WriteSvg(std::FILE* f, const Meta& m,
              const std::vector<ConfigResult>& results);
// A compact Markdown summary: one line per configuration, ns per row of
// every implementation, then GB/s and the ratios of the first ISA.
std::string MarkdownSummary(const Meta& m,
                            const std::vector<ConfigResult>& results);

}  // namespace simdnorm_profile

#endif  // SIMDNORM_TOOLS_PROFILE_PROFILE_H_
