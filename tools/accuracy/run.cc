#include "run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "operands.h"
#include "shortcuts.h"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define SIMDNORM_ACCURACY_HAVE_ISATTY 1
#endif

namespace simdnorm_accuracy {
namespace {

constexpr Shortcut kF32Shortcuts[] = {
    Shortcut::kOnePassF32, Shortcut::kTwoPassF32, Shortcut::kEpsOutside};
constexpr size_t kMaxMessagesPerKind = 20;

bool stderr_is_tty() {
#ifdef SIMDNORM_ACCURACY_HAVE_ISATTY
  return isatty(2) != 0;
#else
  return false;
#endif
}

bool has_f16(const Dtypes& d) {
  return d.x == SIMDNORM_F16 || d.y == SIMDNORM_F16 || d.w == SIMDNORM_F16;
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
};

class Runner {
 public:
  explicit Runner(const RunConfig& cfg) : cfg_(cfg) {}

  RunOutput run() {
    plan();
    for (simdnorm_kind kind : cfg_.kinds) {
      for (const Plan& plan : cfg_.plans) {
        for (const Pair& p : pairs_of(plan)) {
          for (const Family& fam : plan.families) {
            if (family_runs_with(fam, p.x)) run_family(kind, plan, p, fam);
          }
        }
      }
    }
    if (show_progress_) std::fprintf(stderr, "\r%*s\r", 100, "");
    simdnorm_set_isa("auto");
    order_rows();
    return std::move(out_);
  }

 private:
  // The (x, w) dtypes sharing one reference, with the y dtypes wanted.
  struct Pair {
    simdnorm_dtype x, w;
    std::vector<simdnorm_dtype> ys;  // f32 first
  };

  static std::vector<Pair> pairs_of(const Plan& plan) {
    std::vector<Pair> pairs;
    for (const Dtypes& d : plan.dtypes) {
      auto it = std::find_if(pairs.begin(), pairs.end(), [&](const Pair& p) {
        return p.x == d.x && p.w == d.w;
      });
      if (it == pairs.end()) {
        pairs.push_back(Pair{d.x, d.w, {}});
        it = pairs.end() - 1;
      }
      if (std::find(it->ys.begin(), it->ys.end(), d.y) == it->ys.end()) {
        it->ys.push_back(d.y);
      }
    }
    for (Pair& p : pairs) std::sort(p.ys.begin(), p.ys.end());
    return pairs;
  }

  void plan() {
    for (const Plan& plan : cfg_.plans) {
      const std::string v = plan.variant.name();
      if (std::find(variant_order_.begin(), variant_order_.end(), v) ==
          variant_order_.end()) {
        variant_order_.push_back(v);
      }
      std::vector<Dtypes>& dts = dtype_order_[v];
      for (const Dtypes& d : plan.dtypes) {
        if (std::find(dts.begin(), dts.end(), d) == dts.end()) {
          dts.push_back(d);
        }
      }
      for (const Family& f : plan.families) {
        if (std::find(family_order_.begin(), family_order_.end(), f.name) ==
            family_order_.end()) {
          family_order_.push_back(f.name);
        }
      }
      for (const Pair& p : pairs_of(plan)) {
        for (const Family& f : plan.families) {
          if (family_runs_with(f, p.x)) {
            total_ += plan.cols.size() * cfg_.kinds.size();
          }
        }
      }
    }
    show_progress_ = cfg_.progress && stderr_is_tty();
  }

  size_t rows_for(const Family& fam) const {
    return fam.gen == Gen::kUser ? cfg_.user_rows : cfg_.rows;
  }

  // The family's values (residual: the second stream of the fused add; for
  // --input the rows rotated by one).
  const std::vector<float>& base_data(const Family& fam, size_t cols,
                                      bool residual) {
    const auto key = std::make_tuple(static_cast<int>(fam.gen), cols, residual);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    std::vector<float> v;
    if (fam.gen == Gen::kUser) {
      if (!residual) return cfg_.user_data;
      const std::vector<float>& u = cfg_.user_data;
      v.resize(u.size());
      const size_t n = u.size();
      for (size_t i = 0; i < n; ++i) v[i] = u[(i + cols) % n];
    } else if (residual) {
      v = generate_residual(fam.gen, cfg_.rows, cols, cfg_.seed);
    } else {
      v = generate(fam.gen, cfg_.rows, cols, cfg_.seed);
    }
    return cache_.emplace(key, std::move(v)).first->second;
  }

  void error(const std::string& what) {
    if (out_.errors.size() < 1000) out_.errors.push_back(what);
  }

  std::string where(const char* isa, simdnorm_kind kind, const Variant& v,
                    const Dtypes& dt, const Family& fam, size_t cols) const {
    std::string s = std::string(isa) + " " + kind_name(kind) + " ";
    if (!v.plain()) s += v.name() + " ";
    return s + dtypes_label(dt) + " " + fam.name + " cols " +
           std::to_string(cols);
  }

  void progress(simdnorm_kind kind, const Variant& v, const Pair& p,
                const Family& fam, size_t cols) {
    ++done_;
    if (!show_progress_) return;
    std::fprintf(stderr,
                 "\r[%4zu/%zu] %-9s %-10s x=%-4s w=%-4s %-22s cols %-6zu",
                 done_, total_, kind_name(kind), v.name().c_str(),
                 dtype_name(p.x), dtype_name(p.w), fam.name.c_str(), cols);
    std::fflush(stderr);
  }

  // Points d's outputs at o for y type y (and the variant's sum_out).
  static void point_outputs(simdnorm_desc* d, Outputs* o, simdnorm_dtype y,
                            const Variant& v) {
    d->y_type = y;
    d->y = o->y.data();
    d->sum_out = v.fused_add ? o->sum.data() : nullptr;
    d->y_scale = y == SIMDNORM_I8 ? o->scale.data() : nullptr;
    d->quant_group = y == SIMDNORM_I8 ? v.quant_group : 0;
  }

  void run_family(simdnorm_kind kind, const Plan& plan, const Pair& p,
                  const Family& fam) {
    const Variant& v = plan.variant;
    const size_t n_isa = cfg_.isas.size();
    const size_t n_y = p.ys.size();
    // [y index][isa] and [y index][shortcut]
    std::vector<std::vector<Accumulator>> lib(n_y,
                                              std::vector<Accumulator>(n_isa));
    std::vector<std::vector<Accumulator>> sc(n_y, std::vector<Accumulator>(4));
    std::vector<std::vector<std::vector<std::string>>> failed(
        n_y, std::vector<std::vector<std::string>>(n_isa));
    const float eps = fam.eps_zero ? 0.0f : cfg_.eps;
    for (size_t cols : plan.cols) {
      progress(kind, v, p, fam, cols);
      const size_t rows = rows_for(fam);
      const size_t n = rows * cols;
      const Operand x = quantize(base_data(fam, cols, false), p.x, fam.bf16q);
      Operand residual, h;
      if (v.fused_add) {
        residual = quantize(base_data(fam, cols, true), p.x, fam.bf16q);
        h = rounded_sum(x, residual);
      }
      const Operand& xn = v.fused_add ? h : x;  // what gets normalized
      const Weights wt =
          make_weights_for(p.w, cols, cfg_.seed, v.gemma ? 1.0f : 0.0f);
      const bool affine_beta = kind == SIMDNORM_LAYERNORM;
      const float* beta_f = affine_beta ? wt.beta.f.data() : nullptr;
      const size_t groups =
          v.int8 ? rows * ((cols + (v.quant_group ? v.quant_group : cols) - 1) /
                           (v.quant_group ? v.quant_group : cols))
                 : 0;
      out_a_.resize(n, groups);
      out_b_.resize(n, groups);

      // The float64 truth from the plain reference on the values the call
      // normalizes (h for the fused add) and the scale it applies (fl32(1 +
      // gamma) for Gemma), all exact in f32 storage.
      simdnorm_desc t{};
      t.kind = kind;
      t.rows = rows;
      t.cols = cols;
      t.x = xn.f.data();
      t.x_type = SIMDNORM_F32;
      t.gamma = wt.scale.data();
      t.beta = beta_f;
      t.param_type = SIMDNORM_F32;
      t.eps = eps;
      t.y = out_a_.y.data();
      t.y_type = SIMDNORM_F32;
      truth_.resize(n);
      xhat_.resize(n);
      const simdnorm::Status rs =
          simdnorm::reference_f64(t, truth_.data(), xhat_.data());
      if (rs != simdnorm::Status::kOk) {
        error(where("reference", kind, v, Dtypes{p.x, SIMDNORM_F32, p.w}, fam,
                    cols) +
              ": reference_f64 returned " + simdnorm::to_string(rs));
        continue;
      }
      if (v.hf_round) {
        hf_round_truth(p.x, xhat_.data(), wt.scale.data(), beta_f, rows, cols,
                       truth_.data(), &lo_, &hi_);
      } else {
        lo_.clear();
        hi_.clear();
      }
      const double* lo = lo_.empty() ? nullptr : lo_.data();
      const double* hi = hi_.empty() ? nullptr : hi_.data();

      // The call under test.
      simdnorm_desc d{};
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      d.x_type = p.x;
      d.x = x.data();
      d.param_type = p.w;
      d.gamma = wt.gamma.data();
      if (affine_beta) d.beta = wt.beta.data();
      d.eps = eps;
      d.max_threads = cfg_.threads;
      if (v.fused_add) d.residual = residual.data();
      d.gamma_offset = v.gemma ? 1.0f : 0.0f;
      d.flags = v.hf_round ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;

      first_f32_.clear();  // the best ISA's fp32 output (plain)
      for (size_t yi = 0; yi < n_y; ++yi) {
        const simdnorm_dtype y = p.ys[yi];
        const Dtypes dt{p.x, y, p.w};
        point_outputs(&d, &out_a_, y, v);
        if (is_half(y)) {
          want_.resize(n);
          for (size_t i = 0; i < n; ++i) {
            want_[i] = half_round_once(y, truth_[i]);
          }
        }
        I8Truth i8;
        if (y == SIMDNORM_I8) {
          i8 = quantize_truth(truth_.data(), lo, hi, rows, cols, v.quant_group);
        }
        if (!v.plain() || y != SIMDNORM_F32) {
          self_check(d, v, y, i8, xn,
                     where("reference", kind, v, dt, fam, cols));
        }
        for (size_t ii = 0; ii < n_isa; ++ii) {
          const char* isa = cfg_.isas[ii].c_str();
          const simdnorm_status ss = simdnorm_set_isa(isa);
          simdnorm_status st = ss;
          if (ss == SIMDNORM_OK) st = simdnorm_normalize(&d);
          if (st != SIMDNORM_OK) {
            const std::string msg = where(isa, kind, v, dt, fam, cols) + ": " +
                                    (ss != SIMDNORM_OK ? "simdnorm_set_isa"
                                                       : "simdnorm_normalize") +
                                    " returned " + simdnorm_status_string(st);
            error(msg);
            failed[yi][ii].push_back(msg);
            continue;
          }
          Accumulator& acc = lib[yi][ii];
          const float* yf = out_a_.y.data();
          if (y == SIMDNORM_F32) {
            acc.add_f32(yf, truth_.data(), xhat_.data(), xn.f.data(),
                        wt.scale.data(), beta_f, rows, cols, lo, hi);
            if (ii == 0 && v.plain()) first_f32_.assign(yf, yf + n);
          } else if (is_half(y)) {
            acc.add_half(y, reinterpret_cast<const uint16_t*>(yf), want_.data(),
                         truth_.data(), xhat_.data(), xn.f.data(),
                         wt.scale.data(), beta_f, rows, cols, lo, hi);
          } else {
            acc.add_i8(reinterpret_cast<const int8_t*>(yf), out_a_.scale.data(),
                       i8, xhat_.data(), xn.f.data(), rows, cols);
          }
          if (v.fused_add) {
            acc.add_sum_out(p.x, out_a_.sum.data(), h.data(), n, cols);
            acc.add_inplace_mismatches(
                in_place_differences(d, x, residual, y, groups));
          }
        }
        if (cfg_.shortcuts && v.plain() && !has_f16(dt)) {
          run_shortcuts(kind, d, dt, x, wt, beta_f, eps, rows, cols, &sc[yi]);
        }
      }
    }
    // Collect the rows of this family.
    for (size_t yi = 0; yi < n_y; ++yi) {
      const Dtypes dt{p.x, p.ys[yi], p.w};
      for (size_t ii = 0; ii < n_isa; ++ii) {
        ResultRow r =
            make_row(cfg_.isas[ii], "simdnorm", kind, v, dt, fam, eps);
        r.s = lib[yi][ii].finish();
        r.checked = true;
        check_bounds(&r);
        for (const std::string& m : failed[yi][ii]) r.violations.push_back(m);
        out_.rows.push_back(std::move(r));
      }
      if (!cfg_.shortcuts || !v.plain() || has_f16(dt)) continue;
      for (Shortcut s : {Shortcut::kOnePassF32, Shortcut::kTwoPassF32,
                         Shortcut::kEpsOutside, Shortcut::kTruncBf16}) {
        if (!shortcut_applies(s, kind, dt.y)) continue;
        if (s == Shortcut::kTruncBf16 && n_isa == 0) continue;
        ResultRow r =
            make_row("shortcut", shortcut_name(s), kind, v, dt, fam, eps);
        r.s = sc[yi][static_cast<int>(s)].finish();
        out_.rows.push_back(std::move(r));
      }
    }
  }

  // The textbook shortcuts on the plain call's inputs (f32 and bf16 only).
  void run_shortcuts(simdnorm_kind kind, const simdnorm_desc& d,
                     const Dtypes& dt, const Operand& x, const Weights& wt,
                     const float* beta_f, float eps, size_t rows, size_t cols,
                     std::vector<Accumulator>* sc) {
    const size_t n = rows * cols;
    if (dt.y == SIMDNORM_F32) {
      ys_.resize(n);
      for (Shortcut s : kF32Shortcuts) {
        if (!shortcut_applies(s, kind, dt.y)) continue;
        run_shortcut(s, kind, x.f.data(), rows, cols, wt.gamma.f.data(), beta_f,
                     eps, ys_.data());
        (*sc)[static_cast<int>(s)].add_f32(
            ys_.data(), truth_.data(), xhat_.data(), x.f.data(),
            wt.gamma.f.data(), beta_f, rows, cols);
      }
    } else if (dt.y == SIMDNORM_BF16 && !cfg_.isas.empty()) {
      if (first_f32_.empty()) {
        // y = fp32 not selected: produce the best ISA's fp32 output now.
        simdnorm_desc df = d;
        df.y_type = SIMDNORM_F32;
        df.y = out_b_.y.data();
        if (simdnorm_set_isa(cfg_.isas[0].c_str()) != SIMDNORM_OK ||
            simdnorm_normalize(&df) != SIMDNORM_OK) {
          return;
        }
        first_f32_.assign(out_b_.y.begin(), out_b_.y.begin() + n);
      }
      tb_.resize(n);
      truncate_rows(first_f32_.data(), n, tb_.data());
      (*sc)[static_cast<int>(Shortcut::kTruncBf16)].add_half(
          SIMDNORM_BF16, tb_.data(), want_.data(), truth_.data(), xhat_.data(),
          x.f.data(), wt.gamma.f.data(), beta_f, rows, cols);
    }
  }

  // vLLM's form of the same call, on copies: residual = sum_out, and y = x
  // when the types allow. The number of elements of y, sum_out and y_scale
  // that differ from the out-of-place call just made (on the same ISA).
  uint64_t in_place_differences(const simdnorm_desc& d, const Operand& x,
                                const Operand& residual, simdnorm_dtype y,
                                size_t groups) {
    const size_t n = d.rows * d.cols;
    const size_t bytes = n * dtype_size(d.x_type);
    xw_.resize(n);
    rw_.resize(n);
    std::memcpy(xw_.data(), x.data(), bytes);
    std::memcpy(rw_.data(), residual.data(), bytes);
    simdnorm_desc e = d;
    e.x = xw_.data();
    e.residual = rw_.data();
    e.sum_out = rw_.data();
    e.y = y == d.x_type ? static_cast<void*>(xw_.data()) : out_b_.y.data();
    if (y == SIMDNORM_I8) e.y_scale = out_b_.scale.data();
    const simdnorm_status st = simdnorm_normalize(&e);
    if (st != SIMDNORM_OK) return n;  // all of it differs
    uint64_t diff = count_differences(y, d.y, e.y, n);
    diff += count_differences(d.x_type, d.sum_out, rw_.data(), n);
    if (y == SIMDNORM_I8) {
      diff += count_differences(SIMDNORM_F32, d.y_scale, e.y_scale, groups);
    }
    return diff;
  }

  // simdnorm_normalize_reference on the real descriptor (every field of the
  // variant) must give exactly the truth derived here, rounded once: a
  // disagreement would make the figures meaningless.
  void self_check(const simdnorm_desc& d, const Variant& v, simdnorm_dtype y,
                  const I8Truth& i8, const Operand& h,
                  const std::string& label) {
    const size_t n = d.rows * d.cols;
    simdnorm_desc dr = d;
    point_outputs(&dr, &out_b_, y, v);
    const simdnorm_status st = simdnorm_normalize_reference(&dr);
    if (st != SIMDNORM_OK) {
      error(label + ": simdnorm_normalize_reference returned " +
            simdnorm_status_string(st));
      return;
    }
    size_t bad = 0, first = 0;
    char what[200] = "";
    auto mark = [&](size_t i) {
      if (bad++ == 0) first = i;
    };
    if (y == SIMDNORM_F32) {
      const float* r = out_b_.y.data();
      for (size_t i = 0; i < n; ++i) {
        if (std::isfinite(truth_[i]) && r[i] != static_cast<float>(truth_[i])) {
          mark(i);
        }
      }
      if (bad) {
        std::snprintf(what, sizeof(what),
                      "truth %.17g, once-rounded %.9g, reference %.9g",
                      truth_[first], static_cast<float>(truth_[first]),
                      r[first]);
      }
    } else if (is_half(y)) {
      // The reference rounds the exact result, which the float64 truth may
      // not resolve next to a midpoint: the once-rounded truth or a
      // neighbour. Its bytes are what every ISA must give.
      const uint16_t* r = reinterpret_cast<const uint16_t*>(out_b_.y.data());
      for (size_t i = 0; i < n; ++i) {
        if (std::isfinite(truth_[i]) &&
            std::abs(bf16_order(r[i]) - bf16_order(want_[i])) > 1) {
          mark(i);
        }
        if (std::isfinite(truth_[i])) want_[i] = r[i];
      }
      if (bad) {
        std::snprintf(what, sizeof(what),
                      "truth %.17g, once-rounded 0x%04x, reference 0x%04x",
                      truth_[first], half_round_once(y, truth_[first]),
                      r[first]);
      }
    } else {
      // int8: the scale is the float64 one rounded to fp32, q within 1 of
      // q64 (the reference may divide by the fp32 scale).
      const int8_t* q = reinterpret_cast<const int8_t*>(out_b_.y.data());
      const float* s = out_b_.scale.data();
      for (size_t i = 0; i < n; ++i) {
        const size_t gi =
            (i / d.cols) * i8.groups_per_row + (i % d.cols) / i8.group;
        const double want = i8.scale[gi];
        if (std::isnan(want)) continue;
        if (!(std::fabs(s[gi] - want) <= 0x1.0p-23 * want) ||
            std::abs(q[i] - i8.q[i]) > 1) {
          mark(i);
        }
      }
      if (bad) {
        const size_t gi =
            (first / d.cols) * i8.groups_per_row + (first % d.cols) / i8.group;
        std::snprintf(what, sizeof(what),
                      "truth %.17g: q64 %d scale64 %.17g, reference q %d "
                      "scale %.9g",
                      truth_[first], i8.q[first], i8.scale[gi], q[first],
                      s[gi]);
      }
    }
    if (bad && self_check_messages_++ < kMaxMessagesPerKind) {
      char buf[400];
      std::snprintf(buf, sizeof(buf),
                    ": simdnorm_normalize_reference (%s) differs from the "
                    "float64 truth rounded once at %zu elements; first row "
                    "%zu col %zu: %s",
                    dtype_name(y), bad, first / d.cols, first % d.cols, what);
      error(label + buf);
    }
    if (v.fused_add) {
      const size_t diff =
          count_differences(d.x_type, out_b_.sum.data(), h.data(), n);
      if (diff && self_check_messages_++ < kMaxMessagesPerKind) {
        error(label +
              ": simdnorm_normalize_reference's sum_out differs from "
              "h = x + residual rounded once at " +
              std::to_string(diff) + " elements");
      }
    }
  }

  static ResultRow make_row(const std::string& isa, const std::string& method,
                            simdnorm_kind kind, const Variant& v,
                            const Dtypes& dt, const Family& fam, float eps) {
    ResultRow r;
    r.isa = isa;
    r.method = method;
    r.kind = kind;
    r.variant = v.name();
    r.dt = dt;
    r.family = fam.name;
    r.eps = eps;
    return r;
  }

  // Library rows by ISA (best first), then shortcuts by method; within each,
  // by variant, kind, dtype combination and family as configured.
  void order_rows() {
    auto index_of = [](const auto& list, const auto& pred) {
      return static_cast<size_t>(std::find_if(list.begin(), list.end(), pred) -
                                 list.begin());
    };
    auto rank = [&](const ResultRow& r) {
      size_t group;
      if (r.method == "simdnorm") {
        group = index_of(cfg_.isas,
                         [&](const std::string& s) { return s == r.isa; });
      } else {
        group = 1000;
        for (int s = 0; s < 4; ++s) {
          if (r.method == shortcut_name(static_cast<Shortcut>(s))) group += s;
        }
      }
      const size_t var = index_of(
          variant_order_, [&](const std::string& s) { return s == r.variant; });
      const size_t kind =
          index_of(cfg_.kinds, [&](simdnorm_kind k) { return k == r.kind; });
      const std::vector<Dtypes>& dts = dtype_order_[r.variant];
      const size_t dt =
          index_of(dts, [&](const Dtypes& d) { return d == r.dt; });
      const size_t fam = index_of(
          family_order_, [&](const std::string& f) { return f == r.family; });
      return std::make_tuple(group, var, kind, dt, fam);
    };
    std::stable_sort(out_.rows.begin(), out_.rows.end(),
                     [&](const ResultRow& a, const ResultRow& b) {
                       return rank(a) < rank(b);
                     });
  }

  const RunConfig& cfg_;
  Outputs out_a_, out_b_;  // the call under test; the reference and copies
  std::vector<float> ys_, first_f32_;
  std::vector<float> xw_, rw_;  // in-place copies of x and residual
  std::vector<uint16_t> want_, tb_;
  std::vector<double> truth_, xhat_, lo_, hi_;
  std::map<std::tuple<int, size_t, bool>, std::vector<float>> cache_;
  std::vector<std::string> variant_order_, family_order_;
  std::map<std::string, std::vector<Dtypes>> dtype_order_;
  RunOutput out_;
  size_t total_ = 0, done_ = 0;
  bool show_progress_ = false;
  size_t self_check_messages_ = 0;
};

}  // namespace

RunOutput run_all(const RunConfig& cfg) { return Runner(cfg).run(); }

}  // namespace simdnorm_accuracy
