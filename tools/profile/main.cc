// simdnorm-profile: how fast simdnorm is on this machine, per ISA, against
// memcpy of the same bytes, the hand-written loop and oneDNN's LayerNorm.
// `simdnorm-profile --help` for the options; docs/performance.md for the
// numbers measured so far and how to read them.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/output.h"
#include "peers.h"
#include "profile.h"
#include "simdnorm/simdnorm.h"

#ifndef SIMDNORM_PROFILE_VERSION
#define SIMDNORM_PROFILE_VERSION "unknown"
#endif

namespace simdnorm_profile {
namespace {

// Resolves the ISAs to force: every listed one, or the requested ones
// (validated with simdnorm_set_isa and named as the library lists them).
bool ResolveIsas(const std::vector<std::string>& wanted,
                 std::vector<std::string>* out) {
  const std::vector<std::string> listed = simdnorm_test::SupportedIsas();
  if (wanted.empty()) {
    *out = listed;
    if (listed.empty()) {
      fmt::print(stderr,
                 "simdnorm-profile: the library lists no ISA "
                 "(simdnorm_isa_count() == 0)\n");
    }
    return !listed.empty();
  }
  for (const std::string& w : wanted) {
    if (simdnorm_set_isa(w.c_str()) != SIMDNORM_OK) {
      fmt::print(stderr,
                 "simdnorm-profile: ISA '{}' is not available here "
                 "(available: {})\n",
                 w, fmt::join(listed, " "));
      simdnorm_set_isa("auto");
      return false;
    }
    out->emplace_back(simdnorm_active_isa());
  }
  simdnorm_set_isa("auto");
  return true;
}

// Writes one output to `path` ("-": stdout; "": none). False when the file
// cannot be opened or written.
bool Write(const std::string& path,
           const std::function<void(std::FILE*)>& write) {
  if (path.empty()) return true;
  simdnorm_tools::Output out;
  if (!out.Open(path)) {
    std::perror(("simdnorm-profile: " + path).c_str());
    return false;
  }
  write(out.get());
  return out.Close();
}

int Run(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  Options o;
  if (int r = ParseOptions(argc, argv, &o)) return r < 0 ? 0 : r;
  if (!o.update_doc.empty() && !UpdateDoc(o.update_doc, nullptr)) return 2;

  std::vector<std::string> isas;
  if (!ResolveIsas(o.isas, &isas)) return 2;
  o.isas = isas;
  Meta meta{o, SIMDNORM_PROFILE_VERSION, DetectMachine(),
            simdnorm_peers::onednn_info(), simdnorm_peers::naive_flags()};
  if (!meta.machine.emulated.empty()) {
    fmt::print(stderr,
               "simdnorm-profile: running under emulation ({}): timings are "
               "not performance figures\n",
               meta.machine.emulated);
  }

  // The header, a table and the wall time on stdout.
  auto report = [&](const std::function<void()>& table) {
    meta.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!table) {
      fmt::print(stderr, "simdnorm-profile: wall time {:.1f} s\n", meta.wall_s);
      return;
    }
    WriteHeader(stdout, meta);
    fmt::print("\n");
    table();
    fmt::print("\nwall time: {:.1f} s\n", meta.wall_s);
    std::fflush(stdout);
  };
  if (!o.ops.empty()) {  // --op: its own table (and JSON)
    const std::vector<FamilyResult> results = MeasureFamilies(
        o, [](const std::string& w) { fmt::print(stderr, "{}\n", w); });
    report([&] { WriteFamilies(stdout, results); });
    return Write(o.json, [&](std::FILE* f) { WriteFamiliesJson(f, results); })
               ? 0
               : 1;
  }

  // Each configuration at every offset, side by side.
  std::vector<Config> configs;
  auto add = [&](Config c) {
    for (const Offset& off : o.offsets) {
      c.offset = off;
      configs.push_back(c);
    }
  };
  for (simdnorm_kind kind : o.kinds) {
    for (const Variant& v : o.variants) {
      for (Dtypes t : o.dtypes) {
        if (v.int8) t.y = SIMDNORM_I8;
        for (size_t cols : o.cols) {
          for (size_t threads : o.threads) {
            for (size_t rows : o.rows)
              add({kind, cols, rows, t, threads, v, {}});
          }
        }
      }
    }
  }
  if (o.fused_line) {
    // vLLM's fused_add_rms_norm step on a Qwen2-0.5B-sized batch.
    Variant fused;
    fused.fused_add = true;
    const Dtypes bf16{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
    for (size_t threads : o.threads) {
      add({SIMDNORM_RMSNORM, 896, 4096, bf16, threads, fused, {}});
    }
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  std::vector<ConfigResult> results;
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string prefix = fmt::format("[{}/{}] {}", i + 1, configs.size(),
                                           ConfigName(configs[i]));
    if (!tty) fmt::print(stderr, "{}\n", prefix);
    results.push_back(MeasureConfig(configs[i], o, [&](const std::string& w) {
      if (tty) fmt::print(stderr, "\r\033[K{}: {}", prefix, w);
    }));
  }
  if (tty) fmt::print(stderr, "\r\033[K");
  report(o.table ? [&] { WriteTable(stdout, results); }
                 : std::function<void()>());
  bool ok = Write(o.json, [&](std::FILE* f) { WriteJson(f, meta, results); });
  ok = Write(o.csv, [&](std::FILE* f) { WriteCsv(f, results); }) && ok;
  const std::string markdown = MarkdownSummary(meta, results);
  ok =
      Write(o.markdown, [&](std::FILE* f) { fmt::print(f, "{}", markdown); }) &&
      ok;
  if (!o.update_doc.empty()) ok = UpdateDoc(o.update_doc, &markdown) && ok;
  ok = Write(o.svg, [&](std::FILE* f) { WriteSvg(f, meta, results); }) && ok;
  for (const ConfigResult& c : results) {
    for (const ImplResult& r : c.impls) {
      if (!o.strict || r.type != ImplType::kSimdnorm ||
          (r.error.empty() && r.err_ok)) {
        continue;
      }
      fmt::print(stderr, "simdnorm-profile: --strict: {} {}: {}\n",
                 ConfigName(c.config), r.name,
                 r.error.empty() ? "output off the reference" : r.error);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace simdnorm_profile

int main(int argc, char** argv) { return simdnorm_profile::Run(argc, argv); }
