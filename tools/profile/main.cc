// simdnorm-profile: how fast simdnorm is on this machine, per ISA, against
// memcpy of the same bytes, the hand-written loop and oneDNN's LayerNorm.
// `simdnorm-profile --help` for the options; docs/performance.md for the
// numbers measured so far and how to read them.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "common/output.h"
#include "peers.h"
#include "profile.h"
#include "simdnorm/simdnorm.h"

#ifndef SIMDNORM_PROFILE_VERSION
#define SIMDNORM_PROFILE_VERSION "unknown"
#endif

namespace simdnorm_profile {

namespace {

using simdnorm_tools::AddList;

constexpr const char* kDescription =
    "Measures simdnorm's LayerNorm and RMSNorm on this machine, every ISA,\n"
    "against memcpy of the same bytes, the hand-written loop and oneDNN's\n"
    "LayerNorm (when built in). Default: hidden size 896, rows 1,64,4096,\n"
    "both kinds, f32 and bf16, 1 thread and all threads, plus one fused-add\n"
    "line (RMSNorm bf16, rows 4096: vLLM's pre-norm step, against the\n"
    "unfused add loop + norm), each on aligned buffers and 16 bytes off\n"
    "(about 25 s).";

constexpr const char* kFooter =
    "GB/s counts the bytes a call moves once per row: x read + y written,\n"
    "plus the residual read and sum_out written (fused add) and the int8\n"
    "scales; gamma and beta are not counted. The unfused peer (variants\n"
    "with a fused add or int8 output: an add loop, simdnorm on the first\n"
    "ISA, a quantize loop) is counted with the bytes it moves itself.\n"
    "'of memcpy' = time of memcpy of the call's bytes / time of the row's\n"
    "implementation (1.00 = memcpy speed); 'vs loop', 'vs oneDNN' and 'vs\n"
    "unfused' = the peer's time / this implementation's time (above 1 =\n"
    "faster than the peer).";

// X[:Y[:W]], Y = X and W = Y when left out.
bool ParseDtypes(const std::string& s, Dtypes* t) {
  const std::vector<std::string> p = simdnorm_tools::split(s, ':');
  using simdnorm_tools::parse_dtype;
  return p.size() <= 3 && parse_dtype(p[0], &t->x) &&
         parse_dtype(p.size() > 1 ? p[1] : p[0], &t->y) &&
         parse_dtype(p.back(), &t->param);
}

// "X" or "X:Y", each a multiple of 4 below 64.
bool ParseOffset(const std::string& s, Offset* o) {
  const std::vector<std::string> p = simdnorm_tools::split(s, ':');
  auto one = [](const std::string& v, size_t* n) {
    return simdnorm_tools::parse_size(v, n) && *n < 64 && *n % 4 == 0;
  };
  return p.size() <= 2 && one(p[0], &o->x) && one(p.back(), &o->y);
}

int Fail(const std::string& msg) {
  fmt::print(stderr, "simdnorm-profile: {} (see --help)\n", msg);
  return 2;
}

// Parses argv into *o. Returns 0 to go on, -1 after --help (exit 0), or 2
// after an error (the message already printed).
int ParseOptions(int argc, char** argv, Options* o) {
  const auto app =
      simdnorm_tools::MakeApp("simdnorm-profile", kDescription, kFooter);
  const CLI::Validator positive = simdnorm_tools::SizeIn(1, SIZE_MAX);
  app->add_option("--cols", o->cols, "hidden sizes (default 896)")
      ->delimiter(',')
      ->check(positive)
      ->type_name("N[,N...]");
  app->add_option("--rows", o->rows, "rows per call (default 1,64,4096)")
      ->delimiter(',')
      ->check(positive)
      ->type_name("N[,N...]");
  app->add_option("--isa", o->isas,
                  "ISAs to force (default: every ISA listed by\n"
                  "simdnorm_isa_name on this machine)")
      ->delimiter(',')
      ->type_name("NAME[,NAME...]");
  simdnorm_tools::AddKinds(app.get(), &o->kinds, true, "(default all)");
  simdnorm_tools::AddOps(app.get(), &o->ops);
  AddList(app.get(), "--dtype,--dtypes", &o->dtypes, ParseDtypes,
          "f32, bf16, f16 or X:Y[:P] of them",
          "f32, bf16, f16, or X:Y[:P] for mixed x, y and\n"
          "parameter types, e.g. bf16:f32 (P = Y when\n"
          "left out) (default f32,bf16; --dtypes too)")
      ->type_name("T[,T...]");
  AddList(app.get(), "--variant", &o->variants, simdnorm_tools::parse_variant,
          simdnorm_tools::kVariantSyntax,
          "plain, fused-add (residual in, sum_out out),\n"
          "gemma (gamma_offset 1), hf-round\n"
          "(ROUND_NORMALIZED), int8 (y int8, a scale per\n"
          "row), int8-gN (a scale per N elements); join\n"
          "with '+', e.g. fused-add+int8 (default plain;\n"
          "this or --kind, --dtype, --cols, --rows drops\n"
          "the default fused-add line)")
      ->type_name("V[,V...]");
  app->add_option("--threads", o->threads,
                  "max_threads values; 0 = all (default 1,0)")
      ->delimiter(',')
      ->check(simdnorm_tools::SizeIn(0, SIZE_MAX))
      ->type_name("N[,N]");
  AddList(app.get(), "--offset", &o->offsets, ParseOffset,
          "X or X:Y, multiples of 4 below 64",
          "where the buffers start, in bytes past a 64-byte\n"
          "line: x (and gamma, beta, residual, sum_out) at\n"
          "X, y at Y (Y = X when left out); multiples of 4\n"
          "below 64; every configuration runs at each\n"
          "(default 0,16: aligned, and 16 bytes off as the\n"
          "rows of a std::vector are)")
      ->type_name("X[:Y][,...]");
  app->add_option("--reps", o->reps,
                  "timed batches per measurement (default 9);\n"
                  "the table reports their median")
      ->check(positive)
      ->type_name("N");
  app->add_option("--batch-ms", o->batch_ms, "length of one batch (default 4)")
      ->check(simdnorm_tools::NumberIf(
          [](double ms) { return ms > 0.0 && ms <= 10000.0; },
          "a number of ms above 0, at most 10000"))
      ->type_name("MS");
  bool no_peers = false, no_check = false;
  app->add_flag("--no-peers", no_peers,
                "simdnorm only (no memcpy, loop, oneDNN)");
  app->add_flag("--no-check", no_check,
                "skip the comparison with the float64 reference");
  app->add_flag("--strict", o->strict,
                "exit status 1 when a simdnorm call fails or its\n"
                "output is off the reference (a smoke test)");
  using simdnorm_tools::AddOptionalFile;  // without FILE: stdout ("-")
  AddOptionalFile(app.get(), "--json", &o->json,
                  "results as JSON (stdout when FILE is absent)");
  AddOptionalFile(app.get(), "--csv", &o->csv,
                  "results as CSV (stdout when FILE is absent)");
  app->add_option("--svg", o->svg, "GB/s per ISA as a grouped SVG bar chart")
      ->type_name("FILE");
  AddOptionalFile(app.get(), "--markdown", &o->markdown,
                  "a summary table in Markdown (stdout when FILE\n"
                  "is absent)");
  app->add_option("--update-doc", o->update_doc,
                  "replace the summary between the markers\n"
                  "<!-- simdnorm-profile:begin/end --> in FILE")
      ->type_name("FILE");
  app->set_help_flag("-h,--help", "this text");

  std::string error;
  if (const int status = simdnorm_tools::Parse(app.get(), argc, argv, &error)) {
    return status < 0 ? status : Fail(error);
  }
  if (app->count("--json") && o->json.empty()) o->json = "-";
  if (app->count("--csv") && o->csv.empty()) o->csv = "-";
  if (app->count("--markdown") && o->markdown.empty()) o->markdown = "-";
  for (const char* name :
       {"--cols", "--rows", "--kind", "--dtype", "--variant"}) {
    if (app->count(name)) o->fused_line = false;
  }
  o->peers = !no_peers;
  o->check = !no_check;
  if (o->cols.empty() || o->rows.empty() || o->threads.empty() ||
      o->kinds.empty() || o->dtypes.empty() || o->variants.empty() ||
      o->offsets.empty()) {
    return Fail("an option needs a value");
  }
  const int to_stdout =
      (o->json == "-") + (o->csv == "-") + (o->markdown == "-");
  if (to_stdout > 1) {
    return Fail("only one of --json, --csv, --markdown can write to stdout");
  }
  if (o->svg == "-" || (app->count("--svg") && o->svg.empty())) {
    return Fail("--svg needs a FILE");
  }
  if (app->count("--update-doc") && o->update_doc.empty()) {
    return Fail("--update-doc needs a FILE");
  }
  // Machine-readable output on stdout replaces the table there.
  o->table = to_stdout == 0;
  return 0;
}

// The first word of a file (a sysfs value), "" when it cannot be read.
std::string Word(const std::string& path) {
  std::string w;
  std::ifstream(path) >> w;
  return w;
}

// The value of the first "key : value" line of /proc/cpuinfo.
std::string CpuInfoField(const std::string& cpuinfo, const std::string& key) {
  std::smatch m;
  const std::regex line("^[ \t]*" + key + "[ \t]*:[ \t]*(.*?)[ \t\r]*$",
                        std::regex::multiline);
  return std::regex_search(cpuinfo, m, line) ? m.str(1) : "";
}

std::string Caches() {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = Word(dir + "level");
    if (level.empty()) break;
    const std::string type = Word(dir + "type");
    std::string size = Word(dir + "size");
    if (type == "Instruction") continue;
    if (!size.empty() && size.back() == 'K')
      size.replace(size.size() - 1, 1, " KiB");
    out += (out.empty() ? "L" : ", L") + level + (type == "Data" ? "d " : " ") +
           size;
  }
  if (!out.empty()) return out + " (cpu0)";
  // No sysfs cache entries (some KVM guests): glibc's sizes, from CPUID.
  const long sizes[] = {sysconf(_SC_LEVEL1_DCACHE_SIZE),
                        sysconf(_SC_LEVEL2_CACHE_SIZE),
                        sysconf(_SC_LEVEL3_CACHE_SIZE)};
  const char* names[] = {"L1d ", "L2 ", "L3 "};
  for (int i = 0; i < 3; ++i) {
    if (sizes[i] <= 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(names[i]) +
           std::to_string(sizes[i] >> 10) + " KiB";
  }
  return out.empty() ? "unknown" : out + " (CPUID)";
}

// The text of the file at `path` into *text; false when it cannot be read.
bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  *text = ss.str();
  return f.good();
}

Machine DetectMachine() {
  Machine m;
#if defined(__x86_64__) || defined(_M_X64)
  m.arch = "x86_64";
#elif defined(__i386__)
  m.arch = "x86";
#elif defined(__aarch64__)
  m.arch = "aarch64";
#elif defined(__arm__)
  m.arch = "arm";
#elif defined(__riscv)
  m.arch = "riscv";
#elif defined(__powerpc64__)
  m.arch = "ppc64";
#else
  m.arch = "unknown";
#endif
  std::string cpuinfo;
  ReadFile("/proc/cpuinfo", &cpuinfo);
  m.cpu = CpuInfoField(cpuinfo, "model name");
  if (m.cpu.empty()) m.cpu = CpuInfoField(cpuinfo, "Hardware");
  const std::string impl = CpuInfoField(cpuinfo, "CPU implementer");
  if (m.cpu.empty() && !impl.empty()) {
    m.cpu =
        "implementer " + impl + ", part " + CpuInfoField(cpuinfo, "CPU part");
  }
  if (m.cpu.empty()) m.cpu = "unknown CPU";
  m.logical_cpus = std::thread::hardware_concurrency();
  m.caches = Caches();
  if (!(std::ifstream("/proc/loadavg") >> m.load1)) m.load1 = -1.0;
#if defined(__clang__)
  m.compiler = "Clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "GCC " __VERSION__;
#elif defined(_MSC_VER)
  m.compiler = "MSVC " + std::to_string(_MSC_VER);
#else
  m.compiler = "unknown compiler";
#endif

  // Emulation: kept simple. An explicit variable, qemu's own variables, or
  // a /proc/cpuinfo of another architecture than this binary's (qemu-user
  // passes the host's through).
  const char* forced = std::getenv("SIMDNORM_EMULATED");
  const bool x86 = m.arch == "x86_64" || m.arch == "x86";
  const bool cpuinfo_x86 = cpuinfo.find("vendor_id") != std::string::npos;
  if (forced && *forced && std::string(forced) != "0") {
    m.emulated = "SIMDNORM_EMULATED is set";
  } else if (std::getenv("QEMU_CPU") || std::getenv("QEMU_LD_PREFIX")) {
    m.emulated = "QEMU_CPU or QEMU_LD_PREFIX is set";
  } else if (!cpuinfo.empty() && cpuinfo_x86 != x86) {
    m.emulated = "/proc/cpuinfo describes another architecture than this " +
                 m.arch + " binary (qemu-user)";
  }
  return m;
}

constexpr const char* kDocBegin = "<!-- simdnorm-profile:begin -->";
constexpr const char* kDocEnd = "<!-- simdnorm-profile:end -->";

// Replaces the text between the lines "<!-- simdnorm-profile:begin -->" and
// "<!-- simdnorm-profile:end -->" in the file at `path` with *text; without
// text only checks that it could (to fail before measuring). False, with a
// message on stderr, when the file cannot be read or written or lacks the
// markers.
bool UpdateDoc(const std::string& path, const std::string* text) {
  std::string doc;
  if (!ReadFile(path, &doc)) {
    fmt::print(stderr, "simdnorm-profile: cannot read {}\n", path);
    return false;
  }
  const size_t b = doc.find(kDocBegin);
  const size_t e = b == std::string::npos ? b : doc.find(kDocEnd, b);
  if (e == std::string::npos) {
    fmt::print(stderr, "simdnorm-profile: {} lacks the lines {} and {}\n", path,
               kDocBegin, kDocEnd);
    return false;
  }
  if (!text) return true;
  const size_t body = b + std::string(kDocBegin).size();
  std::ofstream out(path, std::ios::trunc);
  out << doc.substr(0, body) << "\n" << *text << doc.substr(e);
  out.close();
  if (!out) {
    fmt::print(stderr, "simdnorm-profile: cannot write {}\n", path);
    return false;
  }
  return true;
}

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
