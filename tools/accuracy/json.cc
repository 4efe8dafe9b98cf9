// JSON report: stable keys, numbers that are not finite written as null.
#include "common/json.h"

#include "report.h"

namespace simdnorm_accuracy {
namespace {

using simdnorm_tools::Json;

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

// int8 output: the group scales (null for other outputs).
Json int8_json(const std::string& variant, simdnorm_dtype y, const Stats& s) {
  if (y != SIMDNORM_I8) return nullptr;
  Variant v;
  parse_variant(variant, &v);
  const ScaleWorst& sw = s.scale_worst;
  Json w = nullptr;
  if (sw.valid) {
    w = {{"cols", sw.cols},
         {"row", sw.row},
         {"group", sw.group},
         {"got", num(sw.got)},
         {"want", num(sw.want)}};
  }
  return {{"quant_group", v.quant_group},
          {"groups", s.groups},
          {"scale_over_bound", s.scale_over},
          {"max_scale_rel_err", num_short(s.max_scale_rel)},
          {"worst_scale", w}};
}

// The fused add's checks (null without a residual).
Json fused_json(const Stats& s) {
  if (!s.fused) return nullptr;
  const SumWorst& sw = s.sum_worst;
  Json w = nullptr;
  if (sw.valid) {
    w = {{"cols", sw.cols},
         {"row", sw.row},
         {"col", sw.col},
         {"got_bits", sw.got_bits},
         {"want_bits", sw.want_bits}};
  }
  return {{"sum_out_count", s.sum_count},
          {"sum_out_mismatches", s.sum_mismatch},
          {"inplace_mismatches", s.inplace_mismatch},
          {"first_mismatch", w}};
}

Json config_json(const ReportMeta& meta) {
  Json input = nullptr;
  if (!meta.input_path.empty()) {
    input = {{"path", meta.input_path},
             {"dtype", dtype_name(meta.input_dtype)},
             {"rows", meta.input_rows}};
  }
  return {{"seed", meta.seed},
          {"rows", meta.rows},
          {"cols", meta.cols},
          {"eps", eps_json(meta.eps)},
          {"isas", meta.isas},
          {"kinds", list(meta.kinds, kind_name)},
          {"dtypes", labels(meta.dtypes)},
          {"families", meta.families},
          {"variants", meta.variants},
          {"plans", list(meta.plans,
                         [](const Plan& p) {
                           return Json{{"variant", p.variant.name()},
                                       {"dtypes", labels(p.dtypes)},
                                       {"families", list(p.families,
                                                         [](const Family& f) {
                                                           return f.name;
                                                         })},
                                       {"cols", p.cols}};
                         })},
          {"input", input}};
}

Json result_json(const ResultRow& r) {
  return {{"isa", r.isa},
          {"method", r.method},
          {"kind", kind_name(r.kind)},
          {"x", dtype_name(r.dt.x)},
          {"y", dtype_name(r.dt.y)},
          {"w", dtype_name(r.dt.w)},
          {"family", r.family},
          {"eps", eps_json(r.eps)},
          {"unit", unit_name(r.dt.y)},
          {"count", r.s.count},
          {"excluded", r.s.excluded},
          {"over_bound", r.s.over},
          {"max", num_short(r.s.max)},
          {"mean", num_short(r.s.mean)},
          {"p999", num_short(r.s.p999)},
          {"max_scaled", num_short(r.s.max_scaled)},
          {"exact_share", num_short(r.s.exact_share())},
          {"checked", r.checked},
          {"pass", r.pass()},
          {"violations", r.violations},
          {"worst", worst_json(r.s.worst)},
          {"variant", r.variant},
          {"int8", int8_json(r.variant, r.dt.y, r.s)},
          {"fused_add", fused_json(r.s)}};
}

Json summary_json(const SummaryRow& s) {
  const bool i8 = s.dt.y == SIMDNORM_I8;
  return {{"isa", s.isa},
          {"method", s.method},
          {"kind", kind_name(s.kind)},
          {"x", dtype_name(s.dt.x)},
          {"y", dtype_name(s.dt.y)},
          {"w", dtype_name(s.dt.w)},
          {"unit", unit_name(s.dt.y)},
          {"families", s.families},
          {"failing_families", s.failing},
          {"count", s.count},
          {"excluded", s.excluded},
          {"max", num_short(s.max)},
          {"mean", num_short(s.mean)},
          {"max_p999", num_short(s.p999)},
          {"max_scaled", num_short(s.max_scaled)},
          {"min_exact_share", num_short(s.min_exact_share)},
          {"worst_family", s.worst_family},
          {"checked", s.checked},
          {"worst", worst_json(s.worst)},
          {"variant", s.variant},
          {"max_scale_rel_err", i8 ? num_short(s.max_scale_rel) : Json()},
          {"scale_over_bound", i8 ? Json(s.scale_over) : Json()},
          {"sum_out_mismatches", s.fused ? Json(s.sum_mismatch) : Json()},
          {"inplace_mismatches", s.fused ? Json(s.inplace_mismatch) : Json()}};
}

}  // namespace

void write_json(std::ostream& os, const RunOutput& out,
                const ReportMeta& meta) {
  bool pass = out.errors.empty();
  for (const ResultRow& r : out.rows) pass = pass && r.pass();
  const Json j = {
      {"tool", "simdnorm-accuracy"},
      {"schema", 1},
      {"command", meta.command},
      {"config", config_json(meta)},
      {"bounds",
       {{"f32_max_scaled_ulps", num(kF32MaxScaledUlps)},
        {"bf16_min_exact_share", num(kBf16MinExactShare)},
        {"bf16_max_ulps", num(kBf16MaxUlps)},
        {"f16_min_exact_share", num(kF16MinExactShare)},
        {"f16_max_ulps", num(kF16MaxUlps)},
        {"int8_max_scale_rel_err", num(kI8MaxScaleRelErr)},
        {"int8_max_q_diff", num(kI8MaxQDiff)}}},
      {"units",
       {{"scaled_ulp",
         "|got - want| / (2^-23 * (|gamma| * max(1, |xhat|) + |beta|)), "
         "want and xhat from the float64 reference"},
        {"bf16_ulp",
         "distance in the ordering of bf16 values from the float64 "
         "reference rounded once to bf16"},
        {"f16_ulp",
         "distance in the ordering of f16 values from the float64 "
         "reference rounded once to f16"},
        {"int8_q",
         "|q - q64|, q64 = round-half-even(y64 / scale64), scale64 = "
         "max |y64| / 127 over the group"}}},
      {"seconds", num_short(meta.seconds)},
      {"results", list(out.rows, result_json)},
      {"summary", list(summarize(out.rows), summary_json)},
      {"errors", out.errors},
      {"failures", failure_lines(out)},
      {"pass", pass}};
  os << simdnorm_tools::JsonDump(j);
}

}  // namespace simdnorm_accuracy
