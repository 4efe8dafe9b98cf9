#include "family_problem.h"

#include <cmath>
#include <cstring>

#include "simdnorm/simdnorm.hpp"

namespace simdnorm_peers {

std::vector<FamilyOp> family_ops() {
  std::vector<FamilyOp> out;
  for (size_t i = 0; const simdnorm_op_info* op = simdnorm_op_at(i); ++i) {
    const std::string n = op->name;
    const bool group = op->descriptor == SIMDNORM_GROUP_DESC;
    const bool batch = op->descriptor == SIMDNORM_BATCH_DESC;
    for (int variant = 0; variant < (group || batch ? 2 : 1); ++variant) {
      const std::string base = !variant ? n
                               : group  ? std::string("instancenorm")
                                        : n + "-training";
      for (int backward = op->descriptor == SIMDNORM_ROW_DESC;
           backward < 1 + op->has_backward; ++backward) {
        out.push_back({base + (backward ? "-backward" : ""), op, backward != 0,
                       batch && variant, group && variant});
      }
    }
  }
  return out;
}

bool parse_family_op(const std::string& s, FamilyOp* op) {
  for (const FamilyOp& f : family_ops()) {
    if (f.name == s) *op = f;
  }
  return op->op != nullptr && op->name == s;
}

std::string family_op_list() {
  std::string out;
  for (const FamilyOp& f : family_ops())
    out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

std::string shape_name(const FamilyOp& op, const FamilyShape& s) {
  const std::string rows = std::to_string(s.n) + "x" + std::to_string(s.c);
  if (op.rows()) return rows;
  return rows + "x" + std::to_string(s.hw) +
         (op.batch() ? "" : " g" + std::to_string(s.groups)) +
         (s.layout == SIMDNORM_NCHW ? " nchw" : " nhwc");
}

std::vector<FamilyShape> profile_shapes(const FamilyOp& op) {
  std::vector<FamilyShape> base;
  if (op.rows())
    return {{64, 896, 1, 1, SIMDNORM_NHWC}, {4096, 896, 1, 1, SIMDNORM_NHWC}};
  if (op.batch()) {
    base = {{8, 64, 56 * 56, 1}};
  } else {  // Stable Diffusion's UNet: 32 groups
    base = {{1, 320, 64 * 64, 32}, {1, 1280, 8 * 8, 32}};
  }
  std::vector<FamilyShape> out;
  for (simdnorm_layout l : {SIMDNORM_NCHW, SIMDNORM_NHWC}) {
    for (FamilyShape s : base) {
      s.layout = l;
      s.groups = op.instance ? s.c : s.groups;
      out.push_back(s);
    }
  }
  return out;
}

Typed::Typed(simdnorm_dtype t, const std::vector<float>& v)
    : Typed(t, v.size()) {
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = t == SIMDNORM_BF16
                           ? simdnorm::bf16::from_float(v[i]).bits
                           : simdnorm::f16::from_float(v[i]).bits;
    const void* src = t == SIMDNORM_F32 ? static_cast<const void*>(&v[i]) : &h;
    std::memcpy(&bytes[dtype_size(t) * i], src, dtype_size(t));
  }
}

FamilyProblem::FamilyProblem(const FamilyOp& o, const FamilyShape& s,
                             simdnorm_dtype x_type, simdnorm_dtype y_t,
                             simdnorm_dtype w_t, const std::vector<float>& xv,
                             const std::vector<float>& dyv)
    : op(o), shape(s), y_type(y_t), w_type(w_t), x(x_type, xv) {
  if (op.backward) dy = Typed(y_type, dyv);
  std::vector<float> g(s.c), b(s.c);
  for (size_t ch = 0; ch < s.c; ++ch) {  // spread over [-1, 1]
    const float u = static_cast<float>(static_cast<int>(ch * 37 % 101) - 50);
    g[ch] = 1 + u / 500;
    b[ch] = u / 500;
  }
  gamma = Typed(w_type, g);
  beta = Typed(w_type, b);
  // Inference: a channel's own mean and variance, moved by 10% of its
  // deviation and 20% of its variance (as running statistics are).
  for (size_t ch = 0; op.batch() && ch < s.c; ++ch) {
    double sum = 0, sq = 0;
    for (size_t i = 0; i < s.n; ++i) {
      for (size_t p = 0; p < s.hw; ++p) sum += x.at(s.index(i, ch, p));
    }
    const double mean = sum / static_cast<double>(s.n * s.hw);
    for (size_t i = 0; i < s.n; ++i) {
      for (size_t p = 0; p < s.hw; ++p) {
        sq += std::pow(x.at(s.index(i, ch, p)) - mean, 2);
      }
    }
    const double var = sq / static_cast<double>(s.n * s.hw);
    running_mean.push_back(static_cast<float>(mean + 0.1 * std::sqrt(var)));
    running_var.push_back(static_cast<float>(var * 1.2));
  }
}

size_t FamilyProblem::moved_bytes() const {
  return x.bytes.size() +
         shape.elems() * dtype_size(y_type) * (op.backward ? 2 : 1);
}

simdnorm_status FamilyProblem::run(FamilyOutput* o, simdnorm_dtype out_type,
                                   size_t threads, bool reference) {
  const FamilyShape& s = shape;
  if (o->out.bytes.empty()) o->out = Typed(out_type, s.elems());
  const size_t nw = op.backward ? s.c : 0;
  o->dgamma.resize(nw);
  o->dbeta.resize(nw);
  float* dg = nw ? o->dgamma.data() : nullptr;
  float* db = nw ? o->dbeta.data() : nullptr;
  if (op.rows()) {
    simdnorm_backward_desc d{};
    d.kind = op.op->kind;
    d.rows = s.n;
    d.cols = s.c;
    d.x = x.data();
    d.x_type = x.type;
    d.dy = dy.data();
    d.dy_type = dy.type;
    d.dx = o->out.data();
    d.dx_type = out_type;
    d.gamma = gamma.data();
    d.param_type = w_type;
    d.eps = eps;
    d.dgamma = dg;
    d.dbeta = db;
    d.max_threads = threads;
    return reference ? simdnorm_backward_reference(&d) : simdnorm_backward(&d);
  }
  if (!op.batch() && !op.backward) {
    simdnorm_group_desc d{
        s.n,    s.c,           s.hw,     s.groups,     s.layout,    x.data(),
        x.type, o->out.data(), out_type, gamma.data(), beta.data(), w_type,
        eps,    threads,       0,        nullptr,      nullptr};
    return reference ? simdnorm_group_norm_reference(&d)
                     : simdnorm_group_norm(&d);
  }
  if (!op.batch()) {
    simdnorm_group_backward_desc d{
        s.n,      s.c,          s.hw,      s.groups, s.layout,
        x.data(), x.type,       dy.data(), dy.type,  o->out.data(),
        out_type, gamma.data(), w_type,    eps,      dg,
        db,       threads,      0,         nullptr,  nullptr};
    return reference ? simdnorm_group_norm_backward_reference(&d)
                     : simdnorm_group_norm_backward(&d);
  }
  if (!op.backward) {
    // Training updates the running statistics in place (momentum 0.1), as
    // torch's training forward does; y does not depend on them.
    simdnorm_batch_desc d{};
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.layout = s.layout;
    d.x = x.data();
    d.x_type = x.type;
    d.y = o->out.data();
    d.y_type = out_type;
    d.gamma = gamma.data();
    d.beta = beta.data();
    d.param_type = w_type;
    d.running_mean = running_mean.data();
    d.running_var = running_var.data();
    d.momentum = 0.1f;
    d.eps = eps;
    d.training = op.training;
    d.max_threads = threads;
    return reference ? simdnorm_batch_norm_reference(&d)
                     : simdnorm_batch_norm(&d);
  }
  simdnorm_batch_backward_desc d{s.n,
                                 s.c,
                                 s.hw,
                                 s.layout,
                                 x.data(),
                                 x.type,
                                 dy.data(),
                                 dy.type,
                                 o->out.data(),
                                 out_type,
                                 gamma.data(),
                                 w_type,
                                 running_mean.data(),
                                 running_var.data(),
                                 eps,
                                 op.training,
                                 dg,
                                 db,
                                 threads,
                                 0,
                                 nullptr,
                                 nullptr};
  return reference ? simdnorm_batch_norm_backward_reference(&d)
                   : simdnorm_batch_norm_backward(&d);
}

}  // namespace simdnorm_peers
