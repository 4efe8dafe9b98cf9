// --op: GroupNorm, InstanceNorm, BatchNorm and the backward passes on every
// ISA against the library's float64 reference (rounded once to fp32), in
// the units docs/accuracy.md states each bound in: forward y in scaled ulps
// (the registry's f32_bound); backward dx in 2^-23 M_j (bound 128; BatchNorm
// inference 2^-23 |dx|, bound 2), dgamma in 2^-23 sum |dy| (|xhat| + tau)
// (64), dbeta in 2^-23 sum |dy| (32). 16-bit outputs: the error beyond half
// an ulp of the output type, in the same units; and a forward pass's must
// be correctly rounded (the default): the reference's 16-bit bytes.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "accuracy.h"
#include "common/output.h"
#include "support/checks.h"
#include "support/grad_bounds.h"

namespace simdnorm_accuracy {
namespace {

using simdnorm_peers::FamilyOp;
using simdnorm_peers::FamilyOutput;
using simdnorm_peers::FamilyProblem;
using simdnorm_peers::FamilyShape;
using simdnorm_test::kDbetaBound;
using simdnorm_test::kDgammaBound;
using simdnorm_test::kDxBound;
using simdnorm_test::kGradUlp;

// The worst error of one output against its bound, in the bound's units.
struct Err {
  double max = 0, bound = 0;
  bool pass() const { return max <= bound; }
  void add(double e) { max = std::isnan(e) ? INFINITY : std::max(max, e); }
};

struct FamilyRow {
  std::string isa, op, shape, family;
  Dtypes dt;
  Err out, dgamma, dbeta;  // bound 0: not an output of the op
  size_t not_rounded = 0;  // 16-bit y off the correctly rounded result
  bool pass() const {
    return out.pass() && dgamma.pass() && dbeta.pass() && not_rounded == 0;
  }
};

// Each element's unit of error of the output, and each channel's of dgamma
// and dbeta: the problem's statistics in double, set by set (a row, a
// sample's group, a channel over the batch).
struct Units {
  std::vector<double> out, dgamma, dbeta;
};

Units units_of(const FamilyProblem& p, const std::vector<float>& want) {
  const FamilyShape& s = p.shape;
  const FamilyOp& op = p.op;
  Units u{std::vector<double>(s.elems()), std::vector<double>(s.c),
          std::vector<double>(s.c)};
  const double tau = op.centered() ? 1 : 0;
  const size_t sets = op.batch() ? s.c : s.n * s.groups, cg = s.c / s.groups;
  std::vector<std::pair<size_t, size_t>> set;  // (index, channel)
  std::vector<double> xhat;
  for (size_t k = 0; k < sets; ++k) {
    set.clear();
    for (size_t i = 0; i < s.n; ++i) {
      for (size_t ch = 0; ch < s.c; ++ch) {
        const bool in =
            op.batch() ? ch == k : i == k / s.groups && ch / cg == k % s.groups;
        for (size_t q = 0; in && q < s.hw; ++q)
          set.push_back({s.index(i, ch, q), ch});
      }
    }
    const double m = static_cast<double>(set.size());
    double center = 0, second = 0, r;
    for (const auto& e : set) center += op.centered() ? p.x.at(e.first) / m : 0;
    if (op.batch() && !op.training) center = p.running_mean[k];
    for (const auto& e : set) second += std::pow(p.x.at(e.first) - center, 2);
    if (op.batch() && !op.training) {
      r = 1 / std::sqrt(p.running_var[k] + double{p.eps});
    } else if (op.op->kind == SIMDNORM_L2NORM) {
      r = 1 / std::max(std::sqrt(second), double{p.eps});
    } else {
      r = 1 / std::sqrt(second / m + p.eps);
    }
    double sum_g = 0, sum_gx = 0, sum_x2 = 0;
    xhat.clear();
    for (const auto& [j, ch] : set) {
      const double xh = (p.x.at(j) - center) * r, gm = p.gamma.at(ch);
      const double dy = op.backward ? std::fabs(p.dy.at(j)) : 0;
      xhat.push_back(xh);
      sum_g += dy * std::fabs(gm) / m;
      sum_gx += dy * std::fabs(gm) * (std::fabs(xh) + tau);
      sum_x2 += xh * xh;
      u.dgamma[ch] += kGradUlp * dy * (std::fabs(xh) + tau);
      u.dbeta[ch] += kGradUlp * dy;
      u.out[j] = kGradUlp * simdnorm_test::Terms(xh, gm, p.beta.at(ch));
    }
    const double w = op.batch() ? 1 / m : std::min(1.0, 1 / sum_x2);
    for (size_t e = 0; op.backward && e < set.size(); ++e) {
      const auto [j, ch] = set[e];
      const double g = std::fabs(p.dy.at(j) * p.gamma.at(ch));
      u.out[j] =
          op.batch() && !op.training
              ? kGradUlp * std::fabs(want[j])
              : kGradUlp * r *
                    (g + tau * sum_g + (std::fabs(xhat[e]) + tau) * w * sum_gx);
    }
  }
  return u;
}

// |got - want| / unit (0 when equal); 16-bit: beyond half an ulp of
// (|want| + bound * unit), f16 also half its smallest subnormal.
double error_of(simdnorm_dtype t, double got, double want, double unit,
                double bound) {
  if (!std::isfinite(want)) return 0;  // not counted
  double d = std::fabs(got - want);
  d -= simdnorm_test::HalfUlp(t) * (std::fabs(want) + bound * unit) +
       (t == SIMDNORM_F16 ? 0x1p-25 : 0.0);
  return std::isnan(got) ? INFINITY : d <= 0 ? 0 : d / unit;
}

std::vector<FamilyShape> accuracy_shapes(const FamilyOp& op,
                                         const Config& cfg) {
  std::vector<FamilyShape> out;
  if (op.rows()) {
    for (size_t cols :
         cfg.cols.empty() ? std::vector<size_t>{896, 1001} : unique(cfg.cols)) {
      out.push_back({cfg.rows, cols, 1, 1, SIMDNORM_NHWC});
    }
    return out;
  }
  // Small (hw 49: a tail for every vector width) and a UNet-sized shape.
  for (simdnorm_layout l : {SIMDNORM_NCHW, SIMDNORM_NHWC}) {
    for (FamilyShape s :
         std::vector<FamilyShape>{{2, 64, 49, 8, l}, {1, 320, 256, 32, l}}) {
      s.groups = op.instance ? s.c : op.batch() ? 1 : s.groups;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<FamilyRow> run_families(const Config& cfg,
                                    const std::vector<Family>& families) {
  std::vector<FamilyRow> rows;
  const std::vector<Dtypes> dtypes =
      cfg.dtypes.empty()
          ? std::vector<Dtypes>{{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
                                {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
                                {SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16}}
          : unique(cfg.dtypes);
  for (const FamilyOp& op : cfg.ops) {
    const double bound = !op.backward                 ? op.op->f32_bound
                         : op.batch() && !op.training ? 2.0
                                                      : kDxBound;
    for (const Dtypes& dt : dtypes) {
      for (const FamilyShape& s : accuracy_shapes(op, cfg)) {
        for (const Family& f : families) {
          if (!f.runs_with(dt.x) || !f.runs_with(dt.y)) continue;
          const size_t inner = op.rows() ? s.c : s.hw;
          const std::vector<float> x =
              generate(f.gen, s.elems() / inner, inner, cfg.seed);
          const std::vector<float> dy =
              generate(Gen::kNormal, s.elems() / inner, inner, cfg.seed, true);
          FamilyProblem p(op, s, dt.x, dt.y, dt.param, x, dy);
          p.eps = f.eps_zero ? 0.0f : cfg.eps;
          FamilyOutput ref, got, rounded;
          if (p.run(&ref, SIMDNORM_F32, 1, true) != SIMDNORM_OK) continue;
          // The reference's own 16-bit y: the exact results rounded once.
          const bool cr = !op.backward && dt.y != SIMDNORM_F32;
          if (cr && p.run(&rounded, dt.y, 1, true) != SIMDNORM_OK) continue;
          const std::vector<float> want(
              static_cast<const float*>(ref.out.data()),
              static_cast<const float*>(ref.out.data()) + s.elems());
          const Units u = units_of(p, want);
          for (const std::string& isa : cfg.isas) {
            simdnorm_set_isa(isa.c_str());
            FamilyRow row{isa,    op.name, simdnorm_peers::shape_name(op, s),
                          f.name, dt,      {},
                          {},     {}};
            row.out.bound = bound;
            if (p.run(&got, dt.y, cfg.threads, false) != SIMDNORM_OK) {
              row.out.max = INFINITY;
            }
            for (size_t j = 0; j < s.elems(); ++j) {
              row.out.add(
                  error_of(dt.y, got.out.at(j), want[j], u.out[j], bound));
            }
            if (cr) {
              row.not_rounded = count_differences(
                  dt.y, got.out.data(), rounded.out.data(), s.elems());
            }
            if (op.backward) {
              row.dgamma.bound = kDgammaBound;
              row.dbeta.bound = kDbetaBound;
              for (size_t ch = 0; ch < s.c; ++ch) {
                row.dgamma.add(error_of(SIMDNORM_F32, got.dgamma[ch],
                                        ref.dgamma[ch], u.dgamma[ch], 0));
                row.dbeta.add(error_of(SIMDNORM_F32, got.dbeta[ch],
                                       ref.dbeta[ch], u.dbeta[ch], 0));
              }
            }
            rows.push_back(row);
          }
        }
      }
    }
  }
  simdnorm_set_isa("auto");
  return rows;
}

std::string err_text(const Err& e) {
  return e.bound ? fmt::format("{}/{:g}", format_error(e.max), e.bound) : "-";
}

}  // namespace

int run_family_ops(const Config& cfg, const std::vector<Family>& families,
                   std::FILE* json, std::FILE* csv) {
  const std::vector<FamilyRow> rows = run_families(cfg, families);
  size_t failing = 0;
  for (const FamilyRow& r : rows) failing += !r.pass();
  if (!json && !csv) {
    fmt::print(
        "simdnorm-accuracy --op: error / bound against the float64 reference "
        "rounded to fp32 (docs/accuracy.md): y in scaled ulps; dx in 2^-23 "
        "M_j (BatchNorm inference: 2^-23 |dx|); dgamma, dbeta in 2^-23 sums; "
        "16-bit outputs: beyond half an ulp, and a forward pass's y must be "
        "correctly rounded (the reference's bytes). Worst over shapes and "
        "families "
        "(--detail: each).\n\n{:<10} {:<28} {:<14} {:>12} {:>10} {:>10}  "
        "{:<24} {}\n",
        "isa", "op", "x/y/w", "y or dx", "dgamma", "dbeta", "worst", "");
  }
  // The worst row of each (isa, op, dtypes), or every row with --detail.
  std::vector<FamilyRow> shown;
  for (const FamilyRow& r : rows) {
    auto same = [&](const FamilyRow& w) {
      return !cfg.detail && w.isa == r.isa && w.op == r.op && w.dt == r.dt;
    };
    auto it = std::find_if(shown.begin(), shown.end(), same);
    if (it == shown.end()) {
      shown.push_back(r);
      continue;
    }
    if (r.out.max / r.out.bound > it->out.max / it->out.bound) {
      it->out = r.out;
      it->shape = r.shape;
      it->family = r.family;
    }
    it->dgamma.add(r.dgamma.max);
    it->dbeta.add(r.dbeta.max);
    it->not_rounded += r.not_rounded;
  }
  for (const FamilyRow& w : json || csv ? std::vector<FamilyRow>() : shown) {
    fmt::print("{:<10} {:<28} {:<14} {:>12} {:>10} {:>10}  {:<24} {}\n", w.isa,
               w.op, dtypes_label(w.dt), err_text(w.out), err_text(w.dgamma),
               err_text(w.dbeta), w.shape + " " + w.family,
               w.pass()            ? "PASS"
               : w.not_rounded > 0 ? fmt::format("FAIL ({} not correctly "
                                                 "rounded)",
                                                 w.not_rounded)
                                   : "FAIL");
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  if (csv) {
    fmt::print(csv,
               "isa,op,shape,dtypes,family,error,bound,dgamma_error,"
               "dbeta_error,pass,not_correctly_rounded\n");
  }
  for (const FamilyRow& r : rows) {
    j.push_back({{"isa", r.isa},
                 {"op", r.op},
                 {"shape", r.shape},
                 {"dtypes", dtypes_label(r.dt)},
                 {"family", r.family},
                 {"error", r.out.max},
                 {"bound", r.out.bound},
                 {"dgamma_error", r.dgamma.max},
                 {"dbeta_error", r.dbeta.max},
                 {"pass", r.pass()},
                 {"not_correctly_rounded", r.not_rounded}});
    if (csv) {
      fmt::print(csv, "{},{},{},{},{},{},{},{},{},{},{}\n", r.isa, r.op,
                 r.shape, dtypes_label(r.dt), r.family, r.out.max, r.out.bound,
                 r.dgamma.max, r.dbeta.max, r.pass() ? "pass" : "fail",
                 r.not_rounded);
    }
  }
  if (json) fmt::print(json, "{}\n", j.dump(1));
  std::FILE* verdict = json || csv ? stderr : stdout;
  fmt::print(verdict, "\n{}: {} of {} rows within the bounds\n",
             failing ? "FAIL" : "PASS", rows.size() - failing, rows.size());
  return failing || rows.empty() ? 1 : 0;
}

}  // namespace simdnorm_accuracy
