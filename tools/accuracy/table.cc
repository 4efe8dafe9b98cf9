#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "report.h"

namespace simdnorm_accuracy {
namespace {

// Columns sized to their widest cell; numbers right-aligned.
class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::string right)
      : right_(std::move(right)) {
    rows_.push_back(std::move(header));
  }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void separator() { rows_.emplace_back(); }
  void print(std::ostream& os) const {
    std::vector<size_t> width(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        width[i] = std::max(width[i], r[i].size());
      }
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        const size_t w = i + 1 == r.size() ? 0 : width[i];  // no trailing
        line += i ? "  " : "";
        line += i < right_.size() && right_[i] == 'r'
                    ? fmt::format("{:>{}}", r[i], width[i])
                    : fmt::format("{:<{}}", r[i], w);
      }
      os << line << "\n";
      if (&r == &rows_[0]) {
        size_t total = 0;
        for (size_t w : width) total += w + 2;
        os << std::string(total - 2, '-') << "\n";
      }
    }
  }

 private:
  std::string right_;  // per column: 'r' right-aligned, anything else left
  std::vector<std::vector<std::string>> rows_;
};

std::string status_of(bool checked, bool exceeds) {
  if (checked) return exceeds ? "FAIL" : "ok";
  return exceeds ? "(exceeds)" : "(within)";
}

bool row_exceeds(const ResultRow& r) {
  ResultRow copy = r;
  copy.checked = true;
  copy.violations.clear();
  check_bounds(&copy);
  return !copy.violations.empty();
}

void write_header(std::ostream& os, const ReportMeta& meta) {
  const std::string cols = fmt::format("{}", fmt::join(meta.cols, ","));
  const std::string eps = fmt::format("{:g}", static_cast<double>(meta.eps));
  os << "simdnorm-accuracy: " << meta.command << "\n";
  if (meta.input_path.empty()) {
    os << "  seed " << meta.seed << ", " << meta.rows
       << " rows per family, cols " << cols << ", eps " << eps
       << " (0 for *-eps0 families)\n";
  } else {
    os << "  input " << meta.input_path << " (" << dtype_name(meta.input_dtype)
       << ", " << meta.input_rows << " rows x " << cols << " cols), eps " << eps
       << ", weights from seed " << meta.seed << "\n";
  }
  os << "  ISAs " << fmt::format("{}", fmt::join(meta.isas, ", "))
     << "; dtypes are x/y/w (input/output/"
     << "gamma,beta)\n";
  os << "  fp32 out: scaled ulps = |got - want| / (2^-23 (|gamma| "
        "max(1,|xhat|) + "
        "|beta|)), bound <= 32\n";
  os << "  bf16/f16 out: ulps of the format from the correctly rounded "
        "result (the exact one rounded once), bound <= 1;\n"
        "  exact% = share equal to it, bound 100 (so every ISA writes the "
        "same bytes)\n";
  os << "  i8 out: q = |q - q64|, bound <= 1; scale rel = |scale - "
        "scale64| / scale64, bound <= 1e-06\n";
  os << "  information only: exact% for fp32 out (share equal to the truth "
        "rounded once to fp32); scaled for bf16/f16 out\n"
        "  (largest error in units of 2^-7 or 2^-10 (|gamma| max(1,|xhat|) + "
        "|beta|); correct rounding gives <= 0.5)\n";
  if (meta.variants.size() > 1 ||
      (meta.variants.size() == 1 && meta.variants[0] != "plain")) {
    os << "  variants:";
    for (const Plan& p : meta.plans) {
      os << fmt::format("\n    {}: {} dtype combinations, {} families, cols {}",
                        p.variant.name(), p.dtypes.size(), p.families.size(),
                        fmt::join(p.cols, ","));
    }
    os << "\n  fused-add: sum_out must equal h = x + residual rounded once to "
          "x (bit-exact), and the in-place form\n"
          "  (sum_out = residual, y = x) the out-of-place call; hf-round: "
          "either rounding of xhat to x is right where\n"
          "  the float64 xhat lies within the fp32 bound of a rounding "
          "boundary (the error is to the nearer one)\n";
  }
  os << "\n";
}

void write_summary(std::ostream& os, const std::vector<SummaryRow>& all) {
  std::vector<SummaryRow> sum;
  for (const SummaryRow& s : all) {
    if (s.variant == "plain") sum.push_back(s);
  }
  if (sum.empty()) return;
  os << "Summary per ISA, kind and dtypes: max = worst over families (worst "
        "family: where it occurs), mean over all\n"
        "elements, p99.9 = the largest family p99.9, exact% = the lowest "
        "family "
        "share, scaled = the largest (bf16/f16 out)\n";
  TextTable t({"isa", "method", "kind", "x/y/w", "unit", "max", "mean", "p99.9",
               "exact%", "scaled", "worst family", "status", "worst element"},
              "lllllrrrrrlll");
  std::string last;
  for (const SummaryRow& s : sum) {
    const std::string group = s.isa + "|" + s.method;
    if (!last.empty() && group != last) t.separator();
    last = group;
    std::string status = status_of(s.checked, summary_exceeds(s));
    if (s.checked && s.failing) {
      status = "FAIL(" + std::to_string(s.failing) + ")";
    }
    t.add({s.isa, s.method, kind_name(s.kind), dtypes_label(s.dt),
           unit_label(s.dt.y), format_error(s.max), format_error(s.mean),
           format_error(s.p999), format_share(s.min_exact_share),
           s.half_out() ? format_error(s.max_scaled) : "-", s.worst_family,
           status, format_worst(s.worst)});
  }
  t.print(os);
  os << "\n";
}

// The engine variants, library rows only: the same columns, plus the int8
// scales' largest relative error and the fused add's sum_out check.
void write_variants(std::ostream& os, const std::vector<SummaryRow>& all) {
  std::vector<SummaryRow> sum;
  for (const SummaryRow& s : all) {
    if (s.variant != "plain" && s.checked) sum.push_back(s);
  }
  if (sum.empty()) return;
  os << "Engine variants per ISA, kind and dtypes (as above; scale rel = "
        "the largest relative error of an int8 scale,\n"
        "sum_out = elements of sum_out not bit-exact and of the in-place "
        "form differing from the out-of-place call)\n";
  TextTable t({"isa", "kind", "variant", "x/y/w", "unit", "max", "mean",
               "p99.9", "exact%", "scale rel", "sum_out", "worst family",
               "status", "worst element"},
              "lllllrrrrrrlll");
  std::string last;
  for (const SummaryRow& s : sum) {
    if (!last.empty() && s.isa != last) t.separator();
    last = s.isa;
    std::string status = summary_exceeds(s) ? "FAIL" : "ok";
    if (s.failing) status = "FAIL(" + std::to_string(s.failing) + ")";
    std::string sum_out = "-";
    if (s.fused) {
      sum_out = s.sum_mismatch + s.inplace_mismatch == 0
                    ? "exact"
                    : std::to_string(s.sum_mismatch) + "+" +
                          std::to_string(s.inplace_mismatch) + " differ";
    }
    t.add({s.isa, kind_name(s.kind), s.variant, dtypes_label(s.dt),
           unit_label(s.dt.y), format_error(s.max), format_error(s.mean),
           format_error(s.p999), format_share(s.min_exact_share),
           s.dt.y == SIMDNORM_I8 ? format_error(s.max_scale_rel) : "-", sum_out,
           s.worst_family, status, format_worst(s.worst)});
  }
  t.print(os);
  os << "\n";
}

// Per family: the worst over ISAs, kinds and dtypes of each method.
void write_families(std::ostream& os, const RunOutput& out,
                    const ReportMeta& meta) {
  struct Cell {
    bool any = false;
    double max = 0, share = 1;
  };
  const std::vector<std::string> methods = {
      "simdnorm", "onepass-f32", "twopass-f32", "eps-outside", "trunc-bf16"};
  // [family][method][y: f32, bf16, f16]
  std::map<std::string, std::map<std::string, std::array<Cell, 3>>> cells;
  std::map<std::string, float> eps_of;
  std::map<std::string, double> excluded;  // largest excluded share
  for (const ResultRow& r : out.rows) {
    if (r.variant != "plain") continue;
    eps_of[r.family] = r.eps;
    const double all = static_cast<double>(r.s.count + r.s.excluded);
    double& e = excluded[r.family];
    if (all > 0) e = std::max(e, static_cast<double>(r.s.excluded) / all);
    if (r.s.count == 0) continue;
    Cell& c =
        cells[r.family][r.method]
             [r.dt.y == SIMDNORM_BF16 ? 1 : (r.dt.y == SIMDNORM_F16 ? 2 : 0)];
    c.any = true;
    c.max = std::max(c.max, r.s.max);
    c.share = std::min(c.share, r.s.exact_share());
  }
  os << "Per family (plain calls): worst over ISAs, kinds and dtypes (fp32 "
        "out: max scaled ulps; bf16/f16 out: lowest exact% / max ulps;\n"
        "excl% = largest share of elements excluded because the float64 "
        "truth is not finite)\n";
  bool any_f16 = false;
  for (const auto& [fam, by_method] : cells) {
    auto it = by_method.find("simdnorm");
    if (it != by_method.end() && it->second[2].any) any_f16 = true;
  }
  std::vector<std::string> header = {
      "family",      "eps",         "excl%",         "simdnorm",  "onepass-f32",
      "twopass-f32", "eps-outside", "simdnorm bf16", "trunc-bf16"};
  if (any_f16) header.push_back("simdnorm f16");
  TextTable t(header, "lrrrrrrrrr");
  for (const std::string& fam : meta.families) {
    if (!eps_of.count(fam)) continue;
    auto& cell = cells[fam];
    std::vector<std::string> row;
    row.push_back(fam);
    row.push_back(shortest_float(eps_of[fam]));
    row.push_back(fmt::format("{:.1f}", 100.0 * excluded[fam]));
    for (size_t m = 0; m < 4; ++m) {
      const Cell& c = cell[methods[m]][0];
      row.push_back(c.any ? format_error(c.max) : "-");
    }
    auto half_cell = [&](const char* m, int y) {
      const Cell& c = cell[m][y];
      row.push_back(c.any ? format_share(c.share) + " / " + format_error(c.max)
                          : "-");
    };
    half_cell("simdnorm", 1);
    half_cell("trunc-bf16", 1);
    if (any_f16) half_cell("simdnorm", 2);
    t.add(row);
  }
  t.print(os);
  os << "\n";
}

void write_detail(std::ostream& os, const RunOutput& out) {
  os << "Detail per ISA or shortcut, kind, dtypes and family (all hidden sizes "
        "together)\n";
  TextTable t({"isa", "method", "kind", "variant", "x/y/w", "family", "eps",
               "count", "excl", "max", "mean", "p99.9", "exact%", "scaled",
               "status", "worst element"},
              "lllllllrrrrrrrll");
  for (const ResultRow& r : out.rows) {
    const std::string eps = shortest_float(r.eps);
    std::string status = status_of(r.checked, row_exceeds(r));
    if (r.checked && !r.pass()) status = "FAIL";
    t.add({r.isa, r.method, kind_name(r.kind), r.variant, dtypes_label(r.dt),
           r.family, eps, std::to_string(r.s.count),
           std::to_string(r.s.excluded), format_error(r.s.max),
           format_error(r.s.mean), format_error(r.s.p999),
           format_share(r.s.exact_share()),
           r.half_out() ? format_error(r.s.max_scaled) : "-", status,
           format_worst(r.s.worst)});
  }
  t.print(os);
  os << "\n";
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

std::string format_share(double s) { return fmt::format("{:.3f}", 100.0 * s); }

std::string format_worst(const Worst& w) {
  if (!w.valid) return "-";
  return fmt::format("cols {} row {} col {}: x={:.7g} got={:.7g} want={:.9g}",
                     w.cols, w.row, w.col, w.input, w.got, w.want);
}

std::vector<std::string> failure_lines(const RunOutput& out) {
  std::vector<std::string> lines;
  for (const ResultRow& r : out.rows) {
    if (!r.checked || r.pass()) continue;
    for (const std::string& v : r.violations) {
      lines.push_back(r.isa + " " + kind_name(r.kind) + " " +
                      (r.variant == "plain" ? "" : r.variant + " ") +
                      dtypes_label(r.dt) + " " + r.family + ": " + v);
    }
  }
  return lines;
}

void write_table(std::ostream& os, const RunOutput& out, const ReportMeta& meta,
                 bool detail) {
  write_header(os, meta);
  const std::vector<SummaryRow> sum = summarize(out.rows);
  write_summary(os, sum);
  write_variants(os, sum);
  write_families(os, out, meta);
  if (detail) write_detail(os, out);
  size_t lib_rows = 0, failing = 0;
  for (const ResultRow& r : out.rows) {
    if (!r.checked) continue;
    ++lib_rows;
    if (!r.pass()) ++failing;
  }
  // Cross-ISA: every ISA's bf16/f16 outputs equal to the correctly rounded
  // reference means the same bytes on every ISA.
  std::vector<std::string> isas;
  uint64_t half_out = 0, half_exact = 0;
  for (const ResultRow& r : out.rows) {
    if (!r.checked || !r.half_out()) continue;
    if (std::find(isas.begin(), isas.end(), r.isa) == isas.end()) {
      isas.push_back(r.isa);
    }
    half_out += r.s.count;
    half_exact += r.s.exact;
  }
  if (half_out > 0) {
    os << fmt::format(
        "bf16/f16 outputs correctly rounded: {} of {} on {} ISA(s) ({}); "
        "{}\n",
        half_exact, half_out, isas.size(), fmt::join(isas, ", "),
        half_exact == half_out ? "byte-identical across them"
                               : "NOT byte-identical across them");
  }
  const std::vector<std::string> fails = failure_lines(out);
  for (const std::string& e : out.errors) os << "ERROR: " << e << "\n";
  for (const std::string& f : fails) os << "FAIL: " << f << "\n";
  if (failing == 0 && out.errors.empty()) {
    os << "PASS: all " << lib_rows << " library rows within the bounds";
  } else {
    os << "FAIL: " << failing << " of " << lib_rows
       << " library rows exceed a bound, " << out.errors.size() << " errors";
  }
  os << fmt::format(" ({:.1f} s)\n", meta.seconds);
}

}  // namespace simdnorm_accuracy
