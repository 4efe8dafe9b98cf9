// The measurements: each problem's implementations on the same buffers,
// checked once against the reference, then timed in interleaved batches.
// --op: GroupNorm, BatchNorm and the backward passes per ISA on the shapes
// of realistic models (bench/peers/family_problem.h), beside memcpy of the
// call's bytes; their outputs are not checked here: simdnorm-accuracy --op
// does that.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "family_problem.h"
#include "peers.h"
#include "problem.h"
#include "profile.h"

namespace simdnorm_profile {
namespace {

using Clock = std::chrono::steady_clock;
using simdnorm_peers::dtype_size;
using simdnorm_peers::load_float;
using simdnorm_peers::shape_name;

double TimeNs(const std::function<void(size_t)>& run, size_t calls) {
  const auto t0 = Clock::now();
  run(calls);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

// After a multi-threaded batch, idle workers keep spinning for a while and
// would take the second core from the next implementation's batch: TBB's
// for ~0.2 ms, libgomp's (oneDNN's OpenMP) for ~3-5 ms here (GOMP_SPINCOUNT,
// unless OMP_WAIT_POLICY=passive). Sleep that off between batches.
void Settle(size_t threads, ImplType t) {
  if (threads == 1) return;
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

int Mantissa(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? 7 : (t == SIMDNORM_F16 ? 10 : 23);
}

// The float64 truth (rounded to y's dtype by the library's reference) for
// the first rows and the last row: where the row partition starts and ends.
// With a residual the reference's sum_out is kept too, with int8 output its
// scales.
struct Checker {
  simdnorm_desc d;
  std::vector<size_t> rows;
  size_t spr = simdnorm_peers::scales_per_row(d);
  simdnorm_peers::Buffer ref, sum, scale;
  simdnorm_status status = SIMDNORM_OK;
  // The simdnorm kernels' tolerance against the reference: they compute in
  // float and round once: within a few ulps for f32 outputs, one rounding
  // step for bf16 and f16, one q for int8. Hugging Face's order rounds xhat
  // to a 16-bit x first, which near a tie may go either way: two ulps of x
  // more (set below).
  double tol = d.y_type == SIMDNORM_F32 ? 16.0 : 1.0;
  double scale_tol =
      1e-6 + 0x1.0p-23;  // the bound, and fl32 of the reference's

  explicit Checker(const simdnorm_desc& desc) : d(desc) {
    if ((d.flags & SIMDNORM_ROUND_NORMALIZED) && d.x_type != SIMDNORM_F32) {
      const int mx = Mantissa(d.x_type);
      if (d.y_type == SIMDNORM_I8) {
        tol += 1.0;
        scale_tol += std::ldexp(2.0, -mx);
      } else {
        tol += std::ldexp(2.0, Mantissa(d.y_type) - mx);
      }
    }
    const size_t head = std::min<size_t>(d.rows, 64);
    for (size_t r = 0; r < head; ++r) rows.push_back(r);
    if (d.rows > head) rows.push_back(d.rows - 1);
    const size_t n = rows.size() * d.cols, xsz = dtype_size(d.x_type);
    const size_t ysz = dtype_size(d.y_type);
    ref = simdnorm_peers::AllocateAligned(n * ysz);
    if (d.sum_out) sum = simdnorm_peers::AllocateAligned(n * xsz);
    if (spr) scale = simdnorm_peers::AllocateAligned(rows.size() * spr * 4);
    // One row a call (the reference computes row by row anyway).
    const size_t xs = d.x_stride ? d.x_stride : d.cols;
    const size_t rs = d.residual_stride ? d.residual_stride : d.cols;
    for (size_t i = 0; i < rows.size() && status == SIMDNORM_OK; ++i) {
      simdnorm_desc r = d;
      r.rows = r.max_threads = 1;
      r.x = static_cast<const char*>(d.x) + rows[i] * xs * xsz;
      if (d.residual) {
        r.residual = static_cast<const char*>(d.residual) + rows[i] * rs * xsz;
      }
      r.y = static_cast<char*>(ref.get()) + i * d.cols * ysz;
      if (d.sum_out) {
        r.sum_out = static_cast<char*>(sum.get()) + i * d.cols * xsz;
      }
      if (spr) r.y_scale = static_cast<float*>(scale.get()) + i * spr;
      status = simdnorm_normalize_reference(&r);
    }
  }

  // d.y against the reference into res->err_ulp: the largest error in ulps
  // of y's dtype at max(|reference|, 1) (int8: of q), infinity for NaN
  // where the reference is not. For simdnorm also err_ok: within `tol`, and
  // the scales and sum_out agree (err_detail says where not).
  void Compare(ImplResult* res) const {
    double err = 0.0;
    const size_t ys = d.y_stride ? d.y_stride : d.cols;
    for (size_t i = 0; i < rows.size() && std::isfinite(err); ++i) {
      for (size_t k = 0; k < d.cols; ++k) {
        const double want = load_float(ref.get(), d.y_type, i * d.cols + k);
        const double got = load_float(d.y, d.y_type, rows[i] * ys + k);
        if (std::isnan(got) != std::isnan(want)) {
          err = INFINITY;
          break;
        }
        if (std::isnan(want)) continue;
        const double ulp =
            d.y_type == SIMDNORM_I8
                ? 1.0
                : std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1.0)) -
                                      Mantissa(d.y_type));
        err = std::max(err, std::fabs(got - want) / ulp);
      }
    }
    res->err_ulp = err;
    if (res->type != ImplType::kSimdnorm) return;
    res->err_ok = err <= tol;
    double worst = 0.0;  // int8 scales: the largest relative error
    for (size_t i = 0; i < rows.size() * spr; ++i) {
      const double want = static_cast<const float*>(scale.get())[i];
      const double got = d.y_scale[rows[i / spr] * spr + i % spr];
      if (std::isnan(want) && std::isnan(got)) continue;
      const double rel =
          got == want ? 0.0 : std::fabs(got - want) / std::fabs(want);
      if (!(rel <= worst)) worst = rel;
    }
    if (!(worst <= scale_tol)) {
      res->err_ok = false;
      res->err_detail =
          "an int8 scale is off by " + std::to_string(worst) + " relative";
    }
    size_t bad = 0;  // sum_out elements off the reference
    const size_t ss = d.sum_out_stride ? d.sum_out_stride : d.cols;
    for (size_t i = 0; d.sum_out && i < rows.size(); ++i) {
      for (size_t k = 0; k < d.cols; ++k) {
        bad += !simdnorm_tools::same_element(
            d.x_type, sum.get(), i * d.cols + k, d.sum_out, rows[i] * ss + k);
      }
    }
    if (bad) {
      res->err_ok = false;
      res->err_detail += (res->err_detail.empty() ? "" : "; ") +
                         std::string("sum_out differs from the reference at ") +
                         std::to_string(bad) + " elements";
    }
  }
};

// One implementation to time: `calls` calls back to back.
struct Runner {
  ImplResult result;
  std::function<void(size_t)> run;
  size_t calls_per_batch = 1;
  std::vector<double> samples;  // ns per call, one per batch
};

ImplResult& AddRunner(std::vector<Runner>* runners, const std::string& name,
                      ImplType type, size_t bytes,
                      std::function<void(size_t)> run) {
  Runner& r = runners->emplace_back();
  r.result.name = name;
  r.result.type = type;
  r.result.bytes = bytes;
  r.run = std::move(run);
  return r.result;
}

// `calls` calls of call() back to back, the ISA `isa` forced first (unless
// empty).
template <class Call>
std::function<void(size_t)> Calls(Call call, const std::string& isa = "") {
  return [call, isa](size_t calls) {
    if (!isa.empty()) simdnorm_set_isa(isa.c_str());
    for (size_t i = 0; i < calls; ++i) call();
  };
}

// Calibrates each runner without an error to batches of o.batch_ms, then
// times o.reps rounds of interleaved batches; sets median_ns and min_ns.
void TimeRunners(std::vector<Runner>* runners, const Options& s, size_t threads,
                 const Progress& progress) {
  // Calibrate, then interleave the batches so drift hits all alike.
  const double batch_ns = s.batch_ms * 1e6;
  for (Runner& r : *runners) {
    if (!r.result.error.empty()) continue;
    progress(r.result.name + " calibrating");
    r.calls_per_batch = Calibrate(r.run, batch_ns);
    Settle(threads, r.result.type);
  }
  const size_t n = runners->size();
  for (size_t rep = 0; rep < s.reps; ++rep) {
    progress("batch " + std::to_string(rep + 1) + "/" + std::to_string(s.reps));
    for (size_t k = 0; k < n; ++k) {
      // Rotated every other round and reversed in between, so that each
      // runner follows both its neighbours in turn: a rotation alone kept
      // every runner's predecessor, and the first ISA, which follows the
      // last peer, trailed the second by 2-3 % at 4096 rows (session 37).
      const size_t at = (rep / 2 + k) % n;
      Runner& r = (*runners)[rep % 2 ? n - 1 - at : at];
      if (!r.result.error.empty()) continue;
      // Untimed, a whole batch: after a peer's batch the next runner's
      // first milliseconds ran slower (Zen 5, 4096 rows of 896: 0.66-0.82
      // ms a call, 0.48-0.57 in the batch after; one untimed call or three
      // did not absorb it), and the first ISA trailed the second by 8-20 %.
      r.run(r.calls_per_batch);
      const double t = TimeNs(r.run, r.calls_per_batch);
      r.samples.push_back(t / static_cast<double>(r.calls_per_batch));
      Settle(threads, r.result.type);
    }
  }
  simdnorm_set_isa("auto");

  for (Runner& r : *runners) {
    std::vector<double>& v = r.samples;
    if (!v.empty()) {
      std::sort(v.begin(), v.end());
      const size_t m = v.size();
      r.result.median_ns = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
      r.result.min_ns = v.front();
    }
  }
}

}  // namespace

ConfigResult MeasureConfig(const Config& c, const Options& s,
                           const Progress& progress) {
  simdnorm_peers::ProblemShape shape;
  shape.kind = c.kind;
  shape.rows = c.rows;
  shape.cols = c.cols;
  shape.x_type = c.dtypes.x;
  shape.y_type = c.dtypes.y;
  shape.param_type = c.dtypes.param;
  shape.gamma = true;
  shape.beta = simdnorm_tools::op_of(c.kind).centered != 0;
  shape.max_threads = c.threads;
  shape.residual = c.variant.fused_add;
  shape.quant_group = c.variant.quant_group;
  shape.gamma_offset = c.variant.gemma ? 1.0f : 0.0f;
  shape.flags = c.variant.hf_round ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;
  shape.x_offset = c.offset.x;
  shape.y_offset = c.offset.y;
  simdnorm_peers::Problem p(shape);
  const simdnorm_desc d = p.desc();
  const size_t elems = d.rows * d.cols;
  // NaN (0xFF bytes) in every output: unwritten outputs show.
  auto poison = [&]() {
    std::memset(d.y, 0xFF, elems * dtype_size(d.y_type));
    if (d.sum_out) std::memset(d.sum_out, 0xFF, elems * dtype_size(d.x_type));
    if (d.y_scale) {
      std::memset(d.y_scale, 0xFF,
                  d.rows * simdnorm_peers::scales_per_row(d) * 4);
    }
  };

  ConfigResult out;
  out.config = c;
  out.moved_bytes = simdnorm_peers::moved_bytes(d);
  std::vector<Runner> runners;
  auto add = [&](const std::string& name, ImplType type,
                 std::function<void(size_t)> run) -> ImplResult& {
    return AddRunner(&runners, name, type, out.moved_bytes, std::move(run));
  };
  for (const std::string& isa : s.isas) {
    add(isa, ImplType::kSimdnorm, Calls([d] { simdnorm_normalize(&d); }, isa));
  }
  std::shared_ptr<simdnorm_peers::OneDnnLayerNorm> onednn;
  if (s.peers) {
    void* src = p.x();
    void* dst = p.y();
    add("memcpy", ImplType::kMemcpy,
        Calls([d, src, dst] { simdnorm_peers::copy_bytes(d, src, dst); }));
    // The hand-written loop and oneDNN (2.x: LayerNorm only) compute the
    // plain call only; the loop takes what it takes (f32 and bf16).
    if (c.variant.plain() && simdnorm_peers::naive_normalize(d)) {
      add("loop", ImplType::kLoop,
          Calls([d] { simdnorm_peers::naive_normalize(d); }));
    }
    if (c.kind == SIMDNORM_LAYERNORM && c.variant.plain() &&
        simdnorm_peers::onednn_built()) {
      std::string why;
      onednn.reset(simdnorm_peers::OneDnnLayerNorm::Create(d, &why).release());
      ImplResult& r = add("oneDNN", ImplType::kOneDnn, nullptr);
      if (!onednn) {
        r.error = why;
      } else {
        if (c.threads == 1 && !simdnorm_peers::onednn_can_limit_threads()) {
          r.note = "oneDNN could not be limited to 1 thread";
        }
        runners.back().run = [onednn](size_t calls) { onednn->Run(calls); };
      }
    }
    // The fused variants against the same work in separate passes.
    if ((c.variant.fused_add || c.variant.int8) && !s.isas.empty()) {
      float* scratch = p.scratch();
      add("unfused", ImplType::kUnfused,
          Calls([d, scratch] { simdnorm_peers::unfused_normalize(d, scratch); },
                s.isas.front()))
          .bytes = simdnorm_peers::unfused_moved_bytes(d);
    }
  }

  // Status and accuracy, once per implementation, before timing.
  std::unique_ptr<Checker> checker;
  if (s.check) {
    checker = std::make_unique<Checker>(d);
    if (checker->status != SIMDNORM_OK) {
      progress(std::string("reference failed: ") +
               simdnorm_status_string(checker->status));
      checker.reset();
    }
  }
  for (Runner& r : runners) {
    ImplResult& res = r.result;
    if (!res.error.empty()) continue;
    poison();
    std::string why;
    if (res.type == ImplType::kSimdnorm) {
      if (simdnorm_set_isa(res.name.c_str()) != SIMDNORM_OK) {
        res.error = "simdnorm_set_isa(\"" + res.name + "\") failed";
      } else if (const simdnorm_status st = simdnorm_normalize(&d);
                 st != SIMDNORM_OK) {
        res.error = simdnorm_status_string(st);
      }
    } else if (res.type == ImplType::kUnfused) {
      simdnorm_set_isa(s.isas.front().c_str());
      if (!simdnorm_peers::unfused_normalize(d, p.scratch(), &why)) {
        res.error = "unfused peer: " + why;
      }
    } else {
      r.run(1);
    }
    if (res.error.empty() && checker && res.type != ImplType::kMemcpy) {
      checker->Compare(&res);
    }
  }

  Settle(c.threads, ImplType::kOneDnn);
  TimeRunners(&runners, s, c.threads, progress);
  for (Runner& r : runners) out.impls.push_back(std::move(r.result));
  return out;
}

std::vector<FamilyResult> MeasureFamilies(const Options& o,
                                          const Progress& progress) {
  std::vector<FamilyResult> results;
  for (const simdnorm_peers::FamilyOp& op : o.ops) {
    for (const simdnorm_peers::FamilyShape& s :
         simdnorm_peers::profile_shapes(op)) {
      // N(0,1) data: timing does not depend on the values.
      std::vector<float> x(s.elems()), dy(s.elems());
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) / 29;
        dy[i] = static_cast<float>(static_cast<int>(i * 53 % 97) - 48) / 31;
      }
      for (const Dtypes& dt : o.dtypes) {
        for (size_t threads : o.threads) {
          auto p = std::make_shared<simdnorm_peers::FamilyProblem>(
              op, s, dt.x, dt.y, dt.param, x, dy);
          auto out = std::make_shared<simdnorm_peers::FamilyOutput>();
          FamilyResult& r = results.emplace_back();
          r = {op.name, shape_name(op, s), dt, threads, p->moved_bytes(), {}};
          progress(op.name + " " + r.shape);
          auto call = [p, out, dt, threads] {
            return p->run(out.get(), dt.y, threads, false);
          };
          std::vector<Runner> runners;
          for (const std::string& isa : o.isas) {
            ImplResult& res = AddRunner(&runners, isa, ImplType::kSimdnorm,
                                        r.bytes, Calls(call, isa));
            simdnorm_set_isa(isa.c_str());
            if (const simdnorm_status st = call(); st != SIMDNORM_OK) {
              res.error = simdnorm_status_string(st);
            }
          }
          if (o.peers) {  // half the bytes read, half written
            const size_t half = r.bytes / 2;
            auto buf = std::make_shared<std::vector<char>>(2 * half, 1);
            AddRunner(&runners, "memcpy", ImplType::kMemcpy, r.bytes,
                      Calls([buf, half] {
                        std::memcpy(buf->data() + half, buf->data(), half);
                      }));
          }
          TimeRunners(&runners, o, threads, [](const std::string&) {});
          for (Runner& run : runners) r.impls.push_back(run.result);
        }
      }
    }
  }
  return results;
}

}  // namespace simdnorm_profile
