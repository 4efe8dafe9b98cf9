// simdnorm-accuracy: measures simdnorm's kernels, per ISA, against the
// float64 reference and beside textbook shortcuts; checks the core's bounds.
// See docs/accuracy.md and --help.
#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "accuracy.h"
#include "common/cli.h"
#include "common/output.h"

namespace simdnorm_accuracy {
namespace {

constexpr const char* kDescription =
    R"(Measures simdnorm's LayerNorm and RMSNorm kernels on every ISA of this machine
against the float64 reference, beside textbook shortcuts, and checks the
library against its bounds: fp32 output <= 32 scaled ulps at every element;
bf16 and f16 output correctly rounded at every element (equal to the
exact result rounded once, so the same bytes on every ISA); int8 output
scales within 1e-6 relative and q within 1 of the float64 ones; the fused
add's sum_out bit-exact. Exit status: 0 within the bounds, 1 a library row
exceeds a bound (or a call failed), 2 usage error.)";

constexpr const char* kFooter =
    R"(Families: normal, offset1e3, offset1e4, llm-hidden, first-outlier,
student-t2, cauchy, near-constant, near-constant-eps0, constant, huge1e25,
huge1e25-eps0, huge1e36, huge1e36-eps0, tiny1e-25, tiny1e-25-eps0,
subnormal1e-40, subnormal1e-40-eps0, and each again as bf16q:NAME (rounded
to bf16; fp32 x only, since bf16 x is rounded anyway). f16 x runs the
families that fit f16 (not huge*, tiny*, subnormal*). The fused add's
residual is a second draw of the same family (with --input: the next row).
--dtypes, --family and --cols, when given, apply to every variant.
See docs/accuracy.md.)";

// X/Y/W, or "all" (kept as a marker: x = I8, expanded after parsing).
bool parse_dtypes(const std::string& s, Dtypes* d) {
  if (s == "all") {
    d->x = SIMDNORM_I8;
    return true;
  }
  const std::vector<std::string> p = simdnorm_tools::split(s, '/');
  using simdnorm_tools::parse_dtype;
  return p.size() == 3 && parse_dtype(p[0], &d->x) &&
         parse_dtype(p[1], &d->y) && parse_dtype(p[2], &d->param);
}

// Parses argv into *cfg: 0 to go on, -1 after printing the help, 2 with the
// message of a usage error in *error. --isa takes the names in `isas` (any
// case; stored as spelled there).
int parse_options(int argc, char** argv, const std::vector<std::string>& isas,
                  Config* cfg, std::string* error) {
  using simdnorm_tools::AddList;
  const auto app =
      simdnorm_tools::MakeApp("simdnorm-accuracy", kDescription, kFooter);
  app->option_defaults()->group("Selection");
  AddList(
      app.get(), "--isa", &cfg->isas,
      [&](const std::string& s, std::string* isa) {
        for (const std::string& i : isas) {
          if (strcasecmp(i.c_str(), s.c_str()) == 0) *isa = i;
        }
        return !isa->empty();
      },
      fmt::format("an ISA of this machine ({})", fmt::join(isas, ", ")),
      "ISAs to force (default: every one the library lists)")
      ->type_name("NAME[,NAME]");
  simdnorm_tools::AddKinds(app.get(), &cfg->kinds, false, "(default: all)");
  simdnorm_tools::AddOps(app.get(), &cfg->ops);
  AddList(app.get(), "--variant", &cfg->variants, simdnorm_tools::parse_variant,
          simdnorm_tools::kVariantSyntax,
          "plain, fused-add (residual, sum_out), gemma\n"
          "(gamma_offset 1), hf-round (ROUND_NORMALIZED), int8\n"
          "(per-row scale), int8-gN (a scale per N elements);\n"
          "join features with '+', e.g. fused-add+int8-g128\n"
          "(default: plain,fused-add,gemma,hf-round,int8,\n"
          "int8-g128)")
      ->type_name("V[,V]");
  AddList(app.get(), "--dtypes", &cfg->dtypes, parse_dtypes,
          "X/Y/W with each f32, bf16 or f16 (int8 output is --variant int8 "
          "or int8-gN)",
          "dtype combinations of x/y/weights, each f32, bf16 or\n"
          "f16; \"all\" = the 27 (default for plain: the 8 of\n"
          "f32 and bf16, and the 7 with f16 and f32 on hidden\n"
          "sizes 896,1001; for the other variants:\n"
          "f32/f32/f32, bf16/bf16/bf16, f16/f16/f16,\n"
          "bf16/bf16/f32; int8 variants make y i8)")
      ->type_name("X/Y/W[,...]");
  CLI::Option* family =
      AddList(
          app.get(), "--family", &cfg->families,
          [](const std::string& s, std::string* n) {
            return !(*n = s).empty();
          },
          "a family name",
          "generated families to run (default: all for plain,\n"
          "normal,llm-hidden,student-t2 for the other variants;\n"
          "see below)")
          ->type_name("NAME[,NAME]");
  AddList(
      app.get(), "--cols", &cfg->cols,
      [](const std::string& s, size_t* n) {
        return simdnorm_tools::parse_size(s, n) && *n >= 1 &&
               *n <= (size_t{1} << 24);
      },
      "a size in 1..16777216",
      "hidden sizes (default: 896,4096,1001 for plain, 1001\n"
      "for the other variants)")
      ->type_name("N[,N]");
  app->add_option("--rows", cfg->rows,
                  "rows per family and hidden size (default: 64;\n"
                  "with --input: the first N rows of the file)")
      ->check(simdnorm_tools::SizeIn(1, size_t{1} << 24))
      ->type_name("N");
  app->add_option("--seed", cfg->seed,
                  "seed of the inputs and weights (default: 1)")
      ->check(simdnorm_tools::SizeIn(0, SIZE_MAX))
      ->type_name("N");
  app->add_option("--eps", cfg->eps,
                  "eps of the families that do not use 0 (default: 1e-5)")
      ->check(simdnorm_tools::NumberIf(
          [](double e) {
            return e >= 0 && std::isfinite(static_cast<float>(e));
          },
          "a finite value >= 0"))
      ->type_name("E");
  app->add_option("--threads", cfg->threads,
                  "max_threads of each call (default: 0 = TBB default)")
      ->check(simdnorm_tools::SizeIn(0, 4096))
      ->type_name("N");
  bool no_shortcuts = false;
  app->add_flag("--no-shortcuts", no_shortcuts, "skip the textbook shortcuts");

  app->option_defaults()->group("Your own activations");
  CLI::Option* input =
      app->add_option("--input", cfg->input,
                      "raw little-endian rows instead of the generated\n"
                      "families; requires a single --cols N")
          ->type_name("FILE")
          ->excludes(family);  // the generated families
  app->add_option("--input-dtype", cfg->input_dtype,
                  "element type of FILE: f32, bf16 or f16 (default f32)")
      ->transform(CLI::Validator(
          [](std::string& v) -> std::string {
            simdnorm_dtype t;
            if (!simdnorm_tools::parse_dtype(v, &t)) {
              return "'" + v + "' is not f32, bf16 or f16";
            }
            v = std::to_string(static_cast<int>(t));
            return "";
          },
          ""))
      ->type_name("T")
      ->needs(input);

  app->option_defaults()->group(
      "Output (the text report goes to stdout unless JSON or CSV does)");
  app->add_flag("--detail", cfg->detail,
                "also one line per (ISA, kind, dtypes, family)");
  simdnorm_tools::AddOptionalFile(
      app.get(), "--json", &cfg->json_path,
      "JSON report to FILE, or stdout if none or \"-\"");
  simdnorm_tools::AddOptionalFile(
      app.get(), "--csv", &cfg->csv_path,
      "CSV, one line per result row, to FILE or stdout");
  app->add_option("--svg", cfg->svg_path,
                  "chart of the worst error per family, log scales")
      ->type_name("FILE");
  app->add_flag("--quiet", cfg->quiet, "no progress line on stderr");
  app->set_help_flag("-h,--help", "this text");

  if (const int status = simdnorm_tools::Parse(app.get(), argc, argv, error)) {
    return status;
  }
  cfg->shortcuts = !no_shortcuts;
  cfg->json = app->count("--json") > 0;
  cfg->csv = app->count("--csv") > 0;
  // "all" (x = I8) stands for the 27 combinations.
  std::vector<Dtypes> dtypes;
  for (const Dtypes& d : cfg->dtypes) {
    const std::vector<Dtypes> all =
        d.x == SIMDNORM_I8
            ? DTypeCombinations({SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16})
            : std::vector<Dtypes>{d};
    dtypes.insert(dtypes.end(), all.begin(), all.end());
  }
  cfg->dtypes = dtypes;
  auto to_stdout = [](bool on, const std::string& path) {
    return on && (path.empty() || path == "-");
  };
  const std::pair<bool, const char*> usage_errors[] = {
      {app->count("--svg") && cfg->svg_path.empty(), "--svg needs a FILE"},
      {app->count("--input") && cfg->input.empty(), "--input needs a FILE"},
      {to_stdout(cfg->json, cfg->json_path) &&
           to_stdout(cfg->csv, cfg->csv_path),
       "--json and --csv cannot both write to stdout; give one a FILE"},
      {!cfg->input.empty() && cfg->cols.size() != 1,
       "--input needs exactly one --cols N (the row length)"}};
  for (const auto& [failed, message] : usage_errors) {
    if (failed) {
      *error = message;
      return 2;
    }
  }
  return 0;
}

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
  // The families that look like real activations.
  const std::vector<Family> realistic =
      families.empty() ? families_named({"normal", "llm-hidden", "student-t2"})
                       : families;
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
  for (const std::string& name : unique(cfg.families)) {
    const std::vector<Family> f = families_named({name});
    if (f.empty()) {
      return usage_error("--family: unknown family '" + name +
                         "' (see --help)");
    }
    families.push_back(f[0]);
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
    // By default the realistic families and the adversarial ones that fit
    // every dtype's range or test it.
    const std::vector<Family> op_families =
        families_named({"normal", "llm-hidden", "student-t2", "offset1e4",
                        "first-outlier", "huge1e25", "tiny1e-25"});
    return run_family_ops(cfg, cfg.families.empty() ? op_families : families,
                          json.get(), csv.get());
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
