#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

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

// Columns sized to their widest cell; numbers right-aligned; a line of
// dashes under the header, an empty row for a blank line.
class TextTable {
 public:
  // align: per column, 'r' right-aligned, anything else left.
  TextTable(std::vector<std::string> header, std::string align)
      : align_(std::move(align)), rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE* f) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        width[i] = std::max(width[i], r[i].size());
      }
    }
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        const size_t w = i + 1 == r.size() ? 0 : width[i];  // no trailing
        const std::string& c = r[i];
        if (align_[i] == 'r') {
          fmt::print(f, "{}{:>{}}", i ? "  " : "", c, width[i]);
        } else {
          fmt::print(f, "{}{:<{}}", i ? "  " : "", c, w);
        }
      }
      fmt::print(f, "\n");
      if (&r == &rows_[0]) {
        size_t total = 0;
        for (size_t w : width) total += w + 2;
        fmt::print(f, "{}\n", std::string(total - 2, '-'));
      }
    }
    fmt::print(f, "\n");
  }

 private:
  std::string align_;
  std::vector<std::vector<std::string>> rows_;
};

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
  const std::vector<size_t> all_cols = cfg.all_cols();
  const std::string cols = fmt::format("{}", fmt::join(all_cols, ","));
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

void write_summary(std::FILE* f, const std::vector<SummaryRow>& all) {
  TextTable t({"isa", "method", "kind", "x/y/w", "unit", "max", "mean", "p99.9",
               "exact%", "scaled", "worst family", "status", "worst element"},
              "lllllrrrrrlll");
  std::string last;
  for (const SummaryRow& s : all) {
    if (s.variant != "plain") continue;
    if (!last.empty() && s.isa + "|" + s.method != last) t.add({});
    last = s.isa + "|" + s.method;
    t.add({s.isa, s.method, kind_name(s.kind), dtypes_label(s.dt),
           unit_label(s.dt.y), format_error(s.s.max), format_error(s.s.mean),
           format_error(s.s.p999), format_share(s.min_exact_share),
           is_half(s.dt.y) ? format_error(s.s.max_scaled) : "-", s.worst_family,
           status(s.checked, s.exceeds, s.failing), format_worst(s.s.worst)});
  }
  if (last.empty()) return;
  fmt::print(f, "{}", kSummaryTitle);
  t.print(f);
}

// The engine variants, library rows only: the same columns, plus the int8
// scales' largest relative error and the fused add's sum_out check.
void write_variants(std::FILE* f, const std::vector<SummaryRow>& all) {
  TextTable t({"isa", "kind", "variant", "x/y/w", "unit", "max", "mean",
               "p99.9", "exact%", "scale rel", "sum_out", "worst family",
               "status", "worst element"},
              "lllllrrrrrrlll");
  std::string last;
  for (const SummaryRow& s : all) {
    if (s.variant == "plain" || !s.checked) continue;
    if (!last.empty() && s.isa != last) t.add({});
    last = s.isa;
    std::string sum_out = "-";
    if (s.s.fused) {
      sum_out = s.s.sum_mismatch + s.s.inplace_mismatch == 0
                    ? "exact"
                    : fmt::format("{}+{} differ", s.s.sum_mismatch,
                                  s.s.inplace_mismatch);
    }
    t.add({s.isa, kind_name(s.kind), s.variant, dtypes_label(s.dt),
           unit_label(s.dt.y), format_error(s.s.max), format_error(s.s.mean),
           format_error(s.s.p999), format_share(s.min_exact_share),
           s.dt.y == SIMDNORM_I8 ? format_error(s.s.max_scale_rel) : "-",
           sum_out, s.worst_family, status(true, s.exceeds, s.failing),
           format_worst(s.s.worst)});
  }
  if (last.empty()) return;
  fmt::print(f, "{}", kVariantsTitle);
  t.print(f);
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
  fmt::print(f, "{}", kFamiliesTitle);
  std::vector<std::string> header = {
      "family",      "eps",         "excl%",         "simdnorm",  "onepass-f32",
      "twopass-f32", "eps-outside", "simdnorm bf16", "trunc-bf16"};
  if (any_f16) header.push_back("simdnorm f16");
  TextTable t(header, "lrrrrrrrrr");
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
    t.add(row);
  }
  t.print(f);
}

void write_detail(std::FILE* f, const RunOutput& out) {
  fmt::print(f,
             "Detail per ISA or shortcut, kind, dtypes and family (all hidden "
             "sizes together)\n");
  TextTable t({"isa", "method", "kind", "variant", "x/y/w", "family", "eps",
               "count", "excl", "max", "mean", "p99.9", "exact%", "scaled",
               "status", "worst element"},
              "lllllllrrrrrrrll");
  for (const ResultRow& r : out.rows) {
    t.add({r.isa, r.method, kind_name(r.kind), r.variant, dtypes_label(r.dt),
           r.family, shortest_float(r.eps), std::to_string(r.s.count),
           std::to_string(r.s.excluded), format_error(r.s.max),
           format_error(r.s.mean), format_error(r.s.p999),
           format_share(r.s.exact_share()),
           is_half(r.dt.y) ? format_error(r.s.max_scaled) : "-",
           status(r.checked, r.exceeds || !r.pass(), 0),
           format_worst(r.s.worst)});
  }
  t.print(f);
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
  write_summary(f, sum);
  write_variants(f, sum);
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
    if (!is_half(row.dt.y)) continue;
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
