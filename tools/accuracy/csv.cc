// CSV report: one line per result row (the --detail rows), header first.
#include <cmath>
#include <cstdio>

#include "report.h"

namespace simdnorm_accuracy {
namespace {

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string num(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return buf;
}

}  // namespace

void write_csv(std::ostream& os, const RunOutput& out) {
  os << "isa,method,kind,x,y,w,family,eps,unit,count,excluded,over_bound,max,"
        "mean,p999,"
        "max_scaled,exact_share,checked,pass,worst_cols,worst_row,worst_col,"
        "worst_input,"
        "worst_got,worst_want,worst_xhat,violations,variant,quant_group,"
        "max_scale_rel_err,scale_over_bound,sum_out_mismatches,"
        "inplace_mismatches\n";
  for (const ResultRow& r : out.rows) {
    const Worst& w = r.s.worst;
    std::string violations;
    for (size_t i = 0; i < r.violations.size(); ++i) {
      violations += (i ? "; " : "") + r.violations[i];
    }
    os << field(r.isa) << ',' << field(r.method) << ',' << kind_name(r.kind)
       << ',' << dtype_name(r.dt.x) << ',' << dtype_name(r.dt.y) << ','
       << dtype_name(r.dt.w) << ',' << field(r.family) << ','
       << shortest_float(r.eps) << ',' << unit_name(r.dt.y) << ',' << r.s.count
       << ',' << r.s.excluded << ',' << r.s.over << ',' << num(r.s.max, 7)
       << ',' << num(r.s.mean, 7) << ',' << num(r.s.p999, 7) << ','
       << num(r.s.max_scaled, 7) << ',' << num(r.s.exact_share(), 7) << ','
       << (r.checked ? "true" : "false") << ','
       << (r.pass() ? "true" : "false");
    if (w.valid) {
      os << ',' << w.cols << ',' << w.row << ',' << w.col << ','
         << num(w.input, 9) << ',' << num(w.got, 9) << ',' << num(w.want, 17)
         << ',' << num(w.xhat, 17);
    } else {
      os << ",,,,,,,";
    }
    os << ',' << field(violations) << ',' << field(r.variant) << ',';
    if (r.dt.y == SIMDNORM_I8) {
      Variant v;
      parse_variant(r.variant, &v);
      os << v.quant_group << ',' << num(r.s.max_scale_rel, 7) << ','
         << r.s.scale_over;
    } else {
      os << ",,";
    }
    os << ',';
    if (r.s.fused)
      os << r.s.sum_mismatch << ',' << r.s.inplace_mismatch;
    else
      os << ',';
    os << "\n";
  }
}

}  // namespace simdnorm_accuracy
