#include "support/cases.h"

#include <sstream>

namespace simdnorm_test {

const char* SumOutName(SumOut s) {
  switch (s) {
    case SumOut::kNone:
      return "none";
    case SumOut::kSeparate:
      return "separate";
    case SumOut::kIsResidual:
      return "residual";
    case SumOut::kIsX:
      return "x";
  }
  return "?";
}

std::string Case::Describe() const {
  std::ostringstream os;
  const char* isa = simdnorm_active_isa();
  os << "[ISA " << (isa ? isa : "?") << "] " << KindName(kind)
     << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
     << " param=" << DTypeName(t.param) << " rows=" << rows << " cols=" << cols
     << " x_stride=" << x_stride;
  if (in_place) {
    os << " IN PLACE";
  } else {
    os << " y_stride=" << y_stride;
  }
  os << " offsets(x,y,param)=(" << x_offset << "," << y_offset << ","
     << param_offset << ") gamma=" << (gamma ? "yes" : "no")
     << " beta=" << (beta ? "yes" : "no") << " eps=" << eps
     << " max_threads=" << max_threads << " data=" << FamilyName(family);
  if (residual) os << " residual(stride " << residual_stride << ")";
  if (sum_out != SumOut::kNone) {
    os << " sum_out=" << SumOutName(sum_out);
    if (sum_out == SumOut::kSeparate) os << "(stride " << sum_out_stride << ")";
  }
  if (gamma_offset != 0.0f) os << " gamma_offset=" << gamma_offset;
  if (flags != 0) os << " flags=" << flags;
  if (t.y == SIMDNORM_I8) os << " quant_group=" << quant_group;
  if (param_scale != 1.0) os << " params x" << param_scale;
  return os.str();
}

Call::Call(const Case& the_case, const std::vector<float>& values,
           const std::vector<float>* residual_values)
    : c(the_case),
      x(c.t.x, c.rows, c.cols, c.x_stride, c.x_offset),
      res(c.t.x, c.residual ? c.rows : 0, c.cols, c.residual_stride,
          c.x_offset),
      sum(c.t.x, c.sum_out == SumOut::kSeparate ? c.rows : 0, c.cols,
          c.sum_out_stride, c.y_offset),
      gamma(c.t.param, 1, c.cols, 0, c.param_offset),
      beta(c.t.param, 1, c.cols, 0, c.param_offset),
      y(c.t.y, c.in_place ? 0 : c.rows, c.cols, c.y_stride, c.y_offset),
      scales(SIMDNORM_F32, c.t.y == SIMDNORM_I8 ? c.rows : 0, c.Groups()) {
  x.Fill(values);
  if (c.residual) {
    res.Fill(residual_values ? *residual_values
                             : ResidualData(c.family, c.rows, c.cols));
  }
  std::vector<float> g = ParamData(true, c.cols);
  std::vector<float> b = ParamData(false, c.cols);
  for (float& v : g) v = static_cast<float>(v * c.param_scale);
  for (float& v : b) v = static_cast<float>(v * c.param_scale);
  gamma.Fill(g);
  beta.Fill(b);

  d.kind = c.kind;
  d.rows = c.rows;
  d.cols = c.cols;
  d.x = x.data();
  d.x_type = c.t.x;
  d.x_stride = c.x_stride;
  d.y = c.in_place ? x.data() : y.data();
  d.y_type = c.t.y;
  d.y_stride = c.in_place ? c.x_stride : c.y_stride;
  d.gamma = c.gamma ? gamma.data() : nullptr;
  d.beta = c.beta ? beta.data() : nullptr;
  d.param_type = c.t.param;
  d.eps = c.eps;
  d.max_threads = c.max_threads;
  d.residual = c.residual ? res.data() : nullptr;
  d.residual_stride = c.residual_stride;
  switch (c.sum_out) {
    case SumOut::kNone:
      break;
    case SumOut::kSeparate:
      d.sum_out = sum.data();
      d.sum_out_stride = c.sum_out_stride;
      break;
    case SumOut::kIsResidual:
      d.sum_out = res.data();
      d.sum_out_stride = c.residual_stride;
      break;
    case SumOut::kIsX:
      d.sum_out = x.data();
      d.sum_out_stride = c.x_stride;
      break;
  }
  d.gamma_offset = c.gamma_offset;
  d.flags = c.flags;
  d.y_scale =
      c.t.y == SIMDNORM_I8 ? static_cast<float*>(scales.data()) : nullptr;
  d.quant_group = c.quant_group;
}

std::vector<unsigned char> Call::OutputBytes() const {
  std::vector<unsigned char> v = Out().ElementBytes();
  if (c.sum_out != SumOut::kNone) {
    const std::vector<unsigned char> s = SumOutMatrix().ElementBytes();
    v.insert(v.end(), s.begin(), s.end());
  }
  const std::vector<unsigned char> q = scales.ElementBytes();
  v.insert(v.end(), q.begin(), q.end());
  return v;
}

}  // namespace simdnorm_test
