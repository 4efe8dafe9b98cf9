#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "accuracy.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_accuracy {

std::vector<std::string> Config::all_variants() const {
  std::vector<std::string> out;
  for (const Plan& p : plans) AddUnique(&out, p.variant.name());
  return out;
}

std::vector<Dtypes> Config::all_dtypes(const std::string& variant) const {
  std::vector<Dtypes> out;
  for (const Plan& p : plans) {
    for (const Dtypes& d : p.dtypes) {
      if (variant.empty() || p.variant.name() == variant) AddUnique(&out, d);
    }
  }
  return out;
}

std::vector<std::string> Config::all_families() const {
  std::vector<std::string> out;
  for (const Plan& p : plans) {
    for (const Family& f : p.families) AddUnique(&out, f.name);
  }
  return out;
}

std::vector<size_t> Config::all_cols() const {
  std::vector<size_t> out;
  for (const Plan& p : plans) {
    for (size_t c : p.cols) AddUnique(&out, c);
  }
  return out;
}

bool RunOutput::pass() const {
  return errors.empty() &&
         std::all_of(rows.begin(), rows.end(),
                     [](const ResultRow& r) { return r.pass(); });
}

std::string row_name(const std::string& isa, simdnorm_kind kind,
                     const std::string& variant, const Dtypes& dt,
                     const std::string& family) {
  return fmt::format("{} {} {}{} {}", isa, kind_name(kind),
                     variant == "plain" ? "" : variant + " ", dtypes_label(dt),
                     family);
}

namespace {

constexpr size_t kMaxSelfCheckMessages = 20;

// The (x, w) dtypes of a plan sharing one reference, with the y dtypes
// wanted (f32 first).
std::vector<std::pair<Dtypes, std::vector<simdnorm_dtype>>> pairs_of(
    const Plan& plan) {
  std::vector<std::pair<Dtypes, std::vector<simdnorm_dtype>>> pairs;
  for (const Dtypes& d : plan.dtypes) {
    auto it = std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) {
      return p.first.x == d.x && p.first.param == d.param;
    });
    if (it == pairs.end()) it = pairs.insert(pairs.end(), {d, {}});
    AddUnique(&it->second, d.y);
  }
  for (auto& p : pairs) std::sort(p.second.begin(), p.second.end());
  return pairs;
}

// Output buffers of one call, reused across calls (no page faults per call).
struct Outputs {
  std::vector<float> y;      // room for rows * cols elements of any type
  std::vector<float> sum;    // sum_out, x_type
  std::vector<float> scale;  // y_scale
  void resize(size_t n, size_t groups) {
    y.resize(n);
    sum.resize(n);
    scale.resize(std::max<size_t>(groups, 1));
  }
  // Points d's outputs here for y type y (and the variant's sum_out).
  void point(simdnorm_desc* d, simdnorm_dtype y_type, const Variant& v) {
    d->y_type = y_type;
    d->y = y.data();
    d->sum_out = v.fused_add ? sum.data() : nullptr;
    d->y_scale = y_type == SIMDNORM_I8 ? scale.data() : nullptr;
    d->quant_group = y_type == SIMDNORM_I8 ? v.quant_group : 0;
  }
};

class Runner {
 public:
  explicit Runner(const Config& cfg) : cfg_(cfg) {
    for (const Plan& plan : cfg_.plans) {
      for (const auto& [xw, ys] : pairs_of(plan)) {
        for (const Family& f : plan.families) {
          if (f.runs_with(xw.x)) total_ += plan.cols.size() * cfg_.kinds.size();
        }
      }
    }
    progress_ = !cfg_.quiet && isatty(2);
  }

  RunOutput run() {
    for (simdnorm_kind kind : cfg_.kinds) {
      for (const Plan& plan : cfg_.plans) {
        for (const auto& [xw, ys] : pairs_of(plan)) {
          for (const Family& fam : plan.families) {
            if (fam.runs_with(xw.x)) run_family(kind, plan, xw, ys, fam);
          }
        }
      }
    }
    if (progress_) fmt::print(stderr, "\r{:100}\r", "");
    simdnorm_set_isa("auto");
    order_rows();
    return std::move(out_);
  }

 private:
  // The family's values (residual: the second stream of the fused add; for
  // --input the rows rotated by one).
  const std::vector<float>& base_data(const Family& fam, size_t cols,
                                      bool residual) {
    const auto key = std::make_tuple(static_cast<int>(fam.gen), cols, residual);
    const std::vector<float>& u = cfg_.user_data;
    if (fam.gen == Gen::kUser && !residual) return u;
    auto [it, added] = cache_.try_emplace(key);
    if (!added) return it->second;
    if (fam.gen != Gen::kUser) {
      return it->second =
                 generate(fam.gen, cfg_.rows, cols, cfg_.seed, residual);
    }
    for (size_t i = 0; i < u.size(); ++i) {
      it->second.push_back(u[(i + cols) % u.size()]);
    }
    return it->second;
  }

  void error(const std::string& what) {
    if (out_.errors.size() < 1000) out_.errors.push_back(what);
  }

  // One family on one (x, w) pair of a plan: every hidden size, y dtype and
  // ISA, plus the shortcuts; adds its rows.
  void run_family(simdnorm_kind kind, const Plan& plan, const Dtypes& xw,
                  const std::vector<simdnorm_dtype>& ys, const Family& fam) {
    const Variant& v = plan.variant;
    const size_t n_isa = cfg_.isas.size();
    // Per y dtype: an accumulator per ISA then per shortcut, and the
    // messages of failed calls per ISA.
    std::vector<std::vector<Accumulator>> acc(
        ys.size(), std::vector<Accumulator>(n_isa + std::size(kShortcuts)));
    std::vector<std::vector<std::string>> failed(ys.size() * n_isa);
    const float eps = fam.eps_zero ? 0.0f : cfg_.eps;
    const bool with_beta = simdnorm_tools::op_of(kind).centered != 0;
    auto where = [&](const std::string& isa, const Dtypes& dt, size_t cols) {
      return fmt::format("{} cols {}",
                         row_name(isa, kind, v.name(), dt, fam.name), cols);
    };
    for (size_t cols : plan.cols) {
      if (progress_) {
        fmt::print(stderr,
                   "\r[{:4}/{}] {:<9} {:<10} x={:<4} w={:<4} {:<22} cols {:<6}",
                   ++done_, total_, kind_name(kind), v.name(), dtype_name(xw.x),
                   dtype_name(xw.param), fam.name, cols);
        std::fflush(stderr);
      }
      const size_t rows = fam.gen == Gen::kUser ? cfg_.user_rows : cfg_.rows;
      const size_t n = rows * cols;
      const Operand x = quantize(base_data(fam, cols, false), xw.x, fam.bf16q);
      Operand residual, h;
      if (v.fused_add) {
        residual = quantize(base_data(fam, cols, true), xw.x, fam.bf16q);
        h = rounded_sum(x, residual);
      }
      const Operand& xn = v.fused_add ? h : x;  // what gets normalized
      const Weights wt =
          make_weights_for(xw.param, cols, cfg_.seed, v.gemma ? 1.0f : 0.0f);
      const float* beta_f = with_beta ? wt.beta.f.data() : nullptr;
      const size_t group = v.quant_group ? v.quant_group : cols;
      const size_t groups = v.int8 ? rows * ((cols + group - 1) / group) : 0;
      out_a_.resize(n, groups);
      out_b_.resize(n, groups);

      // The call under test.
      simdnorm_desc d{};
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      d.x_type = xw.x;
      d.x = x.data();
      d.param_type = xw.param;
      d.gamma = wt.gamma.data();
      d.beta = with_beta ? wt.beta.data() : nullptr;
      d.eps = eps;
      d.max_threads = cfg_.threads;
      d.residual = v.fused_add ? residual.data() : nullptr;
      d.gamma_offset = v.gemma ? 1.0f : 0.0f;
      d.flags = v.hf_round ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;

      // The float64 truth from the plain reference on the values the call
      // normalizes (h for the fused add) and the scale it applies (fl32(1 +
      // gamma) for Gemma), all exact in f32 storage.
      simdnorm_desc t{};
      t.kind = kind;
      t.rows = rows;
      t.cols = cols;
      t.x = xn.f.data();
      t.gamma = wt.scale.data();
      t.beta = beta_f;
      t.eps = eps;
      t.y = out_a_.y.data();
      truth_.resize(n);
      xhat_.resize(n);
      const simdnorm::Status rs =
          simdnorm::reference_f64(t, truth_.data(), xhat_.data());
      if (rs != simdnorm::Status::kOk) {
        error(where("reference", {xw.x, SIMDNORM_F32, xw.param}, cols) +
              ": reference_f64 returned " + simdnorm::to_string(rs));
        continue;
      }
      lo_.clear();
      hi_.clear();
      if (v.hf_round) {
        hf_round_truth(xw.x, xhat_.data(), wt.scale.data(), beta_f, rows, cols,
                       truth_.data(), &lo_, &hi_);
      }
      const Truth tr{rows,
                     cols,
                     truth_.data(),
                     xhat_.data(),
                     xn.f.data(),
                     wt.scale.data(),
                     beta_f,
                     lo_.empty() ? nullptr : lo_.data(),
                     lo_.empty() ? nullptr : hi_.data()};

      for (size_t yi = 0; yi < ys.size(); ++yi) {
        const simdnorm_dtype y = ys[yi];
        const Dtypes dt{xw.x, y, xw.param};
        out_a_.point(&d, y, v);
        if (Is16(y)) {
          want_.resize(n);
          for (size_t i = 0; i < n; ++i) {
            want_[i] = half_round_once(y, truth_[i]);
          }
        }
        const I8Truth i8 = y == SIMDNORM_I8
                               ? quantize_truth(truth_.data(), tr.lo, tr.hi,
                                                rows, cols, v.quant_group)
                               : I8Truth();
        if (!v.plain() || y != SIMDNORM_F32) {
          self_check(d, v, y, i8, xn, where("reference", dt, cols));
        }
        for (size_t ii = 0; ii < n_isa; ++ii) {
          const char* isa = cfg_.isas[ii].c_str();
          const simdnorm_status ss = simdnorm_set_isa(isa);
          const simdnorm_status st =
              ss == SIMDNORM_OK ? simdnorm_normalize(&d) : ss;
          if (st != SIMDNORM_OK) {
            const std::string msg = fmt::format(
                "{}: {} returned {}", where(isa, dt, cols),
                ss != SIMDNORM_OK ? "simdnorm_set_isa" : "simdnorm_normalize",
                simdnorm_status_string(st));
            error(msg);
            failed[yi * n_isa + ii].push_back(msg);
            continue;
          }
          Accumulator& a = acc[yi][ii];
          if (y == SIMDNORM_F32) {
            a.add_f32(out_a_.y.data(), tr);
          } else if (Is16(y)) {
            a.add_half(y, reinterpret_cast<const uint16_t*>(d.y), want_.data(),
                       tr);
          } else {
            a.add_i8(static_cast<const int8_t*>(d.y), d.y_scale, i8, tr);
          }
          if (v.fused_add) {
            a.add_sum_out(xw.x, d.sum_out, h.data(), n, cols);
            a.add_inplace_mismatches(
                in_place_differences(d, x, residual, y, groups));
          }
        }
        if (with_shortcuts(v, dt)) {
          run_shortcuts(kind, d, tr, &acc[yi][n_isa]);
        }
      }
    }
    // The rows of this family.
    for (size_t yi = 0; yi < ys.size(); ++yi) {
      const Dtypes dt{xw.x, ys[yi], xw.param};
      auto add_row = [&](const std::string& isa, const std::string& method,
                         Accumulator* a, bool checked) {
        ResultRow& r = out_.rows.emplace_back();
        static_cast<RowKey&>(r) = {isa, method, kind, v.name(), dt, checked};
        r.family = fam.name;
        r.eps = eps;
        r.s = a->finish();
        check_bounds(&r);
      };
      for (size_t ii = 0; ii < n_isa; ++ii) {
        add_row(cfg_.isas[ii], "simdnorm", &acc[yi][ii], true);
        for (const std::string& m : failed[yi * n_isa + ii]) {
          out_.rows.back().violations.push_back(m);
        }
      }
      if (!with_shortcuts(v, dt)) continue;
      for (size_t s = 0; s < std::size(kShortcuts); ++s) {
        if (shortcut_applies(kShortcuts[s], kind, dt.y) &&
            (kShortcuts[s] != Shortcut::kTruncBf16 || n_isa > 0)) {
          add_row("shortcut", shortcut_name(kShortcuts[s]), &acc[yi][n_isa + s],
                  false);
        }
      }
    }
  }

  // The shortcuts run on the plain calls without f16 (f32 and bf16 y).
  bool with_shortcuts(const Variant& v, const Dtypes& dt) const {
    return cfg_.shortcuts && v.plain() && dt.x != SIMDNORM_F16 &&
           dt.y != SIMDNORM_F16 && dt.param != SIMDNORM_F16;
  }

  // The textbook shortcuts on the plain call d's inputs, into sc[shortcut].
  void run_shortcuts(simdnorm_kind kind, const simdnorm_desc& d,
                     const Truth& tr, Accumulator* sc) {
    const size_t n = d.rows * d.cols;
    ys_.resize(n);
    if (d.y_type == SIMDNORM_F32) {
      for (size_t s = 0; s < std::size(kShortcuts); ++s) {
        if (kShortcuts[s] == Shortcut::kTruncBf16 ||
            !shortcut_applies(kShortcuts[s], kind, d.y_type)) {
          continue;
        }
        run_shortcut(kShortcuts[s], kind, tr.x, d.rows, d.cols, tr.gamma,
                     tr.beta, d.eps, ys_.data());
        sc[s].add_f32(ys_.data(), tr);
      }
      return;
    }
    // bf16: the best ISA's fp32 output with the low 16 bits dropped (the
    // shortcut the library avoids).
    simdnorm_desc df = d;
    df.y_type = SIMDNORM_F32;
    df.y = ys_.data();
    if (d.y_type != SIMDNORM_BF16 || cfg_.isas.empty() ||
        simdnorm_set_isa(cfg_.isas[0].c_str()) != SIMDNORM_OK ||
        simdnorm_normalize(&df) != SIMDNORM_OK) {
      return;
    }
    tb_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &ys_[i], sizeof(u));
      tb_[i] = static_cast<uint16_t>(u >> 16);
    }
    sc[static_cast<int>(Shortcut::kTruncBf16)].add_half(
        SIMDNORM_BF16, tb_.data(), want_.data(), tr);
  }

  // vLLM's form of the same call, on copies: residual = sum_out, and y = x
  // when the types allow. The number of elements of y, sum_out and y_scale
  // that differ from the out-of-place call just made (on the same ISA).
  uint64_t in_place_differences(const simdnorm_desc& d, const Operand& x,
                                const Operand& residual, simdnorm_dtype y,
                                size_t groups) {
    const size_t n = d.rows * d.cols;
    const size_t bytes = n * simdnorm_tools::ElemSize(d.x_type);
    xw_.resize(n);
    rw_.resize(n);
    std::memcpy(xw_.data(), x.data(), bytes);
    std::memcpy(rw_.data(), residual.data(), bytes);
    simdnorm_desc e = d;
    e.x = xw_.data();
    e.residual = e.sum_out = rw_.data();
    e.y = y == d.x_type ? static_cast<void*>(xw_.data()) : out_b_.y.data();
    if (y == SIMDNORM_I8) e.y_scale = out_b_.scale.data();
    if (simdnorm_normalize(&e) != SIMDNORM_OK) return n;  // all of it differs
    return count_differences(y, d.y, e.y, n) +
           count_differences(d.x_type, d.sum_out, rw_.data(), n) +
           count_differences(SIMDNORM_F32, d.y_scale, e.y_scale,
                             y == SIMDNORM_I8 ? groups : 0);
  }

  // simdnorm_normalize_reference on the real descriptor (every field of the
  // variant) must give exactly the truth derived here, rounded once: a
  // disagreement would make the figures meaningless. For bf16 and f16 the
  // reference's bytes become want_, what every ISA must give.
  void self_check(const simdnorm_desc& d, const Variant& v, simdnorm_dtype y,
                  const I8Truth& i8, const Operand& h,
                  const std::string& label) {
    const size_t n = d.rows * d.cols;
    simdnorm_desc dr = d;
    out_b_.point(&dr, y, v);
    const simdnorm_status st = simdnorm_normalize_reference(&dr);
    if (st != SIMDNORM_OK) {
      error(label + ": simdnorm_normalize_reference returned " +
            simdnorm_status_string(st));
      return;
    }
    const float* r = out_b_.y.data();
    const uint16_t* rh = reinterpret_cast<const uint16_t*>(r);
    const int8_t* q = reinterpret_cast<const int8_t*>(r);
    const float* s = out_b_.scale.data();
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; ++i) {
      bool ok = true;
      if (y == SIMDNORM_I8) {
        // The scale is the float64 one rounded to fp32, q within 1 of q64
        // (the reference may divide by the fp32 scale).
        const size_t gi = i8.group_of(i, d.cols);
        const double want = i8.scale[gi];
        ok = std::isnan(want) || (std::fabs(s[gi] - want) <= 0x1.0p-23 * want &&
                                  std::abs(q[i] - i8.q[i]) <= 1);
      } else if (!std::isfinite(truth_[i])) {
        continue;
      } else if (y == SIMDNORM_F32) {
        ok = r[i] == static_cast<float>(truth_[i]);
      } else {
        // The reference rounds the exact result, which the float64 truth may
        // not resolve next to a midpoint: the once-rounded truth or a
        // neighbour.
        ok = std::abs(HalfOrdered(rh[i]) - HalfOrdered(want_[i])) <= 1;
        want_[i] = rh[i];
      }
      if (!ok && bad++ == 0) first = i;
    }
    const double t = truth_[first];
    const size_t gi = y == SIMDNORM_I8 ? i8.group_of(first, d.cols) : 0;
    if (bad && messages_++ < kMaxSelfCheckMessages) {
      error(fmt::format(
          "{}: simdnorm_normalize_reference ({}) differs from the float64 "
          "truth rounded once at {} elements; first row {} col {}: {}",
          label, dtype_name(y), bad, first / d.cols, first % d.cols,
          y == SIMDNORM_F32
              ? fmt::format("truth {:.17g}, once-rounded {:.9g}, reference "
                            "{:.9g}",
                            t, double{static_cast<float>(t)}, double{r[first]})
          : Is16(y)
              ? fmt::format("truth {:.17g}, once-rounded 0x{:04x}, reference "
                            "0x{:04x}",
                            t, half_round_once(y, t), rh[first])
              : fmt::format("truth {:.17g}: q64 {} scale64 {:.17g}, reference "
                            "q {} scale {:.9g}",
                            t, i8.q[first], i8.scale[gi], q[first],
                            double{s[gi]})));
    }
    const size_t diff =
        v.fused_add ? count_differences(d.x_type, dr.sum_out, h.data(), n) : 0;
    if (diff && messages_++ < kMaxSelfCheckMessages) {
      error(fmt::format(
          "{}: simdnorm_normalize_reference's sum_out differs from h = x + "
          "residual rounded once at {} elements",
          label, diff));
    }
  }

  // Library rows by ISA (best first), then shortcuts by method; within each,
  // by variant, kind, dtype combination and family as configured.
  void order_rows() {
    const std::vector<std::string> variants = cfg_.all_variants();
    const std::vector<std::string> families = cfg_.all_families();
    std::map<std::string, std::vector<Dtypes>> dtypes;
    for (const std::string& v : variants) dtypes[v] = cfg_.all_dtypes(v);
    auto index = [](const auto& list, const auto& value) {
      return std::find(list.begin(), list.end(), value) - list.begin();
    };
    auto rank = [&](const ResultRow& r) {
      long group = index(cfg_.isas, r.isa);
      for (Shortcut s : kShortcuts) {
        if (r.method == shortcut_name(s)) group = 1000 + static_cast<int>(s);
      }
      return std::make_tuple(
          group, index(variants, r.variant), index(cfg_.kinds, r.kind),
          index(dtypes[r.variant], r.dt), index(families, r.family));
    };
    std::stable_sort(out_.rows.begin(), out_.rows.end(),
                     [&](const ResultRow& a, const ResultRow& b) {
                       return rank(a) < rank(b);
                     });
  }

  const Config& cfg_;
  Outputs out_a_, out_b_;       // the call under test; the reference and copies
  std::vector<float> ys_;       // a shortcut's output
  std::vector<float> xw_, rw_;  // in-place copies of x and residual
  std::vector<uint16_t> want_, tb_;
  std::vector<double> truth_, xhat_, lo_, hi_;
  std::map<std::tuple<int, size_t, bool>, std::vector<float>> cache_;
  RunOutput out_;
  size_t total_ = 0, done_ = 0, messages_ = 0;
  bool progress_ = false;
};

}  // namespace

RunOutput run_all(const Config& cfg) { return Runner(cfg).run(); }

}  // namespace simdnorm_accuracy
