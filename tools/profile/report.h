// simdnorm-profile's outputs: the table, JSON, CSV and the SVG bar chart.
#ifndef SIMDNORM_TOOLS_PROFILE_REPORT_H_
#define SIMDNORM_TOOLS_PROFILE_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "machine.h"
#include "measure.h"

namespace simdnorm_profile {

struct Meta {
  std::string version;
  Machine machine;
  std::vector<std::string> isas;
  std::string onednn;
  std::string loop_flags;  // how the hand-written loop was compiled
  size_t reps = 0;
  double batch_ms = 0.0;
  double wall_s = 0.0;  // whole run
};

// "rmsnorm fused-add bf16 896x4096 threads all offset 16": one
// configuration in the progress line and in messages.
std::string ConfigName(const Config& c);

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

// Replaces the text between the lines "<!-- simdnorm-profile:begin -->" and
// "<!-- simdnorm-profile:end -->" in the file at `path` with *text; without
// text only checks that it could (to fail before measuring). False, with a
// message on stderr, when the file cannot be read or written or lacks the
// markers.
bool UpdateDoc(const std::string& path, const std::string* text);

}  // namespace simdnorm_profile

#endif  // SIMDNORM_TOOLS_PROFILE_REPORT_H_
