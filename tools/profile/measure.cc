#include "measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "peers.h"
#include "problem.h"

namespace simdnorm_profile {
namespace {

using Clock = std::chrono::steady_clock;
using simdnorm_peers::Problem;
using simdnorm_peers::ProblemShape;

struct Runner {
  ImplResult result;
  std::function<void(size_t)> run;  // `calls` calls back to back
  size_t calls_per_batch = 1;
  std::vector<double> samples;  // ns per call, one per batch
};

double TimeNs(const std::function<void(size_t)>& run, size_t calls) {
  const auto t0 = Clock::now();
  run(calls);
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

// After a multi-threaded batch, idle workers keep spinning for a while and
// would take the second core from the next implementation's batch: TBB's
// for ~0.2 ms, libgomp's (oneDNN's OpenMP) for ~3-5 ms here (GOMP_SPINCOUNT,
// unless OMP_WAIT_POLICY=passive). Sleep that off between batches.
void Settle(const Config& c, ImplType t) {
  if (c.threads == 1) return;
  std::this_thread::sleep_for(
      std::chrono::milliseconds(t == ImplType::kOneDnn ? 10 : 1));
}

// Calls per batch so that one batch lasts about batch_ns.
size_t Calibrate(const std::function<void(size_t)>& run, double batch_ns) {
  run(1);  // warm-up: caches, TBB workers, oneDNN's JIT
  const double target = batch_ns / 4;
  size_t n = 1;
  double t = TimeNs(run, n);
  while (t < target && n < (size_t{1} << 30)) {
    n *= t < target / 16 ? 8 : 2;
    t = TimeNs(run, n);
  }
  const double per_call = std::max(t / static_cast<double>(n), 1.0);
  return std::max<size_t>(1, static_cast<size_t>(batch_ns / per_call + 0.5));
}

float F16ToFloat(uint16_t b) {
  const int exp = (b >> 10) & 0x1F;
  const int man = b & 0x3FF;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man + 1024), exp - 25);
  }
  return (b & 0x8000u) ? -v : v;
}

float LoadAsFloat(const void* p, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(p)[i];
  if (t == SIMDNORM_I8) return static_cast<const int8_t*>(p)[i];
  uint16_t b;
  std::memcpy(&b, static_cast<const char*>(p) + 2 * i, 2);
  if (t == SIMDNORM_F16) return F16ToFloat(b);
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int Mantissa(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? 7 : (t == SIMDNORM_F16 ? 10 : 23);
}

struct Check {
  double err = 0.0;  // ulps of y (int8: |q - q_reference|)
  bool ok = true;
  std::string detail;  // why not ok beyond err
};

// The float64 truth (rounded to y's dtype by the library's reference) for
// the first rows and the last row: where the row partition starts and ends.
// With a residual the reference's sum_out is kept too, with int8 output its
// scales.
class Checker {
 public:
  explicit Checker(const simdnorm_desc& d) : d_(d) {
    const size_t head = std::min<size_t>(d.rows, 64);
    rows_.clear();
    for (size_t r = 0; r < head; ++r) rows_.push_back(r);
    if (d.rows > head) rows_.push_back(d.rows - 1);
    const size_t n = rows_.size() * d.cols;
    const size_t ysz = simdnorm_peers::dtype_size(d.y_type);
    const size_t xsz = simdnorm_peers::dtype_size(d.x_type);
    spr_ = simdnorm_peers::scales_per_row(d);
    ref_ = simdnorm_peers::AllocateAligned(n * ysz);
    if (d.sum_out) sum_ = simdnorm_peers::AllocateAligned(n * xsz);
    if (spr_) scale_ = simdnorm_peers::AllocateAligned(rows_.size() * spr_ * 4);
    // Rows [0, head) in one call, then the last one.
    simdnorm_desc r = d;
    r.rows = head;
    r.y = ref_.get();
    r.y_stride = 0;
    r.sum_out = sum_.get();
    r.sum_out_stride = 0;
    r.y_scale = static_cast<float*>(scale_.get());
    r.max_threads = 1;
    status_ = simdnorm_normalize_reference(&r);
    if (status_ == SIMDNORM_OK && rows_.size() > head) {
      const size_t last = d.rows - 1;
      const size_t xs = d.x_stride ? d.x_stride : d.cols;
      const size_t rs = d.residual_stride ? d.residual_stride : d.cols;
      r.rows = 1;
      r.x = static_cast<const char*>(d.x) + last * xs * xsz;
      if (d.residual) {
        r.residual = static_cast<const char*>(d.residual) + last * rs * xsz;
      }
      r.y = static_cast<char*>(ref_.get()) + head * d.cols * ysz;
      if (d.sum_out) {
        r.sum_out = static_cast<char*>(sum_.get()) + head * d.cols * xsz;
      }
      if (spr_) r.y_scale = static_cast<float*>(scale_.get()) + head * spr_;
      status_ = simdnorm_normalize_reference(&r);
    }
  }

  simdnorm_status status() const { return status_; }

  // d.y (and sum_out, y_scale) against the reference: the largest error in
  // ulps of y's dtype at max(|reference|, 1) (int8: of q), infinity for NaN
  // where the reference is not; ok when within `tol` and the scales and
  // sum_out agree.
  Check Compare(double tol, double scale_tol) const {
    Check c;
    const size_t ys = d_.y_stride ? d_.y_stride : d_.cols;
    const bool i8 = d_.y_type == SIMDNORM_I8;
    for (size_t i = 0; i < rows_.size() && std::isfinite(c.err); ++i) {
      for (size_t k = 0; k < d_.cols; ++k) {
        const double ref = LoadAsFloat(ref_.get(), d_.y_type, i * d_.cols + k);
        const double got = LoadAsFloat(d_.y, d_.y_type, rows_[i] * ys + k);
        if (std::isnan(got) != std::isnan(ref)) {
          c.err = INFINITY;
          break;
        }
        if (std::isnan(ref)) continue;
        double ulp = 1.0;
        if (!i8) {
          const double mag = std::max(std::fabs(ref), 1.0);
          ulp = std::ldexp(1.0, std::ilogb(mag) - Mantissa(d_.y_type));
        }
        c.err = std::max(c.err, std::fabs(got - ref) / ulp);
      }
    }
    c.ok = c.err <= tol;
    if (spr_) {
      double worst = 0.0;
      for (size_t i = 0; i < rows_.size(); ++i) {
        for (size_t g = 0; g < spr_; ++g) {
          const double ref =
              static_cast<const float*>(scale_.get())[i * spr_ + g];
          const double got = d_.y_scale[rows_[i] * spr_ + g];
          if (std::isnan(ref) && std::isnan(got)) continue;
          const double rel =
              got == ref ? 0.0 : std::fabs(got - ref) / std::fabs(ref);
          if (!(rel <= worst)) worst = rel;
        }
      }
      if (!(worst <= scale_tol)) {
        c.ok = false;
        c.detail =
            "an int8 scale is off by " + std::to_string(worst) + " relative";
      }
    }
    if (d_.sum_out) {
      const size_t xsz = simdnorm_peers::dtype_size(d_.x_type);
      const size_t ss = d_.sum_out_stride ? d_.sum_out_stride : d_.cols;
      size_t bad = 0;
      for (size_t i = 0; i < rows_.size(); ++i) {
        for (size_t k = 0; k < d_.cols; ++k) {
          const float a = LoadAsFloat(sum_.get(), d_.x_type, i * d_.cols + k);
          const float b = LoadAsFloat(d_.sum_out, d_.x_type, rows_[i] * ss + k);
          const bool same = std::memcmp(static_cast<const char*>(sum_.get()) +
                                            (i * d_.cols + k) * xsz,
                                        static_cast<const char*>(d_.sum_out) +
                                            (rows_[i] * ss + k) * xsz,
                                        xsz) == 0;
          if (!same && !(std::isnan(a) && std::isnan(b))) ++bad;
        }
      }
      if (bad) {
        c.ok = false;
        c.detail += (c.detail.empty() ? "" : "; ") +
                    std::string("sum_out differs from the reference at ") +
                    std::to_string(bad) + " elements";
      }
    }
    return c;
  }

 private:
  simdnorm_desc d_;
  std::vector<size_t> rows_;
  size_t spr_ = 0;
  simdnorm_peers::Buffer ref_, sum_, scale_;
  simdnorm_status status_ = SIMDNORM_OK;
};

// The simdnorm kernels' tolerance against the reference: they compute in
// float and round once: within a few ulps for f32 outputs, one rounding step
// for bf16 and f16, one q for int8. Hugging Face's order rounds xhat to a
// 16-bit x first, which near a tie may go either way: two ulps of x more.
void Tolerances(const simdnorm_desc& d, double* tol, double* scale_tol) {
  *tol = d.y_type == SIMDNORM_F32 ? 16.0 : 1.0;
  *scale_tol = 1e-6 + 0x1.0p-23;  // the bound, and fl32 of the reference's
  if ((d.flags & SIMDNORM_ROUND_NORMALIZED) && d.x_type != SIMDNORM_F32) {
    const int mx = Mantissa(d.x_type);
    if (d.y_type == SIMDNORM_I8) {
      *tol += 1.0;
      *scale_tol += std::ldexp(2.0, -mx);
    } else {
      *tol += std::ldexp(2.0, Mantissa(d.y_type) - mx);
    }
  }
}

}  // namespace

ConfigResult MeasureConfig(const Config& c, const MeasureSettings& s,
                           const Progress& progress) {
  ProblemShape shape;
  shape.kind = c.kind;
  shape.rows = c.rows;
  shape.cols = c.cols;
  shape.x_type = c.dtypes.x;
  shape.y_type = c.dtypes.y;
  shape.param_type = c.dtypes.param;
  shape.gamma = true;
  shape.beta = c.kind == SIMDNORM_LAYERNORM;  // RMSNorm: gamma only
  shape.max_threads = c.threads;
  shape.residual = c.variant.fused_add;
  shape.quant_group = c.variant.quant_group;
  shape.gamma_offset = c.variant.gemma ? 1.0f : 0.0f;
  shape.flags = c.variant.hf_round ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;
  shape.x_offset = c.offset.x;
  shape.y_offset = c.offset.y;
  Problem p(shape);
  const simdnorm_desc d = p.desc();
  const size_t elems = d.rows * d.cols;
  const size_t ybytes = elems * simdnorm_peers::dtype_size(d.y_type);
  const size_t sbytes = elems * simdnorm_peers::dtype_size(d.x_type);
  const size_t scale_bytes = d.rows * simdnorm_peers::scales_per_row(d) * 4;
  // NaN (0xFF bytes) in every output: unwritten outputs show.
  auto poison = [&]() {
    std::memset(d.y, 0xFF, ybytes);
    if (d.sum_out) std::memset(d.sum_out, 0xFF, sbytes);
    if (d.y_scale) std::memset(d.y_scale, 0xFF, scale_bytes);
  };

  ConfigResult out;
  out.config = c;
  out.moved_bytes = simdnorm_peers::moved_bytes(d);

  std::vector<Runner> runners;
  for (const std::string& isa : s.isas) {
    Runner r;
    r.result.name = isa;
    r.result.type = ImplType::kSimdnorm;
    r.result.bytes = out.moved_bytes;
    r.run = [d, isa](size_t calls) {
      simdnorm_set_isa(isa.c_str());
      for (size_t i = 0; i < calls; ++i) simdnorm_normalize(&d);
    };
    runners.push_back(std::move(r));
  }
  std::shared_ptr<simdnorm_peers::OneDnnLayerNorm> onednn;
  if (s.peers) {
    Runner m;
    m.result.name = "memcpy";
    m.result.type = ImplType::kMemcpy;
    m.result.bytes = out.moved_bytes;
    void* src = p.x();
    void* dst = p.y();
    m.run = [d, src, dst](size_t calls) {
      for (size_t i = 0; i < calls; ++i)
        simdnorm_peers::copy_bytes(d, src, dst);
    };
    runners.push_back(std::move(m));

    // The hand-written loop and oneDNN compute the plain call only.
    if (c.variant.plain()) {
      Runner l;
      l.result.name = "loop";
      l.result.type = ImplType::kLoop;
      l.result.bytes = out.moved_bytes;
      l.run = [d](size_t calls) {
        for (size_t i = 0; i < calls; ++i) simdnorm_peers::naive_normalize(d);
      };
      runners.push_back(std::move(l));
    }

    if (c.kind == SIMDNORM_LAYERNORM && c.variant.plain() &&
        simdnorm_peers::onednn_built()) {
      Runner o;
      o.result.name = "oneDNN";
      o.result.type = ImplType::kOneDnn;
      o.result.bytes = out.moved_bytes;
      std::string why;
      onednn.reset(simdnorm_peers::OneDnnLayerNorm::Create(d, &why).release());
      if (!onednn) {
        o.result.error = why;
      } else {
        if (c.threads == 1 && !simdnorm_peers::onednn_can_limit_threads()) {
          o.result.note = "oneDNN could not be limited to 1 thread";
        }
        o.run = [onednn](size_t calls) { onednn->Run(calls); };
      }
      runners.push_back(std::move(o));
    }

    // The fused variants against the same work in separate passes.
    if ((c.variant.fused_add || c.variant.int8) && !s.isas.empty()) {
      Runner u;
      u.result.name = "unfused";
      u.result.type = ImplType::kUnfused;
      u.result.bytes = simdnorm_peers::unfused_moved_bytes(d);
      float* scratch = p.scratch();
      const std::string isa = s.isas.front();
      u.run = [d, scratch, isa](size_t calls) {
        simdnorm_set_isa(isa.c_str());
        for (size_t i = 0; i < calls; ++i) {
          simdnorm_peers::unfused_normalize(d, scratch);
        }
      };
      runners.push_back(std::move(u));
    }
  }

  // Status and accuracy, once per implementation, before timing.
  std::unique_ptr<Checker> checker;
  if (s.check) {
    checker = std::make_unique<Checker>(d);
    if (checker->status() != SIMDNORM_OK) {
      progress(std::string("reference failed: ") +
               simdnorm_status_string(checker->status()));
      checker.reset();
    }
  }
  double tol, scale_tol;
  Tolerances(d, &tol, &scale_tol);
  std::vector<Runner> kept;
  for (Runner& r : runners) {
    if (!r.result.error.empty()) {
      kept.push_back(std::move(r));
      continue;
    }
    poison();
    if (r.result.type == ImplType::kSimdnorm) {
      if (simdnorm_set_isa(r.result.name.c_str()) != SIMDNORM_OK) {
        r.result.error = "simdnorm_set_isa(\"" + r.result.name + "\") failed";
        kept.push_back(std::move(r));
        continue;
      }
      const simdnorm_status st = simdnorm_normalize(&d);
      if (st != SIMDNORM_OK) {
        r.result.error = simdnorm_status_string(st);
        kept.push_back(std::move(r));
        continue;
      }
    } else if (r.result.type == ImplType::kLoop) {
      // The loop takes what it takes (f32 and bf16): skip the others.
      if (!simdnorm_peers::naive_normalize(d)) continue;
    } else if (r.result.type == ImplType::kUnfused) {
      std::string why;
      simdnorm_set_isa(s.isas.front().c_str());
      if (!simdnorm_peers::unfused_normalize(d, p.scratch(), &why)) {
        r.result.error = "unfused peer: " + why;
        kept.push_back(std::move(r));
        continue;
      }
    } else {
      r.run(1);
    }
    if (checker && r.result.type != ImplType::kMemcpy) {
      const Check ck = checker->Compare(tol, scale_tol);
      r.result.err_ulp = ck.err;
      if (r.result.type == ImplType::kSimdnorm) {
        r.result.err_ok = ck.ok;
        r.result.err_detail = ck.detail;
      }
    }
    kept.push_back(std::move(r));
  }
  runners = std::move(kept);

  Settle(c, ImplType::kOneDnn);

  // Calibrate, then interleave the batches so drift hits all alike.
  const double batch_ns = s.batch_ms * 1e6;
  for (Runner& r : runners) {
    if (!r.result.error.empty()) continue;
    progress(r.result.name + " calibrating");
    r.calls_per_batch = Calibrate(r.run, batch_ns);
    Settle(c, r.result.type);
  }
  const size_t n = runners.size();
  for (size_t rep = 0; rep < s.reps; ++rep) {
    progress("batch " + std::to_string(rep + 1) + "/" + std::to_string(s.reps));
    for (size_t k = 0; k < n; ++k) {
      Runner& r = runners[(rep + k) % n];  // rotate the order every round
      if (!r.result.error.empty()) continue;
      const double t = TimeNs(r.run, r.calls_per_batch);
      r.samples.push_back(t / static_cast<double>(r.calls_per_batch));
      Settle(c, r.result.type);
    }
  }
  simdnorm_set_isa("auto");

  for (Runner& r : runners) {
    if (!r.samples.empty()) {
      std::vector<double>& v = r.samples;
      std::sort(v.begin(), v.end());
      const size_t m = v.size();
      r.result.median_ns = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
      r.result.min_ns = v.front();
    }
    out.impls.push_back(std::move(r.result));
  }
  return out;
}

}  // namespace simdnorm_profile
