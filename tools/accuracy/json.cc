// JSON report: stable keys, numbers that are not finite written as null.
#include <cmath>
#include <cstdio>

#include "report.h"

namespace simdnorm_accuracy {
namespace {

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string num_short(double v) {  // errors: 7 significant digits suffice
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.7g", v);
  return buf;
}

std::string worst_json(const Worst& w) {
  if (!w.valid) return "null";
  return "{\"error_scaled\": " + num_short(w.scaled) +
         ", \"cols\": " + std::to_string(w.cols) +
         ", \"row\": " + std::to_string(w.row) +
         ", \"col\": " + std::to_string(w.col) +
         ", \"input\": " + num(w.input) + ", \"got\": " + num(w.got) +
         ", \"want\": " + num(w.want) + ", \"xhat\": " + num(w.xhat) + "}";
}

std::string dtypes_json(const Dtypes& d) {
  return "\"x\": " + quote(dtype_name(d.x)) +
         ", \"y\": " + quote(dtype_name(d.y)) +
         ", \"w\": " + quote(dtype_name(d.w));
}

template <class T, class F>
std::string list(const std::vector<T>& v, F f) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + f(v[i]);
  return s + "]";
}

std::string u64(uint64_t v) { return std::to_string(v); }

// int8 output: the group scales (null for other outputs).
std::string int8_json(const std::string& variant, simdnorm_dtype y,
                      const Stats& s) {
  if (y != SIMDNORM_I8) return "null";
  Variant v;
  parse_variant(variant, &v);
  std::string w = "null";
  if (s.scale_worst.valid) {
    const ScaleWorst& sw = s.scale_worst;
    w = "{\"cols\": " + std::to_string(sw.cols) +
        ", \"row\": " + std::to_string(sw.row) +
        ", \"group\": " + std::to_string(sw.group) +
        ", \"got\": " + num(sw.got) + ", \"want\": " + num(sw.want) + "}";
  }
  return "{\"quant_group\": " + std::to_string(v.quant_group) +
         ", \"groups\": " + u64(s.groups) +
         ", \"scale_over_bound\": " + u64(s.scale_over) +
         ", \"max_scale_rel_err\": " + num_short(s.max_scale_rel) +
         ", \"worst_scale\": " + w + "}";
}

// The fused add's checks (null without a residual).
std::string fused_json(const Stats& s) {
  if (!s.fused) return "null";
  std::string w = "null";
  if (s.sum_worst.valid) {
    const SumWorst& sw = s.sum_worst;
    w = "{\"cols\": " + std::to_string(sw.cols) +
        ", \"row\": " + std::to_string(sw.row) +
        ", \"col\": " + std::to_string(sw.col) +
        ", \"got_bits\": " + std::to_string(sw.got_bits) +
        ", \"want_bits\": " + std::to_string(sw.want_bits) + "}";
  }
  return "{\"sum_out_count\": " + u64(s.sum_count) +
         ", \"sum_out_mismatches\": " + u64(s.sum_mismatch) +
         ", \"inplace_mismatches\": " + u64(s.inplace_mismatch) +
         ", \"first_mismatch\": " + w + "}";
}

}  // namespace

void write_json(std::ostream& os, const RunOutput& out,
                const ReportMeta& meta) {
  os << "{\n  \"tool\": \"simdnorm-accuracy\",\n  \"schema\": 1,\n";
  os << "  \"command\": " << quote(meta.command) << ",\n";
  os << "  \"config\": {\n";
  os << "    \"seed\": " << meta.seed << ",\n";
  os << "    \"rows\": " << meta.rows << ",\n";
  os << "    \"cols\": "
     << list(meta.cols, [](size_t c) { return std::to_string(c); }) << ",\n";
  os << "    \"eps\": " << shortest_float(meta.eps) << ",\n";
  os << "    \"isas\": " << list(meta.isas, quote) << ",\n";
  os << "    \"kinds\": " << list(meta.kinds, [](simdnorm_kind k) {
    return quote(kind_name(k));
  }) << ",\n";
  os << "    \"dtypes\": " << list(meta.dtypes, [](const Dtypes& d) {
    return quote(dtypes_label(d));
  }) << ",\n";
  os << "    \"families\": " << list(meta.families, quote) << ",\n";
  os << "    \"variants\": " << list(meta.variants, quote) << ",\n";
  os << "    \"plans\": " << list(meta.plans, [](const Plan& p) {
    return "{\"variant\": " + quote(p.variant.name()) + ", \"dtypes\": " +
           list(p.dtypes,
                [](const Dtypes& d) { return quote(dtypes_label(d)); }) +
           ", \"families\": " +
           list(p.families, [](const Family& f) { return quote(f.name); }) +
           ", \"cols\": " +
           list(p.cols, [](size_t c) { return std::to_string(c); }) + "}";
  }) << ",\n";
  if (meta.input_path.empty()) {
    os << "    \"input\": null\n";
  } else {
    os << "    \"input\": {\"path\": " << quote(meta.input_path)
       << ", \"dtype\": " << quote(dtype_name(meta.input_dtype))
       << ", \"rows\": " << meta.input_rows << "}\n";
  }
  os << "  },\n";
  os << "  \"bounds\": {\"f32_max_scaled_ulps\": " << num(kF32MaxScaledUlps)
     << ", \"bf16_min_exact_share\": " << num(kBf16MinExactShare)
     << ", \"bf16_max_ulps\": " << num(kBf16MaxUlps)
     << ", \"f16_min_exact_share\": " << num(kF16MinExactShare)
     << ", \"f16_max_ulps\": " << num(kF16MaxUlps)
     << ", \"int8_max_scale_rel_err\": " << num(kI8MaxScaleRelErr)
     << ", \"int8_max_q_diff\": " << num(kI8MaxQDiff) << "},\n";
  os << "  \"units\": {\"scaled_ulp\": "
     << quote(
            "|got - want| / (2^-23 * (|gamma| * max(1, |xhat|) + |beta|)), "
            "want and xhat from the float64 reference")
     << ", \"bf16_ulp\": "
     << quote(
            "distance in the ordering of bf16 values from the float64 "
            "reference rounded once to bf16")
     << ", \"f16_ulp\": "
     << quote(
            "distance in the ordering of f16 values from the float64 "
            "reference rounded once to f16")
     << ", \"int8_q\": "
     << quote(
            "|q - q64|, q64 = round-half-even(y64 / scale64), scale64 = "
            "max |y64| / 127 over the group")
     << "},\n";
  os << "  \"seconds\": " << num_short(meta.seconds) << ",\n";

  os << "  \"results\": [";
  for (size_t i = 0; i < out.rows.size(); ++i) {
    const ResultRow& r = out.rows[i];
    os << (i ? "," : "") << "\n    {\"isa\": " << quote(r.isa)
       << ", \"method\": " << quote(r.method)
       << ", \"kind\": " << quote(kind_name(r.kind)) << ", "
       << dtypes_json(r.dt) << ", \"family\": " << quote(r.family)
       << ", \"eps\": " << shortest_float(r.eps)
       << ", \"unit\": " << quote(unit_name(r.dt.y))
       << ", \"count\": " << r.s.count << ", \"excluded\": " << r.s.excluded
       << ", \"over_bound\": " << r.s.over
       << ", \"max\": " << num_short(r.s.max)
       << ", \"mean\": " << num_short(r.s.mean)
       << ", \"p999\": " << num_short(r.s.p999)
       << ", \"max_scaled\": " << num_short(r.s.max_scaled)
       << ", \"exact_share\": " << num_short(r.s.exact_share())
       << ", \"checked\": " << (r.checked ? "true" : "false")
       << ", \"pass\": " << (r.pass() ? "true" : "false")
       << ", \"violations\": " << list(r.violations, quote)
       << ", \"worst\": " << worst_json(r.s.worst)
       << ", \"variant\": " << quote(r.variant)
       << ", \"int8\": " << int8_json(r.variant, r.dt.y, r.s)
       << ", \"fused_add\": " << fused_json(r.s) << "}";
  }
  os << "\n  ],\n";

  const std::vector<SummaryRow> sum = summarize(out.rows);
  os << "  \"summary\": [";
  for (size_t i = 0; i < sum.size(); ++i) {
    const SummaryRow& s = sum[i];
    os << (i ? "," : "") << "\n    {\"isa\": " << quote(s.isa)
       << ", \"method\": " << quote(s.method)
       << ", \"kind\": " << quote(kind_name(s.kind)) << ", "
       << dtypes_json(s.dt) << ", \"unit\": " << quote(unit_name(s.dt.y))
       << ", \"families\": " << s.families
       << ", \"failing_families\": " << s.failing << ", \"count\": " << s.count
       << ", \"excluded\": " << s.excluded << ", \"max\": " << num_short(s.max)
       << ", \"mean\": " << num_short(s.mean)
       << ", \"max_p999\": " << num_short(s.p999)
       << ", \"max_scaled\": " << num_short(s.max_scaled)
       << ", \"min_exact_share\": " << num_short(s.min_exact_share)
       << ", \"worst_family\": " << quote(s.worst_family)
       << ", \"checked\": " << (s.checked ? "true" : "false")
       << ", \"worst\": " << worst_json(s.worst)
       << ", \"variant\": " << quote(s.variant) << ", \"max_scale_rel_err\": "
       << (s.dt.y == SIMDNORM_I8 ? num_short(s.max_scale_rel) : "null")
       << ", \"scale_over_bound\": "
       << (s.dt.y == SIMDNORM_I8 ? u64(s.scale_over) : "null")
       << ", \"sum_out_mismatches\": "
       << (s.fused ? u64(s.sum_mismatch) : "null")
       << ", \"inplace_mismatches\": "
       << (s.fused ? u64(s.inplace_mismatch) : "null") << "}";
  }
  os << "\n  ],\n";

  os << "  \"errors\": " << list(out.errors, quote) << ",\n";
  os << "  \"failures\": " << list(failure_lines(out), quote) << ",\n";
  bool pass = out.errors.empty();
  for (const ResultRow& r : out.rows) pass = pass && r.pass();
  os << "  \"pass\": " << (pass ? "true" : "false") << "\n}\n";
}

}  // namespace simdnorm_accuracy
