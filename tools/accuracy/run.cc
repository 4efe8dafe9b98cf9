#include "run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

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

// Data of one (family, hidden size) after quantization to x's dtype.
struct Input {
  std::vector<float> xf;     // the values the kernels see, as float
  std::vector<uint16_t> xb;  // the same as bf16 bits when x is bf16
};

// Weights after quantization to the weights' dtype.
struct Weights {
  std::vector<float> gf, bf;
  std::vector<uint16_t> gb, bb;
};

class Runner {
 public:
  explicit Runner(const RunConfig& cfg) : cfg_(cfg) {}

  RunOutput run() {
    plan();
    for (simdnorm_kind kind : cfg_.kinds) {
      for (const Pair& p : pairs_) {
        for (const Family& fam : cfg_.families) {
          if (fam.bf16q && p.x == SIMDNORM_BF16) continue;
          run_family(kind, p, fam);
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

  void plan() {
    for (const Dtypes& d : cfg_.dtypes) {
      auto it = std::find_if(pairs_.begin(), pairs_.end(), [&](const Pair& p) {
        return p.x == d.x && p.w == d.w;
      });
      if (it == pairs_.end()) {
        pairs_.push_back(Pair{d.x, d.w, {}});
        it = pairs_.end() - 1;
      }
      it->ys.push_back(d.y);
    }
    for (Pair& p : pairs_) std::sort(p.ys.begin(), p.ys.end());
    for (simdnorm_kind k : cfg_.kinds) {
      (void)k;
      for (const Pair& p : pairs_) {
        for (const Family& f : cfg_.families) {
          if (!(f.bf16q && p.x == SIMDNORM_BF16)) total_ += cfg_.cols.size();
        }
      }
    }
    show_progress_ = cfg_.progress && stderr_is_tty();
  }

  size_t rows_for(const Family& fam) const {
    return fam.gen == Gen::kUser ? cfg_.user_rows : cfg_.rows;
  }

  const std::vector<float>& base_data(const Family& fam, size_t cols) {
    if (fam.gen == Gen::kUser) return cfg_.user_data;
    const auto key = std::make_pair(static_cast<int>(fam.gen), cols);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      it = cache_.emplace(key, generate(fam.gen, cfg_.rows, cols, cfg_.seed))
               .first;
    }
    return it->second;
  }

  Input make_input(const Family& fam, simdnorm_dtype x, size_t cols) {
    Input in;
    in.xf = base_data(fam, cols);
    if (fam.bf16q || x == SIMDNORM_BF16) {
      in.xb.resize(in.xf.size());
      for (size_t i = 0; i < in.xf.size(); ++i) {
        in.xb[i] = bf16_round(in.xf[i]);
        in.xf[i] = bf16_to_float(in.xb[i]);
      }
      if (x != SIMDNORM_BF16) in.xb.clear();
    }
    return in;
  }

  Weights make_weights_for(simdnorm_dtype w, size_t cols) {
    Weights wt;
    make_weights(cols, cfg_.seed, &wt.gf, &wt.bf);
    if (w == SIMDNORM_BF16) {
      wt.gb.resize(cols);
      wt.bb.resize(cols);
      for (size_t c = 0; c < cols; ++c) {
        wt.gb[c] = bf16_round(wt.gf[c]);
        wt.bb[c] = bf16_round(wt.bf[c]);
        wt.gf[c] = bf16_to_float(wt.gb[c]);
        wt.bf[c] = bf16_to_float(wt.bb[c]);
      }
    }
    return wt;
  }

  void error(const std::string& what) {
    if (out_.errors.size() < 1000) out_.errors.push_back(what);
  }

  std::string where(const char* isa, simdnorm_kind kind, const Dtypes& dt,
                    const Family& fam, size_t cols) const {
    return std::string(isa) + " " + kind_name(kind) + " " + dtypes_label(dt) +
           " " + fam.name + " cols " + std::to_string(cols);
  }

  void progress(simdnorm_kind kind, const Pair& p, const Family& fam,
                size_t cols) {
    ++done_;
    if (!show_progress_) return;
    std::fprintf(stderr, "\r[%4zu/%zu] %-9s x=%-4s w=%-4s %-26s cols %-6zu",
                 done_, total_, kind_name(kind), dtype_name(p.x),
                 dtype_name(p.w), fam.name.c_str(), cols);
    std::fflush(stderr);
  }

  void run_family(simdnorm_kind kind, const Pair& p, const Family& fam) {
    const size_t n_isa = cfg_.isas.size();
    const size_t n_y = p.ys.size();
    // [y index][isa] and [y index][shortcut]
    std::vector<std::vector<Accumulator>> lib(n_y,
                                              std::vector<Accumulator>(n_isa));
    std::vector<std::vector<Accumulator>> sc(n_y, std::vector<Accumulator>(4));
    std::vector<std::vector<std::vector<std::string>>> failed(
        n_y, std::vector<std::vector<std::string>>(n_isa));
    const float eps = fam.eps_zero ? 0.0f : cfg_.eps;
    for (size_t cols : cfg_.cols) {
      progress(kind, p, fam, cols);
      const size_t rows = rows_for(fam);
      const size_t n = rows * cols;
      const Input in = make_input(fam, p.x, cols);
      const Weights wt = make_weights_for(p.w, cols);
      const bool affine_beta = kind == SIMDNORM_LAYERNORM;
      const float* beta_f = affine_beta ? wt.bf.data() : nullptr;

      simdnorm_desc d{};
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      d.x_type = p.x;
      d.x = p.x == SIMDNORM_BF16 ? static_cast<const void*>(in.xb.data())
                                 : static_cast<const void*>(in.xf.data());
      d.param_type = p.w;
      d.gamma = p.w == SIMDNORM_BF16 ? static_cast<const void*>(wt.gb.data())
                                     : static_cast<const void*>(wt.gf.data());
      if (affine_beta) {
        d.beta = p.w == SIMDNORM_BF16 ? static_cast<const void*>(wt.bb.data())
                                      : static_cast<const void*>(wt.bf.data());
      }
      d.eps = eps;
      d.max_threads = cfg_.threads;

      // Buffers live across calls: no page faults per call.
      std::vector<float>& yf = yf_;
      std::vector<uint16_t>& yb = yb_;
      std::vector<double>& truth = truth_;
      std::vector<double>& xhat = xhat_;
      yf.resize(n);
      yb.resize(n);
      truth.resize(n);
      xhat.resize(n);
      d.y = yf.data();
      d.y_type = SIMDNORM_F32;
      const simdnorm::Status rs =
          simdnorm::reference_f64(d, truth.data(), xhat.data());
      if (rs != simdnorm::Status::kOk) {
        error(where("reference", kind, Dtypes{p.x, SIMDNORM_F32, p.w}, fam,
                    cols) +
              ": reference_f64 returned " + simdnorm::to_string(rs));
        continue;
      }
      std::vector<float>& first_f32 = first_f32_;  // the best ISA's fp32 output
      first_f32.clear();
      for (size_t yi = 0; yi < n_y; ++yi) {
        const simdnorm_dtype y = p.ys[yi];
        const Dtypes dt{p.x, y, p.w};
        d.y_type = y;
        d.y = y == SIMDNORM_BF16 ? static_cast<void*>(yb.data())
                                 : static_cast<void*>(yf.data());
        std::vector<uint16_t>& want = want_;
        if (y == SIMDNORM_BF16) {
          want.resize(n);
          for (size_t i = 0; i < n; ++i) want[i] = bf16_round_once(truth[i]);
          self_check(d, want, truth, where("reference", kind, dt, fam, cols));
          d.y = yb.data();
        }
        for (size_t ii = 0; ii < n_isa; ++ii) {
          const char* isa = cfg_.isas[ii].c_str();
          const simdnorm_status ss = simdnorm_set_isa(isa);
          simdnorm_status st = ss;
          if (ss == SIMDNORM_OK) st = simdnorm_normalize(&d);
          if (st != SIMDNORM_OK) {
            const std::string msg = where(isa, kind, dt, fam, cols) + ": " +
                                    (ss != SIMDNORM_OK ? "simdnorm_set_isa"
                                                       : "simdnorm_normalize") +
                                    " returned " + simdnorm_status_string(st);
            error(msg);
            failed[yi][ii].push_back(msg);
            continue;
          }
          if (y == SIMDNORM_F32) {
            lib[yi][ii].add_f32(yf.data(), truth.data(), xhat.data(),
                                in.xf.data(), wt.gf.data(), beta_f, rows, cols);
            if (ii == 0) first_f32 = yf;
          } else {
            lib[yi][ii].add_bf16(yb.data(), want.data(), truth.data(),
                                 xhat.data(), in.xf.data(), wt.gf.data(),
                                 beta_f, rows, cols);
          }
        }
        if (!cfg_.shortcuts) continue;
        if (y == SIMDNORM_F32) {
          std::vector<float>& ys = ys_;
          ys.resize(n);
          for (Shortcut s : kF32Shortcuts) {
            if (!shortcut_applies(s, kind, y)) continue;
            run_shortcut(s, kind, in.xf.data(), rows, cols, wt.gf.data(),
                         beta_f, eps, ys.data());
            sc[yi][static_cast<int>(s)].add_f32(
                ys.data(), truth.data(), xhat.data(), in.xf.data(),
                wt.gf.data(), beta_f, rows, cols);
          }
        } else if (n_isa > 0) {
          if (first_f32.empty()) {
            // y = fp32 not selected: produce the best ISA's fp32 output now.
            simdnorm_desc df = d;
            df.y_type = SIMDNORM_F32;
            df.y = yf.data();
            if (simdnorm_set_isa(cfg_.isas[0].c_str()) != SIMDNORM_OK ||
                simdnorm_normalize(&df) != SIMDNORM_OK) {
              continue;
            }
            first_f32 = yf;
          }
          std::vector<uint16_t>& tb = tb_;
          tb.resize(n);
          truncate_rows(first_f32.data(), n, tb.data());
          sc[yi][static_cast<int>(Shortcut::kTruncBf16)].add_bf16(
              tb.data(), want.data(), truth.data(), xhat.data(), in.xf.data(),
              wt.gf.data(), beta_f, rows, cols);
        }
      }
    }
    // Collect the rows of this family.
    for (size_t yi = 0; yi < n_y; ++yi) {
      const Dtypes dt{p.x, p.ys[yi], p.w};
      for (size_t ii = 0; ii < n_isa; ++ii) {
        ResultRow r = make_row(cfg_.isas[ii], "simdnorm", kind, dt, fam, eps);
        r.s = lib[yi][ii].finish();
        r.checked = true;
        check_bounds(&r);
        for (const std::string& m : failed[yi][ii]) r.violations.push_back(m);
        out_.rows.push_back(std::move(r));
      }
      if (!cfg_.shortcuts) continue;
      for (Shortcut s : {Shortcut::kOnePassF32, Shortcut::kTwoPassF32,
                         Shortcut::kEpsOutside, Shortcut::kTruncBf16}) {
        if (!shortcut_applies(s, kind, dt.y)) continue;
        if (s == Shortcut::kTruncBf16 && n_isa == 0) continue;
        ResultRow r =
            make_row("shortcut", shortcut_name(s), kind, dt, fam, eps);
        r.s = sc[yi][static_cast<int>(s)].finish();
        out_.rows.push_back(std::move(r));
      }
    }
  }

  // simdnorm_normalize_reference must return exactly the float64 truth
  // rounded once; a disagreement would make the bf16 figures meaningless.
  void self_check(const simdnorm_desc& d, const std::vector<uint16_t>& want,
                  const std::vector<double>& truth, const std::string& label) {
    std::vector<uint16_t>& ref = ref_;
    ref.resize(want.size());
    simdnorm_desc dr = d;
    dr.y = ref.data();
    const simdnorm_status st = simdnorm_normalize_reference(&dr);
    if (st != SIMDNORM_OK) {
      error(label + ": simdnorm_normalize_reference returned " +
            simdnorm_status_string(st));
      return;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!std::isfinite(truth[i])) continue;
      if (ref[i] != want[i]) {
        if (bad++ == 0) first = i;
      }
    }
    if (bad && self_check_messages_++ < kMaxMessagesPerKind) {
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    ": simdnorm_normalize_reference (bf16) differs from the "
                    "float64 truth rounded once at %zu elements; first row "
                    "%zu col %zu: truth %.17g, once-rounded 0x%04x, "
                    "reference 0x%04x",
                    bad, first / d.cols, first % d.cols, truth[first],
                    want[first], ref[first]);
      error(label + buf);
    }
  }

  static ResultRow make_row(const std::string& isa, const std::string& method,
                            simdnorm_kind kind, const Dtypes& dt,
                            const Family& fam, float eps) {
    ResultRow r;
    r.isa = isa;
    r.method = method;
    r.kind = kind;
    r.dt = dt;
    r.family = fam.name;
    r.eps = eps;
    return r;
  }

  // Library rows by ISA (best first), then shortcuts by method; within each,
  // by kind, dtype combination and family as configured.
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
      const size_t kind =
          index_of(cfg_.kinds, [&](simdnorm_kind k) { return k == r.kind; });
      const size_t dt = index_of(cfg_.dtypes, [&](const Dtypes& d) {
        return d.x == r.dt.x && d.y == r.dt.y && d.w == r.dt.w;
      });
      const size_t fam = index_of(
          cfg_.families, [&](const Family& f) { return f.name == r.family; });
      return std::make_tuple(group, kind, dt, fam);
    };
    std::stable_sort(out_.rows.begin(), out_.rows.end(),
                     [&](const ResultRow& a, const ResultRow& b) {
                       return rank(a) < rank(b);
                     });
  }

  const RunConfig& cfg_;
  std::vector<float> yf_, ys_, first_f32_;
  std::vector<uint16_t> yb_, want_, tb_, ref_;
  std::vector<double> truth_, xhat_;
  std::vector<Pair> pairs_;
  std::map<std::pair<int, size_t>, std::vector<float>> cache_;
  RunOutput out_;
  size_t total_ = 0, done_ = 0;
  bool show_progress_ = false;
  size_t self_check_messages_ = 0;
};

}  // namespace

RunOutput run_all(const RunConfig& cfg) { return Runner(cfg).run(); }

}  // namespace simdnorm_accuracy
