// simdnorm-profile: how fast simdnorm is on this machine, per ISA, against
// memcpy of the same bytes, the hand-written loop and oneDNN's LayerNorm.
// `simdnorm-profile --help` for the options; docs/performance.md for the
// numbers measured so far and how to read them.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "machine.h"
#include "measure.h"
#include "options.h"
#include "peers.h"
#include "report.h"
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
  std::vector<std::string> listed;
  for (size_t i = 0; const char* n = simdnorm_isa_name(i); ++i) {
    listed.emplace_back(n);
  }
  if (wanted.empty()) {
    *out = listed;
    if (out->empty()) {
      std::fprintf(stderr,
                   "simdnorm-profile: the library lists no ISA "
                   "(simdnorm_isa_count() == 0)\n");
    }
    return !out->empty();
  }
  for (const std::string& w : wanted) {
    if (simdnorm_set_isa(w.c_str()) != SIMDNORM_OK) {
      std::string all;
      for (const std::string& l : listed) all += " " + l;
      std::fprintf(stderr,
                   "simdnorm-profile: ISA '%s' is not available here "
                   "(available:%s)\n",
                   w.c_str(), all.c_str());
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
bool Output(const std::string& path,
            const std::function<void(std::FILE*)>& write) {
  if (path.empty()) return true;
  std::FILE* f = path == "-" ? stdout : std::fopen(path.c_str(), "w");
  if (!f) {
    std::perror(("simdnorm-profile: " + path).c_str());
    return false;
  }
  write(f);
  return f == stdout ? std::fflush(f) == 0 : std::fclose(f) == 0;
}

int Run(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  Options o;
  if (int r = ParseOptions(argc, argv, &o)) return r < 0 ? 0 : r;

  if (!o.update_doc.empty() && !CheckDoc(o.update_doc)) return 2;

  MeasureSettings s;
  if (!ResolveIsas(o.isas, &s.isas)) return 2;
  s.peers = o.peers;
  s.check = o.check;
  s.reps = o.reps;
  s.batch_ms = o.batch_ms;

  Meta meta;
  meta.version = SIMDNORM_PROFILE_VERSION;
  meta.machine = DetectMachine();
  meta.isas = s.isas;
  meta.onednn = simdnorm_peers::onednn_info();
  meta.loop_flags = simdnorm_peers::naive_flags();
  meta.reps = o.reps;
  meta.batch_ms = o.batch_ms;
  if (!meta.machine.emulated.empty()) {
    std::fprintf(stderr,
                 "simdnorm-profile: running under emulation (%s): timings "
                 "are not performance figures\n",
                 meta.machine.emulated.c_str());
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
      for (DTypes t : o.dtypes) {
        if (v.int8) t.y = SIMDNORM_I8;
        for (size_t cols : o.cols) {
          for (size_t threads : o.threads) {
            for (size_t rows : o.rows) {
              Config c;
              c.kind = kind;
              c.cols = cols;
              c.rows = rows;
              c.dtypes = t;
              c.threads = threads;
              c.variant = v;
              add(c);
            }
          }
        }
      }
    }
  }
  if (o.fused_line) {
    // vLLM's fused_add_rms_norm step on a Qwen2-0.5B-sized batch.
    for (size_t threads : o.threads) {
      Config c;
      c.kind = SIMDNORM_RMSNORM;
      c.cols = 896;
      c.rows = 4096;
      c.dtypes = DTypes{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
      c.threads = threads;
      c.variant.fused_add = true;
      add(c);
    }
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  std::vector<ConfigResult> results;
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const std::string prefix = "[" + std::to_string(i + 1) + "/" +
                               std::to_string(configs.size()) + "] " +
                               ConfigName(c);
    if (!tty) std::fprintf(stderr, "%s\n", prefix.c_str());
    auto progress = [&](const std::string& what) {
      if (tty) {
        std::fprintf(stderr, "\r\033[K%s: %s", prefix.c_str(), what.c_str());
      }
    };
    results.push_back(MeasureConfig(c, s, progress));
  }
  if (tty) std::fprintf(stderr, "\r\033[K");
  meta.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  bool ok = true;
  if (o.table) {
    WriteHeader(stdout, meta);
    std::fputc('\n', stdout);
    WriteTable(stdout, results);
    std::printf("\nwall time: %.1f s\n", meta.wall_s);
    std::fflush(stdout);
  } else {
    std::fprintf(stderr, "simdnorm-profile: wall time %.1f s\n", meta.wall_s);
  }
  ok = Output(o.json, [&](std::FILE* f) { WriteJson(f, meta, results); });
  ok = Output(o.csv, [&](std::FILE* f) { WriteCsv(f, results); }) && ok;
  const std::string markdown = MarkdownSummary(meta, results);
  auto put_markdown = [&](std::FILE* f) { std::fputs(markdown.c_str(), f); };
  ok = Output(o.markdown, put_markdown) && ok;
  if (!o.update_doc.empty()) ok = UpdateDoc(o.update_doc, markdown) && ok;
  ok = Output(o.svg, [&](std::FILE* f) { WriteSvg(f, meta, results); }) && ok;
  if (o.strict) {
    for (const ConfigResult& c : results) {
      for (const ImplResult& r : c.impls) {
        if (r.type != ImplType::kSimdnorm) continue;
        if (!r.error.empty() || !r.err_ok) {
          std::fprintf(
              stderr, "simdnorm-profile: --strict: %s %s: %s\n",
              ConfigName(c.config).c_str(), r.name.c_str(),
              r.error.empty() ? "output off the reference" : r.error.c_str());
          ok = false;
        }
      }
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace simdnorm_profile

int main(int argc, char** argv) { return simdnorm_profile::Run(argc, argv); }
