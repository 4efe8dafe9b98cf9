// The outputs: the text report (tables), JSON (stable keys, numbers that
// are not finite written as null), CSV (a line per result row, the
// --detail rows) and the SVG chart; the bounds' check of a row.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>

#include "accuracy.h"
#include "common/output.h"

namespace simdnorm_accuracy {

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

namespace {

// Where and what the worst element is, with `digits` significant digits
// (`want_digits` for want); `none` without one.
std::string worst_text(const Worst& w, int digits = 9, int want_digits = 17,
                       const char* none = "") {
  if (!w.valid) return none;
  return fmt::format(
      "cols {} row {} col {}: x={:.{}g} got={:.{}g} want={:.{}g}", w.cols,
      w.row, w.col, w.input, digits, w.got, digits, w.want, want_digits);
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

namespace {

// Rows of one RowKey merged over families: counts summed, the largest
// errors and p99.9, the mean over all elements, the lowest exact share.
struct SummaryRow : RowKey {
  size_t families = 0, failing = 0;
  Stats s;
  double min_exact_share = 1;
  std::string worst_family;         // the largest max (ties: the lowest share)
  double sum = 0, worst_share = 1;  // of the errors; of the worst family
};

// Groups consecutive rows of the same RowKey, keeping their order of first
// appearance.
std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows) {
  std::vector<SummaryRow> out;
  for (const ResultRow& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const SummaryRow& s) {
      return s.isa == r.isa && s.method == r.method && s.kind == r.kind &&
             s.variant == r.variant && s.dt == r.dt;
    });
    if (it == out.end()) {
      it = out.emplace(out.end());
      static_cast<RowKey&>(*it) = r;
      it->s.max = -1;
    }
    SummaryRow& s = *it;
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
    s.sum += r.s.mean * static_cast<double>(r.s.count);
    s.s.p999 = std::max(s.s.p999, r.s.p999);
    if (!(r.s.max_scaled <= s.s.max_scaled)) s.s.max_scaled = r.s.max_scaled;
    if (r.s.count == 0) continue;
    const double share = r.s.exact_share();
    // The family holding the largest error; on ties the lowest exact share.
    if (r.s.max > s.s.max || (r.s.max == s.s.max && share < s.worst_share) ||
        s.worst_family.empty()) {
      s.worst_family = r.family;
      s.s.worst = r.s.worst;
      s.worst_share = share;
    }
    s.min_exact_share = std::min(s.min_exact_share, share);
    s.s.max = std::max(s.s.max, r.s.max);
  }
  for (SummaryRow& s : out) {
    s.s.max = std::max(s.s.max, 0.0);
    s.s.mean = s.s.count ? s.sum / s.s.count : 0;
  }
  return out;
}

// "scaled_ulp", "bf16_ulp", "f16_ulp" or "int8_q", by y's dtype.
std::string unit_name(simdnorm_dtype y) {
  return y == SIMDNORM_I8
             ? "int8_q"
             : (Is16(y) ? std::string(dtype_name(y)) + "_ulp" : "scaled_ulp");
}

// The short form for the text table: "scaled", "bf16", "f16", "q".
std::string unit_label(simdnorm_dtype y) {
  return y == SIMDNORM_I8 ? "q" : (Is16(y) ? dtype_name(y) : "scaled");
}

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
                worst_text(t.worst, 7, 9, "-")});
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
                    worst_text(r.s.worst, 7, 9, "-")});
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

using simdnorm_tools::CsvField;
using simdnorm_tools::Json;

constexpr const char* kUnitTexts[][2] = {
    {"scaled_ulp",
     "|got - want| / (2^-23 * (|gamma| * max(1, |xhat|) + |beta|)), want and "
     "xhat from the float64 reference"},
    {"bf16_ulp",
     "distance in the ordering of bf16 values from the float64 reference "
     "rounded once to bf16"},
    {"f16_ulp",
     "distance in the ordering of f16 values from the float64 reference "
     "rounded once to f16"},
    {"int8_q",
     "|q - q64|, q64 = round-half-even(y64 / scale64), scale64 = max |y64| / "
     "127 over the group"}};

Json num(double v) { return simdnorm_tools::JsonNumber(v, 17); }
// Errors: 7 significant digits suffice.
Json num_short(double v) { return simdnorm_tools::JsonNumber(v, 7); }
Json eps_json(float eps) {
  return simdnorm_tools::JsonNumberText(shortest_float(eps));
}

template <class T, class F>
Json list(const std::vector<T>& v, F f) {
  Json a = Json::array();
  for (const T& e : v) a.push_back(f(e));
  return a;
}

Json labels(const std::vector<Dtypes>& v) { return list(v, dtypes_label); }

size_t quant_group(const std::string& variant) {
  Variant v;
  simdnorm_tools::parse_variant(variant, &v);
  return v.quant_group;
}

Json worst_json(const Worst& w) {
  if (!w.valid) return nullptr;
  return {{"error_scaled", num_short(w.scaled)},
          {"cols", w.cols},
          {"row", w.row},
          {"col", w.col},
          {"input", num(w.input)},
          {"got", num(w.got)},
          {"want", num(w.want)},
          {"xhat", num(w.xhat)}};
}

// The keys of a report and a summary row, up to the unit.
Json key_json(const RowKey& k) {
  return {{"isa", k.isa},
          {"method", k.method},
          {"kind", kind_name(k.kind)},
          {"x", dtype_name(k.dt.x)},
          {"y", dtype_name(k.dt.y)},
          {"w", dtype_name(k.dt.param)}};
}

// int8 output: the group scales (null for other outputs).
Json int8_json(const ResultRow& r) {
  if (r.dt.y != SIMDNORM_I8) return nullptr;
  const ScaleWorst& w = r.s.scale_worst;
  return {{"quant_group", quant_group(r.variant)},
          {"groups", r.s.groups},
          {"scale_over_bound", r.s.scale_over},
          {"max_scale_rel_err", num_short(r.s.max_scale_rel)},
          {"worst_scale", !w.valid ? Json()
                                   : Json{{"cols", w.cols},
                                          {"row", w.row},
                                          {"group", w.group},
                                          {"got", num(w.got)},
                                          {"want", num(w.want)}}}};
}

// The fused add's checks (null without a residual).
Json fused_json(const Stats& s) {
  if (!s.fused) return nullptr;
  const SumWorst& w = s.sum_worst;
  return {{"sum_out_count", s.sum_count},
          {"sum_out_mismatches", s.sum_mismatch},
          {"inplace_mismatches", s.inplace_mismatch},
          {"first_mismatch", !w.valid ? Json()
                                      : Json{{"cols", w.cols},
                                             {"row", w.row},
                                             {"col", w.col},
                                             {"got_bits", w.got_bits},
                                             {"want_bits", w.want_bits}}}};
}

Json result_json(const ResultRow& r) {
  const Stats& s = r.s;
  Json j = key_json(r);
  j.update(Json{{"family", r.family},
                {"eps", eps_json(r.eps)},
                {"unit", unit_name(r.dt.y)},
                {"count", s.count},
                {"excluded", s.excluded},
                {"over_bound", s.over},
                {"max", num_short(s.max)},
                {"mean", num_short(s.mean)},
                {"p999", num_short(s.p999)},
                {"max_scaled", num_short(s.max_scaled)},
                {"exact_share", num_short(s.exact_share())},
                {"checked", r.checked},
                {"pass", r.pass()},
                {"violations", r.violations},
                {"worst", worst_json(s.worst)},
                {"variant", r.variant},
                {"int8", int8_json(r)},
                {"fused_add", fused_json(s)}});
  return j;
}

Json summary_json(const SummaryRow& r) {
  const Stats& s = r.s;
  const bool i8 = r.dt.y == SIMDNORM_I8;
  Json j = key_json(r);
  j.update(Json{
      {"unit", unit_name(r.dt.y)},
      {"families", r.families},
      {"failing_families", r.failing},
      {"count", s.count},
      {"excluded", s.excluded},
      {"max", num_short(s.max)},
      {"mean", num_short(s.mean)},
      {"max_p999", num_short(s.p999)},
      {"max_scaled", num_short(s.max_scaled)},
      {"min_exact_share", num_short(r.min_exact_share)},
      {"worst_family", r.worst_family},
      {"checked", r.checked},
      {"worst", worst_json(s.worst)},
      {"variant", r.variant},
      {"max_scale_rel_err", i8 ? num_short(s.max_scale_rel) : Json()},
      {"scale_over_bound", i8 ? Json(s.scale_over) : Json()},
      {"sum_out_mismatches", s.fused ? Json(s.sum_mismatch) : Json()},
      {"inplace_mismatches", s.fused ? Json(s.inplace_mismatch) : Json()}});
  return j;
}

// CSV numbers: %.Ng, "nan" for NaN.
std::string csv_num(double v, int digits) {
  return std::isnan(v) ? "nan" : fmt::format("{:.{}g}", v, digits);
}

}  // namespace

void write_json(std::FILE* f, const Report& r) {
  const Config& cfg = r.cfg;
  Json input = nullptr;
  if (!cfg.input.empty()) {
    input = {{"path", cfg.input},
             {"dtype", dtype_name(cfg.input_dtype)},
             {"rows", cfg.user_rows}};
  }
  const Json config = {
      {"seed", cfg.seed},
      {"rows", cfg.rows},
      {"cols", cfg.all_cols()},
      {"eps", eps_json(cfg.eps)},
      {"isas", cfg.isas},
      {"kinds", list(cfg.kinds, kind_name)},
      {"dtypes", labels(cfg.all_dtypes())},
      {"families", cfg.all_families()},
      {"variants", cfg.all_variants()},
      {"plans",
       list(cfg.plans,
            [](const Plan& p) {
              return Json{
                  {"variant", p.variant.name()},
                  {"dtypes", labels(p.dtypes)},
                  {"families",
                   list(p.families, [](const Family& f) { return f.name; })},
                  {"cols", p.cols}};
            })},
      {"input", input}};
  Json units = Json::object();
  for (const auto& [name, text] : kUnitTexts) units[name] = text;
  const Json j = {{"tool", "simdnorm-accuracy"},
                  {"schema", 1},
                  {"command", r.command},
                  {"config", config},
                  {"bounds",
                   {{"f32_max_scaled_ulps", num(kF32MaxScaledUlps)},
                    {"bf16_min_exact_share", num(kHalfMinExactShare)},
                    {"bf16_max_ulps", num(kHalfMaxUlps)},
                    {"f16_min_exact_share", num(kHalfMinExactShare)},
                    {"f16_max_ulps", num(kHalfMaxUlps)},
                    {"int8_max_scale_rel_err", num(kI8MaxScaleRelErr)},
                    {"int8_max_q_diff", num(kI8MaxQDiff)}}},
                  {"units", units},
                  {"seconds", num_short(r.out.seconds)},
                  {"results", list(r.out.rows, result_json)},
                  {"summary", list(summarize(r.out.rows), summary_json)},
                  {"errors", r.out.errors},
                  {"failures", failure_lines(r.out)},
                  {"pass", r.out.pass()}};
  fmt::print(f, "{}", simdnorm_tools::JsonDump(j));
}

void write_csv(std::FILE* f, const Report& r) {
  fmt::print(f,
             "isa,method,kind,x,y,w,family,eps,unit,count,excluded,over_bound,"
             "max,mean,p999,max_scaled,exact_share,checked,pass,worst_cols,"
             "worst_row,worst_col,worst_input,worst_got,worst_want,worst_xhat,"
             "violations,variant,quant_group,max_scale_rel_err,"
             "scale_over_bound,sum_out_mismatches,inplace_mismatches\n");
  for (const ResultRow& row : r.out.rows) {
    const Stats& s = row.s;
    const Worst& w = s.worst;
    const std::string worst =
        w.valid ? fmt::format("{},{},{},{},{},{},{}", w.cols, w.row, w.col,
                              csv_num(w.input, 9), csv_num(w.got, 9),
                              csv_num(w.want, 17), csv_num(w.xhat, 17))
                : ",,,,,,";
    const std::string int8 =
        row.dt.y == SIMDNORM_I8
            ? fmt::format("{},{},{}", quant_group(row.variant),
                          csv_num(s.max_scale_rel, 7), s.scale_over)
            : ",,";
    const std::string fused =
        s.fused ? fmt::format("{},{}", s.sum_mismatch, s.inplace_mismatch)
                : ",";
    fmt::print(f,
               "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
               "{},{},{}\n",
               CsvField(row.isa), CsvField(row.method), kind_name(row.kind),
               dtype_name(row.dt.x), dtype_name(row.dt.y),
               dtype_name(row.dt.param), CsvField(row.family),
               shortest_float(row.eps), unit_name(row.dt.y), s.count,
               s.excluded, s.over, csv_num(s.max, 7), csv_num(s.mean, 7),
               csv_num(s.p999, 7), csv_num(s.max_scaled, 7),
               csv_num(s.exact_share(), 7), row.checked, row.pass(), worst,
               CsvField(fmt::format("{}", fmt::join(row.violations, "; "))),
               CsvField(row.variant), int8, fused);
  }
}

// A handwritten SVG chart: per family, one horizontal bar per ISA and
// shortcut, on log scales. Left panel: fp32 output, max scaled ulps. Right
// panel: bf16 and f16 output, share of elements not equal to the
// once-rounded truth. Each bar is the worst over kinds and dtype
// combinations of the plain calls (the engine variants are in the tables).
namespace {

constexpr const char* kIsaColors[] = {"#1f4e9c", "#2f7fd0", "#5aaee8",
                                      "#2ca02c", "#8fd18f", "#6a51a3",
                                      "#9e9ac8", "#555555"};
constexpr const char* kShortcutColors[] = {"#d62728", "#ff7f0e", "#e377c2",
                                           "#bcbd22"};

constexpr const char* kHead = R"(<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{0:g}" height="{1:g}" viewBox="0 0 {0:g} {1:g}" font-family="sans-serif">
<style>.h{{font-size:13px;font-weight:bold}}.t{{font-size:16px;font-weight:bold}}.s{{font-size:11px;fill:#444}}.tick{{font-size:10px;text-anchor:middle;fill:#444}}.fam{{font-size:11px;text-anchor:end}}.grid{{stroke:#ddd;stroke-width:1}}.bound{{stroke:#c00;stroke-width:1.5;stroke-dasharray:5,3}}.bl{{font-size:10px;fill:#c00}}.over{{font-size:9px;fill:#c00}}.lg{{font-size:11px}}</style>
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="22" class="t">simdnorm-accuracy: worst error per input family (over kinds and dtype combinations)</text>
<text x="10" y="40" class="s">{2}</text>
<text x="10" y="56" class="s">bars: library per ISA (blue/green) and textbook shortcuts (red/orange/pink); a dot marks zero error, 'inf' a non-finite result, 'simdnorm max N ulps' a library bf16 or f16 result beyond 1 ulp</text>
)";

std::string esc(const std::string& s) { return simdnorm_tools::XmlEscape(s); }

struct Series {
  std::string isa, method, label, color;
};

struct Panel {
  std::string title;
  double lo_exp, hi_exp;  // decades shown
  double bound;
  std::string bound_label;
  std::vector<Series> series = {};
  // [family][series index] -> value (absent = no data)
  std::map<std::string, std::map<size_t, double>> values = {};
  // bf16 panel: [family][series index] -> max bf16 ulps, noted when > 1
  std::map<std::string, std::map<size_t, double>> max_ulps = {};

  double x_of(double v, double x0, double width) const {
    const double t = (std::log10(v) - lo_exp) / (hi_exp - lo_exp);
    return x0 + width * std::max(0.0, std::min(1.0, t));
  }
  size_t series_index(const ResultRow& r) {
    size_t n_isa = 0, n_short = 0;
    for (size_t i = 0; i < series.size(); ++i) {
      if (series[i].isa == r.isa && series[i].method == r.method) return i;
      (series[i].method == "simdnorm" ? n_isa : n_short)++;
    }
    const bool lib = r.method == "simdnorm";
    series.push_back(
        {r.isa, r.method, lib ? r.isa : r.method,
         lib ? kIsaColors[n_isa % 8] : kShortcutColors[n_short % 4]});
    return series.size() - 1;
  }
};

void draw_panel(std::FILE* f, const Panel& p,
                const std::vector<std::string>& families, double x0,
                double width, double y0, double row_h, double bar_h) {
  const double height = row_h * static_cast<double>(families.size());
  simdnorm_tools::PrintLine(f, R"(<text x="{:g}" y="{:g}" class="h">{}</text>)",
                            x0, y0 - 34, esc(p.title));
  for (int e = static_cast<int>(p.lo_exp); e <= static_cast<int>(p.hi_exp);
       ++e) {
    const double x = p.x_of(std::pow(10.0, e), x0, width);
    simdnorm_tools::PrintLine(
        f,
        R"(<line x1="{0:g}" y1="{1:g}" x2="{0:g}" y2="{2:g}" class="grid"/>)"
        "\n"
        R"(<text x="{0:g}" y="{3:g}" class="tick">1e{4}</text>)",
        x, y0 - 4, y0 + height, y0 - 8, e);
  }
  const double bx = p.x_of(p.bound, x0, width);
  simdnorm_tools::PrintLine(
      f,
      R"(<line x1="{0:g}" y1="{1:g}" x2="{0:g}" y2="{2:g}" class="bound"/>)"
      "\n"
      R"(<text x="{3:g}" y="{4:g}" class="bl">{5}</text>)",
      bx, y0 - 20, y0 + height, bx + 3, y0 - 22, esc(p.bound_label));
  for (size_t fi = 0; fi < families.size(); ++fi) {
    const double ry = y0 + row_h * static_cast<double>(fi);
    if (fi % 2 == 0) {
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="{:g}" height="{:g}" fill="#f4f4f4"/>)",
          x0, ry, width, row_h);
    }
    // bf16: one note per family when a library result is beyond 1 ulp.
    auto mu = p.max_ulps.find(families[fi]);
    if (mu != p.max_ulps.end()) {
      double worst = 0;
      for (const auto& [si, u] : mu->second) {
        if (p.series[si].method == "simdnorm" && !(u <= worst)) worst = u;
      }
      if (!(worst <= kHalfMaxUlps)) {
        simdnorm_tools::PrintLine(
            f,
            R"(<text x="{:g}" y="{:g}" class="over">simdnorm max {} ulps</text>)",
            x0 + width + 4, ry + row_h / 2 + 4, format_error(worst));
      }
    }
    auto it = p.values.find(families[fi]);
    if (it == p.values.end()) continue;
    for (const auto& [si, v] : it->second) {
      const double y = ry + 2 + bar_h * static_cast<double>(si);
      const Series& s = p.series[si];
      const std::string tip =
          esc(families[fi] + ", " + s.label + ": " + format_error(v));
      if (v <= 0 || std::isnan(v)) {
        simdnorm_tools::PrintLine(
            f,
            R"(<circle cx="{:g}" cy="{:g}" r="1.5" fill="{}"><title>{} (zero)</title></circle>)",
            x0 + 2, y + bar_h / 2, s.color, tip);
        continue;
      }
      const double x1 = std::isinf(v) ? x0 + width : p.x_of(v, x0, width);
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="{:g}" height="{:g}" fill="{}"><title>{}</title></rect>)",
          x0, y, std::max(1.0, x1 - x0), bar_h - 1, s.color, tip);
      if (std::isinf(v) || std::log10(v) > p.hi_exp) {
        simdnorm_tools::PrintLine(
            f, R"(<text x="{:g}" y="{:g}" class="over">{}</text>)",
            x0 + width + 2, y + bar_h, std::isinf(v) ? "inf" : "&gt;");
      }
    }
  }
}

}  // namespace

void write_svg(std::FILE* f, const Report& r) {
  Panel f32{"fp32 output: max scaled ulps (log scale)", -2, 0,
            kF32MaxScaledUlps, "bound 32"};
  // The bf16 bound is 0 (correctly rounded): drawn at 1e-6.
  Panel bf{"bf16 and f16 output: share not correctly rounded (log)", -6, 0,
           1e-6, "bound 0"};
  double hi = 1e3;
  for (const ResultRow& row : r.out.rows) {
    if (row.s.count == 0 || row.variant != "plain") continue;
    const bool half = Is16(row.dt.y);
    Panel* p = half ? &bf : &f32;
    const size_t si = p->series_index(row);
    const double v = half ? 1.0 - row.s.exact_share() : row.s.max;
    auto& cell = p->values[row.family];
    auto it = cell.find(si);
    if (it == cell.end() || v > it->second || std::isnan(v)) cell[si] = v;
    if (half) {
      double& mu = p->max_ulps[row.family][si];
      mu = std::max(mu, row.s.max);
    } else if (std::isfinite(v)) {
      hi = std::max(hi, v);
    }
  }
  f32.hi_exp = std::min(30.0, std::ceil(std::log10(hi)));

  std::vector<std::string> families;
  for (const std::string& fam : r.cfg.all_families()) {
    if (f32.values.count(fam) || bf.values.count(fam)) families.push_back(fam);
  }
  const double bar_h = 5;
  const size_t n_bars =
      std::max<size_t>(1, std::max(f32.series.size(), bf.series.size()));
  const double row_h = bar_h * static_cast<double>(n_bars) + 6;
  const double label_w = 180, panel_w = 420, gap = 90;
  const double top = 70 + 16.0 * 2 + 50;  // title, two legend lines
  const double width = label_w + 2 * panel_w + gap + 150;
  const double height = top + row_h * static_cast<double>(families.size()) + 40;
  fmt::print(f, kHead, width, height, esc(r.command));
  // Legends, one line per panel.
  for (const Panel* p : {&f32, &bf}) {
    double x = 10;
    const double y = p == &f32 ? 78 : 94;
    simdnorm_tools::PrintLine(
        f, R"(<text x="{:g}" y="{:g}" class="lg">{}</text>)", x, y + 9,
        p == &f32 ? "fp32 out:" : "16-bit out:");
    x += 80;
    for (const Series& s : p->series) {
      simdnorm_tools::PrintLine(
          f,
          R"(<rect x="{:g}" y="{:g}" width="10" height="10" fill="{}"/>)"
          "\n"
          R"(<text x="{:g}" y="{:g}" class="lg">{}</text>)",
          x, y, s.color, x + 14, y + 9, esc(s.label));
      x += 24 + 7.0 * static_cast<double>(s.label.size());
    }
  }
  for (size_t fi = 0; fi < families.size(); ++fi) {
    simdnorm_tools::PrintLine(
        f, R"(<text x="{:g}" y="{:g}" class="fam">{}</text>)", label_w - 8,
        top + row_h * static_cast<double>(fi) + row_h / 2 + 4,
        esc(families[fi]));
  }
  draw_panel(f, f32, families, label_w, panel_w, top, row_h, bar_h);
  draw_panel(f, bf, families, label_w + panel_w + gap, panel_w, top, row_h,
             bar_h);
  fmt::print(f, "</svg>\n");
}

}  // namespace simdnorm_accuracy
