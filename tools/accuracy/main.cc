// simdnorm-accuracy: measures simdnorm's kernels, per ISA, against the
// float64 reference and beside textbook shortcuts; checks the core's bounds.
// See docs/accuracy.md and --help.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "accuracy.h"
#include "common/output.h"

namespace simdnorm_accuracy {
namespace {

int usage_error(const std::string& msg) {
  fmt::print(stderr, "simdnorm-accuracy: {}\nTry 'simdnorm-accuracy --help'.\n",
             msg);
  return 2;
}

// The plans. Given selections apply to every variant; the defaults keep the
// default run short: f16 on two hidden sizes, the engine variants on one
// hidden size, the realistic families and four dtype combinations.
std::vector<Plan> make_plans(const Config& cfg,
                             const std::vector<Family>& families) {
  const std::vector<Dtypes> dtypes = unique(cfg.dtypes);
  // Qwen2-0.5B, Llama-7B and an odd size (1001 = 62*16 + 9: every vector
  // width leaves a remainder); for f16 a full-vector and an odd size (the
  // conversions' tails).
  auto cols = [&](std::vector<size_t> d) {
    return cfg.cols.empty() ? d : unique(cfg.cols);
  };
  const std::vector<Family> all =
      families.empty() ? default_families() : families;
  const std::vector<Family> realistic =
      families.empty() ? realistic_families() : families;
  std::vector<Plan> plans;
  for (const Variant& v : cfg.variants.empty()
                              ? simdnorm_tools::default_variants()
                              : unique(cfg.variants)) {
    if (v.plain() && !dtypes.empty()) {
      plans.push_back({v, dtypes, all, cols({896, 4096, 1001})});
    } else if (v.plain()) {
      plans.push_back(
          {v, simdnorm_test::AllDTypes(), all, cols({896, 4096, 1001})});
      plans.push_back({v, DTypeCombinations({SIMDNORM_F32, SIMDNORM_F16}, true),
                       all, cols({896, 1001})});
    } else {
      std::vector<Dtypes> dts = dtypes;
      if (dts.empty()) {
        dts = {{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
               {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
               {SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16},
               {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_F32}};
      }
      for (Dtypes& d : dts) d.y = v.int8 ? SIMDNORM_I8 : d.y;
      plans.push_back({v, unique(dts), realistic, cols({1001})});
    }
  }
  return plans;
}

int run_main(int argc, char** argv) {
  Config cfg;
  std::string err;
  const std::vector<std::string> available = simdnorm_test::SupportedIsas();
  if (const int status = parse_options(argc, argv, available, &cfg, &err)) {
    return status < 0 ? 0 : usage_error(err);
  }
  if (available.empty()) {
    // Nothing to measure is a library failure, not a pass.
    fmt::print(stderr,
               "simdnorm-accuracy: FAIL: simdnorm_isa_count() is 0, the "
               "library offers no ISA on this machine\n");
    return 1;
  }
  cfg.isas = cfg.isas.empty() ? available : unique(cfg.isas);
  cfg.kinds =
      cfg.kinds.empty() ? simdnorm_tools::AllKinds() : unique(cfg.kinds);

  // The families: --input's rows, the selected ones, or (empty) the
  // defaults: all for plain, the realistic ones for the other variants.
  std::vector<Family> families;
  if (!cfg.input.empty()) {
    if (!read_rows(cfg.input, cfg.input_dtype, cfg.cols[0], &cfg.user_data,
                   &err)) {
      return usage_error(err);
    }
    cfg.user_rows = cfg.user_data.size() / cfg.cols[0];
    if (cfg.rows && cfg.rows < cfg.user_rows) {
      cfg.user_rows = cfg.rows;
      cfg.user_data.resize(cfg.rows * cfg.cols[0]);
    }
    families.push_back({"input", Gen::kUser});
  }
  cfg.rows = cfg.rows ? cfg.rows : 64;
  const std::vector<Family> all = default_families();
  for (const std::string& name : unique(cfg.families)) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const Family& f) { return f.name == name; });
    if (it == all.end()) {
      return usage_error("--family: unknown family '" + name +
                         "' (see --help)");
    }
    families.push_back(*it);
  }
  cfg.plans = make_plans(cfg, families);

  // Open every output before the (long) measurement.
  simdnorm_tools::Output json, csv, svg;
  if (cfg.json && !json.Open(cfg.json_path)) {
    return usage_error("cannot write " + cfg.json_path);
  }
  if (cfg.csv && !csv.Open(cfg.csv_path)) {
    return usage_error("cannot write " + cfg.csv_path);
  }
  if (!cfg.svg_path.empty() &&
      (cfg.svg_path == "-" || !svg.Open(cfg.svg_path))) {
    return usage_error("cannot write " + cfg.svg_path);
  }
  const bool table_to_stdout = !json.is_stdout() && !csv.is_stdout();
  if (!cfg.ops.empty()) {
    return run_family_ops(
        cfg, cfg.families.empty() ? family_op_families() : families, json.get(),
        csv.get());
  }

  const auto t0 = std::chrono::steady_clock::now();
  RunOutput out = run_all(cfg);
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  Report report{cfg, out, "simdnorm-accuracy"};
  for (int i = 1; i < argc; ++i) report.command += std::string(" ") + argv[i];
  if (table_to_stdout) write_table(stdout, report);
  if (json.get()) write_json(json.get(), report);
  if (csv.get()) write_csv(csv.get(), report);
  if (svg.get()) write_svg(svg.get(), report);
  std::fflush(stdout);
  if (!table_to_stdout) {
    for (const std::string& e : out.errors)
      fmt::print(stderr, "ERROR: {}\n", e);
    for (const std::string& f : failure_lines(out)) {
      fmt::print(stderr, "FAIL: {}\n", f);
    }
    fmt::print(stderr, "simdnorm-accuracy: {} in {:.1f} s\n",
               out.pass() ? "PASS" : "FAIL", out.seconds);
  }
  return out.pass() ? 0 : 1;
}

}  // namespace
}  // namespace simdnorm_accuracy

int main(int argc, char** argv) {
  return simdnorm_accuracy::run_main(argc, argv);
}
