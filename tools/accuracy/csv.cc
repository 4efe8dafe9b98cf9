// CSV report: one line per result row (the --detail rows), header first.
#include <fmt/format.h>

#include <cmath>

#include "common/text.h"
#include "report.h"

namespace simdnorm_accuracy {
namespace {

using simdnorm_tools::CsvField;

std::string num(double v, int digits) {
  return std::isnan(v) ? "nan" : fmt::format("{:.{}g}", v, digits);
}

}  // namespace

void write_csv(std::ostream& os, const RunOutput& out) {
  os << "isa,method,kind,x,y,w,family,eps,unit,count,excluded,over_bound,max,"
        "mean,p999,max_scaled,exact_share,checked,pass,worst_cols,worst_row,"
        "worst_col,worst_input,worst_got,worst_want,worst_xhat,violations,"
        "variant,quant_group,max_scale_rel_err,scale_over_bound,"
        "sum_out_mismatches,inplace_mismatches\n";
  for (const ResultRow& r : out.rows) {
    const Worst& w = r.s.worst;
    const std::string worst =
        w.valid ? fmt::format("{},{},{},{},{},{},{}", w.cols, w.row, w.col,
                              num(w.input, 9), num(w.got, 9), num(w.want, 17),
                              num(w.xhat, 17))
                : ",,,,,,";
    std::string int8 = ",,";
    if (r.dt.y == SIMDNORM_I8) {
      Variant v;
      parse_variant(r.variant, &v);
      int8 = fmt::format("{},{},{}", v.quant_group, num(r.s.max_scale_rel, 7),
                         r.s.scale_over);
    }
    const std::string fused =
        r.s.fused ? fmt::format("{},{}", r.s.sum_mismatch, r.s.inplace_mismatch)
                  : ",";
    os << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
        "{}\n",
        CsvField(r.isa), CsvField(r.method), kind_name(r.kind),
        dtype_name(r.dt.x), dtype_name(r.dt.y), dtype_name(r.dt.w),
        CsvField(r.family), shortest_float(r.eps), unit_name(r.dt.y), r.s.count,
        r.s.excluded, r.s.over, num(r.s.max, 7), num(r.s.mean, 7),
        num(r.s.p999, 7), num(r.s.max_scaled, 7), num(r.s.exact_share(), 7),
        r.checked, r.pass(), worst,
        CsvField(fmt::format("{}", fmt::join(r.violations, "; "))),
        CsvField(r.variant), int8, fused);
  }
}

}  // namespace simdnorm_accuracy
