#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
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

namespace {

std::string worst_text(const Worst& w) {
  if (!w.valid) return "";
  return fmt::format("cols {} row {} col {}: x={:.9g} got={:.9g} want={:.17g}",
                     w.cols, w.row, w.col, w.input, w.got, w.want);
}

}  // namespace

void check_bounds(ResultRow* row) {
  const Stats& s = row->s;
  const simdnorm_dtype y = row->dt.y;
  std::vector<std::string> v;
  if (Is16(y)) {
    const char* name = dtype_name(y);
    if (s.exact_share() < kHalfMinExactShare) {
      v.push_back(fmt::format(
          "only {:.4f}% of elements correctly rounded (bound {:.1f}%)",
          100.0 * s.exact_share(), 100.0 * kHalfMinExactShare));
    }
    if (s.over > 0) {
      v.push_back(fmt::format(
          "{} of {} elements beyond {:g} {} ulp and outside the fp32 bound's "
          "window, max {:g} at {} ({:.3g} scaled {} ulps; largest in the row "
          "group {:.3g})",
          s.over, s.count, kHalfMaxUlps, name, s.max, worst_text(s.worst),
          s.worst.scaled, name, s.max_scaled));
    }
  } else if (y == SIMDNORM_I8) {
    if (s.over > 0) {
      v.push_back(fmt::format(
          "{} of {} elements with |q - q64| beyond {:g}, max {:g} at {}",
          s.over, s.count, kI8MaxQDiff, s.max, worst_text(s.worst)));
    }
    if (s.scale_over > 0) {
      const ScaleWorst& w = s.scale_worst;
      v.push_back(fmt::format(
          "{} of {} group scales beyond {:g} relative of the float64 scale, "
          "max {:.3g} at cols {} row {} group {}: got {:.9g} want {:.17g}",
          s.scale_over, s.groups, kI8MaxScaleRelErr, s.max_scale_rel, w.cols,
          w.row, w.group, w.got, w.want));
    }
  } else if (s.over > 0) {
    v.push_back(fmt::format(
        "{} of {} elements beyond {:g} scaled ulps, max "
        "{:g} at {}",
        s.over, s.count, kF32MaxScaledUlps, s.max, worst_text(s.worst)));
  }
  if (s.sum_mismatch > 0) {
    const SumWorst& w = s.sum_worst;
    const int digits = row->dt.x == SIMDNORM_F32 ? 8 : 4;
    v.push_back(fmt::format(
        "sum_out differs from h = x + residual rounded once to {} at {} of "
        "{} "
        "elements; first at cols {} row {} col {}: got 0x{:0{}x} want "
        "0x{:0{}x}",
        dtype_name(row->dt.x), s.sum_mismatch, s.sum_count, w.cols, w.row,
        w.col, w.got_bits, digits, w.want_bits, digits));
  }
  if (s.inplace_mismatch > 0) {
    v.push_back(fmt::format(
        "the in-place form (sum_out = residual, y = x where the types allow) "
        "differs from the out-of-place call at {} elements of y, sum_out and "
        "y_scale",
        s.inplace_mismatch));
  }
  row->exceeds = !v.empty();
  if (row->checked) row->violations = v;
}

std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows) {
  std::vector<SummaryRow> out;
  std::vector<double> sums, worst_share;
  for (const ResultRow& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const SummaryRow& s) {
      return s.isa == r.isa && s.method == r.method && s.kind == r.kind &&
             s.variant == r.variant && s.dt == r.dt;
    });
    if (it == out.end()) {
      it = out.emplace(out.end());
      static_cast<RowKey&>(*it) = r;
      it->s.max = -1;
      sums.push_back(0);
      worst_share.push_back(1);
    }
    SummaryRow& s = *it;
    const size_t k = static_cast<size_t>(it - out.begin());
    ++s.families;
    s.failing += !r.pass();
    s.exceeds = s.exceeds || r.exceeds;
    s.s.count += r.s.count;
    s.s.excluded += r.s.excluded;
    s.s.over += r.s.over;
    s.s.groups += r.s.groups;
    s.s.scale_over += r.s.scale_over;
    s.s.max_scale_rel = std::max(s.s.max_scale_rel, r.s.max_scale_rel);
    s.s.fused = s.s.fused || r.s.fused;
    s.s.sum_count += r.s.sum_count;
    s.s.sum_mismatch += r.s.sum_mismatch;
    s.s.inplace_mismatch += r.s.inplace_mismatch;
    sums[k] += r.s.mean * static_cast<double>(r.s.count);
    s.s.p999 = std::max(s.s.p999, r.s.p999);
    if (!(r.s.max_scaled <= s.s.max_scaled)) s.s.max_scaled = r.s.max_scaled;
    if (r.s.count == 0) continue;
    const double share = r.s.exact_share();
    // The family holding the largest error; on ties the lowest exact share.
    if (r.s.max > s.s.max || (r.s.max == s.s.max && share < worst_share[k]) ||
        s.worst_family.empty()) {
      s.worst_family = r.family;
      s.s.worst = r.s.worst;
      worst_share[k] = share;
    }
    s.min_exact_share = std::min(s.min_exact_share, share);
    s.s.max = std::max(s.s.max, r.s.max);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].s.max = std::max(out[i].s.max, 0.0);
    out[i].s.mean = out[i].s.count ? sums[i] / out[i].s.count : 0;
  }
  return out;
}

std::string unit_name(simdnorm_dtype y) {
  return y == SIMDNORM_I8
             ? "int8_q"
             : (Is16(y) ? std::string(dtype_name(y)) + "_ulp" : "scaled_ulp");
}

std::string unit_label(simdnorm_dtype y) {
  return y == SIMDNORM_I8 ? "q" : (Is16(y) ? dtype_name(y) : "scaled");
}

std::string dtypes_label(const Dtypes& d) {
  return fmt::format("{}/{}/{}", dtype_name(d.x), dtype_name(d.y),
                     dtype_name(d.param));
}

std::string shortest_float(float v) {
  std::string s;
  for (int digits = 1; digits <= 9; ++digits) {
    s = fmt::format("{:.{}g}", static_cast<double>(v), digits);
    if (std::strtof(s.c_str(), nullptr) == v) break;
  }
  return s;
}

}  // namespace simdnorm_accuracy
