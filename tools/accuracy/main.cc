// simdnorm-accuracy: measures simdnorm's kernels, per ISA, against the
// float64 reference and beside textbook shortcuts; checks the core's bounds.
// See docs/accuracy.md and --help.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "inputs.h"
#include "options.h"
#include "report.h"
#include "run.h"

namespace simdnorm_accuracy {
namespace {

constexpr int kExitUsage = 2;

int usage_error(const std::string& msg) {
  std::cerr << "simdnorm-accuracy: " << msg
            << "\nTry 'simdnorm-accuracy --help'.\n";
  return kExitUsage;
}

// The values in their first order, repeats dropped.
template <class T, class Eq = std::equal_to<T>>
std::vector<T> unique(const std::vector<T>& v, Eq eq = Eq()) {
  std::vector<T> out;
  for (const T& e : v) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const T& o) { return eq(o, e); })) {
      out.push_back(e);
    }
  }
  return out;
}

std::vector<std::string> library_isas() {
  std::vector<std::string> out;
  const size_t n = simdnorm_isa_count();
  for (size_t i = 0; i < n; ++i) {
    const char* name = simdnorm_isa_name(i);
    if (name) out.push_back(name);
  }
  return out;
}

// An output stream: stdout for "" and "-", else a file.
class Sink {
 public:
  bool open(const std::string& path) {
    if (path.empty() || path == "-") return true;
    file_ = std::make_unique<std::ofstream>(path, std::ios::binary);
    return static_cast<bool>(*file_);
  }
  std::ostream& stream() { return file_ ? *file_ : std::cout; }
  bool to_stdout() const { return !file_; }

 private:
  std::unique_ptr<std::ofstream> file_;
};

int run_main(int argc, char** argv) {
  Options opt;
  std::string err;
  // ISAs: the library's names, best first, optionally filtered.
  const std::vector<std::string> available = library_isas();
  if (!parse_options(argc, argv, available, &opt, &err)) {
    return usage_error(err);
  }
  if (opt.help) return 0;

  RunConfig cfg;
  ReportMeta meta;
  meta.command = "simdnorm-accuracy";
  for (int i = 1; i < argc; ++i) meta.command += std::string(" ") + argv[i];

  if (available.empty()) {
    // Nothing to measure is a library failure, not a pass.
    std::cerr << "simdnorm-accuracy: FAIL: simdnorm_isa_count() is 0, the "
                 "library offers no ISA on this machine\n";
    return 1;
  }
  cfg.isas = opt.isas.empty() ? available : unique(opt.isas);
  cfg.kinds = opt.kinds.empty() ? std::vector<simdnorm_kind>{SIMDNORM_LAYERNORM,
                                                             SIMDNORM_RMSNORM}
                                : unique(opt.kinds);
  const std::vector<Dtypes> dtypes = unique(opt.dtypes);
  const std::vector<size_t> cols = unique(opt.cols);
  cfg.rows = opt.rows ? opt.rows : kDefaultRows;
  cfg.seed = opt.seed;
  cfg.eps = opt.eps;
  cfg.shortcuts = opt.shortcuts;
  cfg.progress = !opt.quiet;
  cfg.threads = opt.threads;

  // The families: --input's rows, the selected ones, or (empty) the
  // defaults: all for plain, the realistic ones for the other variants.
  std::vector<Family> families;
  if (!opt.input.empty()) {
    const size_t c = cols[0];
    size_t rows = 0;
    if (!read_rows(opt.input, opt.input_dtype, c, &cfg.user_data, &rows,
                   &err)) {
      return usage_error(err);
    }
    if (opt.rows && opt.rows < rows) {
      rows = opt.rows;
      cfg.user_data.resize(rows * c);
    }
    cfg.user_rows = rows;
    Family f;
    f.name = "input";
    f.gen = Gen::kUser;
    families.push_back(f);
    meta.input_path = opt.input;
    meta.input_dtype = opt.input_dtype;
    meta.input_rows = rows;
  } else {
    const std::vector<Family> all = default_families();
    for (const std::string& name : opt.families) {
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const Family& f) { return f.name == name; });
      if (it == all.end()) {
        return usage_error("--family: unknown family '" + name +
                           "' (see --help)");
      }
      if (std::none_of(families.begin(), families.end(),
                       [&](const Family& f) { return f.name == name; })) {
        families.push_back(*it);
      }
    }
  }
  std::vector<Family> all_families = families, realistic = families;
  if (families.empty()) {
    all_families = default_families();
    realistic.clear();
    for (const std::string& name : realistic_family_names()) {
      for (const Family& f : all_families) {
        if (f.name == name) realistic.push_back(f);
      }
    }
  }

  // The plans. Given selections apply to every variant; the defaults keep
  // the default run short: f16 on two hidden sizes, the engine variants on
  // one hidden size, the realistic families and four dtype combinations.
  const std::vector<Variant> variants =
      opt.variants.empty() ? default_variants() : unique(opt.variants);
  for (const Variant& v : variants) {
    if (v.plain()) {
      const std::vector<size_t>& c = cols.empty() ? default_cols() : cols;
      if (!dtypes.empty()) {
        cfg.plans.push_back(Plan{v, dtypes, all_families, c});
      } else {
        cfg.plans.push_back(Plan{v, f32_bf16_dtypes(), all_families, c});
        cfg.plans.push_back(Plan{v, f16_dtypes(), all_families,
                                 cols.empty() ? default_f16_cols() : cols});
      }
      continue;
    }
    std::vector<Dtypes> dts = dtypes.empty() ? variant_dtypes() : dtypes;
    if (v.int8) {
      for (Dtypes& d : dts) d.y = SIMDNORM_I8;
      dts = unique(dts);
    }
    cfg.plans.push_back(
        Plan{v, dts, realistic, cols.empty() ? default_variant_cols() : cols});
  }

  // Open every output before the (long) measurement.
  Sink json, csv, svg;
  if (opt.json && !json.open(opt.json_path)) {
    return usage_error("cannot write " + opt.json_path);
  }
  if (opt.csv && !csv.open(opt.csv_path)) {
    return usage_error("cannot write " + opt.csv_path);
  }
  if (!opt.svg_path.empty() &&
      (opt.svg_path == "-" || !svg.open(opt.svg_path))) {
    return usage_error("cannot write " + opt.svg_path);
  }
  const bool table_to_stdout =
      !(opt.json && json.to_stdout()) && !(opt.csv && csv.to_stdout());

  const auto t0 = std::chrono::steady_clock::now();
  const RunOutput out = run_all(cfg);
  const auto t1 = std::chrono::steady_clock::now();

  meta.seed = cfg.seed;
  meta.rows = cfg.rows;
  meta.eps = cfg.eps;
  meta.isas = cfg.isas;
  meta.kinds = cfg.kinds;
  meta.plans = cfg.plans;
  // The unions over the plans, in order of first appearance.
  for (const Plan& p : cfg.plans) {
    meta.variants.push_back(p.variant.name());
    meta.dtypes.insert(meta.dtypes.end(), p.dtypes.begin(), p.dtypes.end());
    for (const Family& f : p.families) meta.families.push_back(f.name);
    meta.cols.insert(meta.cols.end(), p.cols.begin(), p.cols.end());
  }
  meta.variants = unique(meta.variants);
  meta.dtypes = unique(meta.dtypes);
  meta.families = unique(meta.families);
  meta.cols = unique(meta.cols);
  meta.seconds = std::chrono::duration<double>(t1 - t0).count();

  if (table_to_stdout) write_table(std::cout, out, meta, opt.detail);
  if (opt.json) write_json(json.stream(), out, meta);
  if (opt.csv) write_csv(csv.stream(), out);
  if (!opt.svg_path.empty()) write_svg(svg.stream(), out, meta);
  std::cout.flush();

  bool pass = out.errors.empty();
  for (const ResultRow& r : out.rows) pass = pass && r.pass();
  if (!table_to_stdout) {
    for (const std::string& e : out.errors) std::cerr << "ERROR: " << e << "\n";
    for (const std::string& f : failure_lines(out))
      std::cerr << "FAIL: " << f << "\n";
  }
  if (!table_to_stdout) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", meta.seconds);
    std::cerr << "simdnorm-accuracy: " << (pass ? "PASS" : "FAIL") << " in "
              << secs << " s\n";
  }
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace simdnorm_accuracy

int main(int argc, char** argv) {
  return simdnorm_accuracy::run_main(argc, argv);
}
