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

float LoadAsFloat(const void* p, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(p)[i];
  uint16_t b;
  std::memcpy(&b, static_cast<const char*>(p) + 2 * i, 2);
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The float64 truth (rounded to y's dtype by the library's reference) for
// the first rows and the last row: where the row partition starts and ends.
class Checker {
 public:
  explicit Checker(const simdnorm_desc& d) : d_(d) {
    const size_t head = std::min<size_t>(d.rows, 64);
    rows_.clear();
    for (size_t r = 0; r < head; ++r) rows_.push_back(r);
    if (d.rows > head) rows_.push_back(d.rows - 1);
    const size_t ysz = simdnorm_peers::dtype_size(d.y_type);
    ref_ = simdnorm_peers::AllocateAligned(rows_.size() * d.cols * ysz);
    // Rows [0, head) in one call, then the last one.
    simdnorm_desc r = d;
    r.rows = head;
    r.y = ref_.get();
    r.y_stride = 0;
    r.max_threads = 1;
    status_ = simdnorm_normalize_reference(&r);
    if (status_ == SIMDNORM_OK && rows_.size() > head) {
      const size_t xsz = simdnorm_peers::dtype_size(d.x_type);
      r.rows = 1;
      r.x = static_cast<const char*>(d.x) + (d.rows - 1) * d.cols * xsz;
      r.y = static_cast<char*>(ref_.get()) + head * d.cols * ysz;
      status_ = simdnorm_normalize_reference(&r);
    }
  }

  simdnorm_status status() const { return status_; }

  // The largest error of d.y against the reference, in ulps of y's dtype
  // at max(|reference|, 1); infinity for NaN where the reference is not.
  double ErrUlp() const {
    const int mant = d_.y_type == SIMDNORM_BF16 ? 7 : 23;
    double worst = 0.0;
    for (size_t i = 0; i < rows_.size(); ++i) {
      for (size_t c = 0; c < d_.cols; ++c) {
        const double ref = LoadAsFloat(ref_.get(), d_.y_type, i * d_.cols + c);
        const double got = LoadAsFloat(d_.y, d_.y_type, rows_[i] * d_.cols + c);
        if (std::isnan(got) != std::isnan(ref)) return INFINITY;
        if (std::isnan(ref)) continue;
        const double mag = std::max(std::fabs(ref), 1.0);
        const double ulp = std::ldexp(1.0, std::ilogb(mag) - mant);
        worst = std::max(worst, std::fabs(got - ref) / ulp);
      }
    }
    return worst;
  }

 private:
  simdnorm_desc d_;
  std::vector<size_t> rows_;
  simdnorm_peers::Buffer ref_;
  simdnorm_status status_ = SIMDNORM_OK;
};

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
  Problem p(shape);
  const simdnorm_desc d = p.desc();
  const size_t ybytes = d.rows * d.cols * simdnorm_peers::dtype_size(d.y_type);

  ConfigResult out;
  out.config = c;
  out.moved_bytes = simdnorm_peers::moved_bytes(d);

  std::vector<Runner> runners;
  for (const std::string& isa : s.isas) {
    Runner r;
    r.result.name = isa;
    r.result.type = ImplType::kSimdnorm;
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
    void* src = p.x();
    void* dst = p.y();
    m.run = [d, src, dst](size_t calls) {
      for (size_t i = 0; i < calls; ++i)
        simdnorm_peers::copy_bytes(d, src, dst);
    };
    runners.push_back(std::move(m));

    Runner l;
    l.result.name = "loop";
    l.result.type = ImplType::kLoop;
    l.run = [d](size_t calls) {
      for (size_t i = 0; i < calls; ++i) simdnorm_peers::naive_normalize(d);
    };
    runners.push_back(std::move(l));

    if (c.kind == SIMDNORM_LAYERNORM && simdnorm_peers::onednn_built()) {
      Runner o;
      o.result.name = "oneDNN";
      o.result.type = ImplType::kOneDnn;
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
  for (Runner& r : runners) {
    if (!r.result.error.empty()) continue;
    if (r.result.type == ImplType::kSimdnorm) {
      if (simdnorm_set_isa(r.result.name.c_str()) != SIMDNORM_OK) {
        r.result.error = "simdnorm_set_isa(\"" + r.result.name + "\") failed";
        continue;
      }
      std::memset(p.y(), 0xFF, ybytes);  // NaN: unwritten outputs show
      const simdnorm_status st = simdnorm_normalize(&d);
      if (st != SIMDNORM_OK) {
        r.result.error = simdnorm_status_string(st);
        continue;
      }
    } else {
      std::memset(p.y(), 0xFF, ybytes);
      r.run(1);
    }
    if (checker && r.result.type != ImplType::kMemcpy) {
      r.result.err_ulp = checker->ErrUlp();
      if (r.result.type == ImplType::kSimdnorm) {
        // The kernels compute in float and round once: within a few ulps
        // for f32 outputs, within one rounding step for bf16 outputs.
        const double tol = d.y_type == SIMDNORM_BF16 ? 1.0 : 16.0;
        r.result.err_ok = r.result.err_ulp <= tol;
      }
    }
  }

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
