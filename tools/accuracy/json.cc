// JSON report (stable keys, numbers that are not finite written as null)
// and the CSV one (a line per result row, the --detail rows).
#include <fmt/format.h>

#include <cmath>

#include "accuracy.h"
#include "common/output.h"

namespace simdnorm_accuracy {
namespace {

using simdnorm_tools::CsvField;
using simdnorm_tools::Json;

constexpr const char* kUnits[][2] = {
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
  for (const auto& [name, text] : kUnits) units[name] = text;
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

}  // namespace simdnorm_accuracy
