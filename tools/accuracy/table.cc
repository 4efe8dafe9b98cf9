#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include "accuracy.h"

namespace simdnorm_accuracy {
namespace {

constexpr const char* kUnits =
    R"(  fp32 out: scaled ulps = |got - want| / (2^-23 (|gamma| max(1,|xhat|) + |beta|)), bound <= 32
  bf16/f16 out: ulps of the format from the correctly rounded result (the exact one rounded once), bound <= 1;
  exact% = share equal to it, bound 100 (so every ISA writes the same bytes)
  i8 out: q = |q - q64|, bound <= 1; scale rel = |scale - scale64| / scale64, bound <= 1e-06
  information only: exact% for fp32 out (share equal to the truth rounded once to fp32); scaled for bf16/f16 out
  (largest error in units of 2^-7 or 2^-10 (|gamma| max(1,|xhat|) + |beta|); correct rounding gives <= 0.5)
)";

constexpr const char* kVariantRules =
    R"(
  fused-add: sum_out must equal h = x + residual rounded once to x (bit-exact), and the in-place form
  (sum_out = residual, y = x) the out-of-place call; hf-round: either rounding of xhat to x is right where
  the float64 xhat lies within the fp32 bound of a rounding boundary (the error is to the nearer one)
)";

constexpr const char* kSummaryTitle =
    R"(Summary per ISA, kind and dtypes: max = worst over families (worst family: where it occurs), mean over all
elements, p99.9 = the largest family p99.9, exact% = the lowest family share, scaled = the largest (bf16/f16 out)
)";

constexpr const char* kVariantsTitle =
    R"(Engine variants per ISA, kind and dtypes (as above; scale rel = the largest relative error of an int8 scale,
sum_out = elements of sum_out not bit-exact and of the in-place form differing from the out-of-place call)
)";

constexpr const char* kFamiliesTitle =
    R"(Per family (plain calls): worst over ISAs, kinds and dtypes (fp32 out: max scaled ulps; bf16/f16 out: lowest exact% / max ulps;
excl% = largest share of elements excluded because the float64 truth is not finite)
)";

// A title, then columns sized to their widest cell: `align` has an 'r' for
// each right-aligned one; a line of dashes under the header, and an empty
// row for a blank line.
void print_table(std::FILE* f, const char* title, const std::string& align,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  fmt::print(f, "{}", title);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      // Padded to the width (no trailing blanks after the last column).
      const std::string pad(
          i + 1 < r.size() || align[i] == 'r' ? width[i] - r[i].size() : 0,
          ' ');
      fmt::print(f, "{}{}", i ? "  " : "",
                 align[i] == 'r' ? pad + r[i] : r[i] + pad);
    }
    fmt::print(f, "\n");
    if (&r == &rows[0]) {
      fmt::print(f, "{:-<{}}\n", "",
                 2 * (width.size() - 1) +
                     std::accumulate(width.begin(), width.end(), size_t{0}));
    }
  }
  fmt::print(f, "\n");
}

std::string format_share(double s) { return fmt::format("{:.3f}", 100.0 * s); }

std::string format_worst(const Worst& w) {
  if (!w.valid) return "-";
  return fmt::format("cols {} row {} col {}: x={:.7g} got={:.7g} want={:.9g}",
                     w.cols, w.row, w.col, w.input, w.got, w.want);
}

// "ok", "FAIL" or "FAIL(failing families)"; not held to the bounds:
// "(within)" or "(exceeds)".
std::string status(bool checked, bool exceeds, size_t failing) {
  if (!checked) return exceeds ? "(exceeds)" : "(within)";
  if (failing) return fmt::format("FAIL({})", failing);
  return exceeds ? "FAIL" : "ok";
}

void write_header(std::FILE* f, const Report& r) {
  const Config& cfg = r.cfg;
  const std::string cols = fmt::format("{}", fmt::join(cfg.all_cols(), ","));
  const double eps = cfg.eps;
  fmt::print(f, "simdnorm-accuracy: {}\n", r.command);
  if (cfg.input.empty()) {
    fmt::print(f,
               "  seed {}, {} rows per family, cols {}, eps {:g} (0 for *-eps0 "
               "families)\n",
               cfg.seed, cfg.rows, cols, eps);
  } else {
    fmt::print(f,
               "  input {} ({}, {} rows x {} cols), eps {:g}, weights from "
               "seed {}\n",
               cfg.input, dtype_name(cfg.input_dtype), cfg.user_rows, cols, eps,
               cfg.seed);
  }
  fmt::print(f, "  ISAs {}; dtypes are x/y/w (input/output/gamma,beta)\n{}",
             fmt::join(cfg.isas, ", "), kUnits);
  const std::vector<std::string> variants = cfg.all_variants();
  if (variants.size() > 1 || (variants.size() == 1 && variants[0] != "plain")) {
    fmt::print(f, "  variants:");
    for (const Plan& p : cfg.plans) {
      fmt::print(f, "\n    {}: {} dtype combinations, {} families, cols {}",
                 p.variant.name(), p.dtypes.size(), p.families.size(),
                 fmt::join(p.cols, ","));
    }
    fmt::print(f, "{}", kVariantRules);
  }
  fmt::print(f, "\n");
}

// Per ISA, kind and dtypes: the plain calls, or the engine variants
// (library rows only, with the int8 scales' largest relative error and the
// fused add's sum_out check instead of the scaled error).
void write_summary(std::FILE* f, const std::vector<SummaryRow>& all,
                   bool variants) {
  std::vector<std::vector<std::string>> rows = {
      {"isa", variants ? "kind" : "method", variants ? "variant" : "kind",
       "x/y/w", "unit", "max", "mean", "p99.9", "exact%"}};
  if (variants) {
    rows[0].insert(rows[0].end(), {"scale rel", "sum_out"});
  } else {
    rows[0].push_back("scaled");
  }
  rows[0].insert(rows[0].end(), {"worst family", "status", "worst element"});
  std::string last;
  for (const SummaryRow& s : all) {
    if ((s.variant != "plain") != variants || (variants && !s.checked))
      continue;
    const std::string group = variants ? s.isa : s.isa + "|" + s.method;
    if (!last.empty() && group != last) rows.emplace_back();
    last = group;
    std::vector<std::string> row = {s.isa,
                                    variants ? kind_name(s.kind) : s.method,
                                    variants ? s.variant : kind_name(s.kind),
                                    dtypes_label(s.dt),
                                    unit_label(s.dt.y),
                                    format_error(s.s.max),
                                    format_error(s.s.mean),
                                    format_error(s.s.p999),
                                    format_share(s.min_exact_share)};
    const Stats& t = s.s;
    if (variants) {
      row.push_back(s.dt.y == SIMDNORM_I8 ? format_error(t.max_scale_rel)
                                          : "-");
      row.push_back(!t.fused ? "-"
                    : t.sum_mismatch + t.inplace_mismatch == 0
                        ? "exact"
                        : fmt::format("{}+{} differ", t.sum_mismatch,
                                      t.inplace_mismatch));
    } else {
      row.push_back(Is16(s.dt.y) ? format_error(t.max_scaled) : "-");
    }
    row.insert(row.end(),
               {s.worst_family, status(s.checked, s.exceeds, s.failing),
                format_worst(t.worst)});
    rows.push_back(row);
  }
  if (last.empty()) return;
  print_table(f, variants ? kVariantsTitle : kSummaryTitle,
              variants ? "lllllrrrrrrlll" : "lllllrrrrrlll", rows);
}

// Per family: the worst over ISAs, kinds and dtypes of each method.
void write_families(std::FILE* f, const Report& r) {
  struct Cell {
    bool any = false;
    double max = 0, share = 1;
  };
  // [family][method][y: f32, bf16, f16]
  std::map<std::string, std::map<std::string, std::array<Cell, 3>>> cells;
  std::map<std::string, float> eps_of;
  std::map<std::string, double> excluded;  // largest excluded share
  bool any_f16 = false;
  for (const ResultRow& row : r.out.rows) {
    if (row.variant != "plain") continue;
    eps_of[row.family] = row.eps;
    const double all = static_cast<double>(row.s.count + row.s.excluded);
    double& e = excluded[row.family];
    if (all > 0) e = std::max(e, static_cast<double>(row.s.excluded) / all);
    if (row.s.count == 0) continue;
    const int y =
        row.dt.y == SIMDNORM_BF16 ? 1 : (row.dt.y == SIMDNORM_F16 ? 2 : 0);
    Cell& c = cells[row.family][row.method][y];
    c.any = true;
    c.max = std::max(c.max, row.s.max);
    c.share = std::min(c.share, row.s.exact_share());
    any_f16 = any_f16 || (y == 2 && row.method == "simdnorm");
  }
  std::vector<std::vector<std::string>> rows = {
      {"family", "eps", "excl%", "simdnorm", "onepass-f32", "twopass-f32",
       "eps-outside", "simdnorm bf16", "trunc-bf16"}};
  if (any_f16) rows[0].push_back("simdnorm f16");
  for (const std::string& fam : r.cfg.all_families()) {
    if (!eps_of.count(fam)) continue;
    std::vector<std::string> row = {
        fam, shortest_float(eps_of[fam]),
        fmt::format("{:.1f}", 100.0 * excluded[fam])};
    for (const char* m :
         {"simdnorm", "onepass-f32", "twopass-f32", "eps-outside"}) {
      const Cell& c = cells[fam][m][0];
      row.push_back(c.any ? format_error(c.max) : "-");
    }
    auto half_cell = [&](const char* m, int y) {
      const Cell& c = cells[fam][m][y];
      row.push_back(c.any ? format_share(c.share) + " / " + format_error(c.max)
                          : "-");
    };
    half_cell("simdnorm", 1);
    half_cell("trunc-bf16", 1);
    if (any_f16) half_cell("simdnorm", 2);
    rows.push_back(row);
  }
  print_table(f, kFamiliesTitle, "lrrrrrrrrr", rows);
}

void write_detail(std::FILE* f, const RunOutput& out) {
  std::vector<std::vector<std::string>> rows = {
      {"isa", "method", "kind", "variant", "x/y/w", "family", "eps", "count",
       "excl", "max", "mean", "p99.9", "exact%", "scaled", "status",
       "worst element"}};
  for (const ResultRow& r : out.rows) {
    rows.push_back({r.isa, r.method, kind_name(r.kind), r.variant,
                    dtypes_label(r.dt), r.family, shortest_float(r.eps),
                    std::to_string(r.s.count), std::to_string(r.s.excluded),
                    format_error(r.s.max), format_error(r.s.mean),
                    format_error(r.s.p999), format_share(r.s.exact_share()),
                    Is16(r.dt.y) ? format_error(r.s.max_scaled) : "-",
                    status(r.checked, r.exceeds || !r.pass(), 0),
                    format_worst(r.s.worst)});
  }
  print_table(f,
              "Detail per ISA or shortcut, kind, dtypes and family (all hidden "
              "sizes together)\n",
              "lllllllrrrrrrrll", rows);
}

}  // namespace

std::string format_error(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  if (v >= 1e5 || v < 1e-3) return fmt::format("{:.2e}", v);
  if (v >= 1000) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

std::vector<std::string> failure_lines(const RunOutput& out) {
  std::vector<std::string> lines;
  for (const ResultRow& r : out.rows) {
    for (const std::string& v : r.violations) {
      lines.push_back(row_name(r.isa, r.kind, r.variant, r.dt, r.family) +
                      ": " + v);
    }
  }
  return lines;
}

void write_table(std::FILE* f, const Report& r) {
  write_header(f, r);
  const std::vector<SummaryRow> sum = summarize(r.out.rows);
  write_summary(f, sum, false);
  write_summary(f, sum, true);
  write_families(f, r);
  if (r.cfg.detail) write_detail(f, r.out);
  size_t lib_rows = 0, failing = 0;
  // Cross-ISA: every ISA's bf16/f16 outputs equal to the correctly rounded
  // reference means the same bytes on every ISA.
  std::vector<std::string> isas;
  uint64_t half_out = 0, half_exact = 0;
  for (const ResultRow& row : r.out.rows) {
    if (!row.checked) continue;
    ++lib_rows;
    failing += !row.pass();
    if (!Is16(row.dt.y)) continue;
    isas.push_back(row.isa);
    half_out += row.s.count;
    half_exact += row.s.exact;
  }
  isas = unique(isas);
  if (half_out > 0) {
    fmt::print(f,
               "bf16/f16 outputs correctly rounded: {} of {} on {} ISA(s) "
               "({}); {}byte-identical across them\n",
               half_exact, half_out, isas.size(), fmt::join(isas, ", "),
               half_exact == half_out ? "" : "NOT ");
  }
  for (const std::string& e : r.out.errors) fmt::print(f, "ERROR: {}\n", e);
  for (const std::string& l : failure_lines(r.out))
    fmt::print(f, "FAIL: {}\n", l);
  if (failing == 0 && r.out.errors.empty()) {
    fmt::print(f, "PASS: all {} library rows within the bounds", lib_rows);
  } else {
    fmt::print(f, "FAIL: {} of {} library rows exceed a bound, {} errors",
               failing, lib_rows, r.out.errors.size());
  }
  fmt::print(f, " ({:.1f} s)\n", r.out.seconds);
}

}  // namespace simdnorm_accuracy
