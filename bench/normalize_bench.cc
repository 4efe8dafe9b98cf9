// simdnorm benchmarks: every kind x dtype combination x ISA x shape x thread
// count, generated from the lists below, with the peers (oneDNN's LayerNorm
// when built, the hand-written loop, memcpy of the same bytes) beside them;
// then the fused variants of issue #7 against the same work done unfused,
// per-head QK-norm shapes, and a norm followed by the next layer reading y.
//
// Names: <op>/<dtype>/<impl>/cols:<N>/rows:<M>/threads:<1|all>, where op is
// layernorm, rmsnorm, add_layernorm, add_rmsnorm (fused residual add in
// vLLM's in-place form), rmsnorm_i8 (int8 output, one scale per row),
// qknorm (RMSNorm of head_dim-wide rows), qknorm_strided (the same rows
// 4096 elements apart) or layernorm_then_dot, rmsnorm_then_dot (the call,
// then a dot product over all of y, timed together: what a store policy for
// y is judged on); impl is a Highway target name (AVX3, AVX2, ...; ISAs
// this CPU lacks are registered and skipped), "onednn", "loop", "unfused"
// (the add or quantize loop of bench/peers plus a plain simdnorm call on the
// best ISA) or "memcpy". layernorm and rmsnorm names end in
// /offset:<0|16>: the bytes past a 64-byte line where the buffers start
// (16: as std::vector's rows), or /offset:<x>:<y> with y elsewhere (hidden
// size 896, one thread: x from a std::vector and y from torch, or the
// reverse); the others are aligned. bytes_per_second
// counts the bytes the implementation moves (peers.h: moved_bytes,
// unfused_moved_bytes; _then_dot adds y read again); s_per_row is the time
// per row. Before timing, the simdnorm and unfused runs are checked against
// the float64 reference on the first rows.
//
// With no --benchmark_filter a default subset runs (kDefaultFilter); pass
// --benchmark_filter=all for the whole cross product (about 30 minutes).
#include <benchmark/benchmark.h>
#include <hwy/targets.h>
#include <strings.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "peers.h"
#include "problem.h"
#include "reference_check.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm_bench {
void RegisterFamilies();  // family_bench.cc
}  // namespace simdnorm_bench

namespace {

using simdnorm_peers::Problem;
using simdnorm_peers::ProblemShape;

// Every row kind of the registry (simdnorm_op_at; GroupNorm takes another
// descriptor), as engines call it:
// centered kinds (LayerNorm) with gamma + beta, the others gamma only.
struct KindSpec {
  const char* name;
  simdnorm_kind kind;
  bool beta;
};
std::vector<KindSpec> Kinds() {
  std::vector<KindSpec> kinds;
  for (size_t i = 0; i < simdnorm_op_count(); ++i) {
    const simdnorm_op_info* op = simdnorm_op_at(i);
    if (op->descriptor != SIMDNORM_ROW_DESC) continue;
    kinds.push_back({op->name, op->kind, op->centered != 0});
  }
  return kinds;
}

struct DTypeSpec {
  const char* name;
  simdnorm_dtype x, y, param;
};
constexpr DTypeSpec kDTypes[] = {
    {"f32", SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
    {"bf16", SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
    {"bf16_f32", SIMDNORM_BF16, SIMDNORM_F32,
     SIMDNORM_F32},  // bf16 in, f32 out
};

// Hidden sizes of current models (Qwen2-0.5B 896, Qwen2-1.5B 1536, ...).
constexpr size_t kCols[] = {896, 1536, 2048, 3584, 4096, 8192};
// 1 = decode; 8192 = a long prefill.
constexpr size_t kRows[] = {1, 16, 128, 1024, 8192};
// max_threads: 1 = calling thread, 0 = all (TBB arena default).
constexpr size_t kThreads[] = {1, 0};
// Bytes past a 64-byte line where x and the weights, and y start: torch's
// aligned tensors, std::vector's rows, and the two mixed (hidden size 896,
// one thread only).
struct Offsets {
  size_t x, y;
};
constexpr Offsets kOffsets[] = {{0, 0}, {16, 16}, {16, 0}, {0, 16}};

// The fused variants (fused add, int8 output): two hidden sizes, decode, a
// batch and a prefill, the uniform f32 and bf16 dtypes (for rmsnorm_i8 the
// dtype is x's and gamma's).
constexpr size_t kFusedCols[] = {896, 4096};
constexpr size_t kFusedRows[] = {1, 64, 4096};
constexpr size_t kFusedDTypes = 2;  // the first two of kDTypes
// Per-head QK-norm: head_dim rows, tokens x heads of them; the strided form
// is one head of a [tokens, 4096] projection output (x_stride 4096, y
// dense), as when Q is a view into the fused QKV output.
constexpr size_t kHeadDims[] = {64, 128, 256};
constexpr size_t kQkRows[] = {4096, 32768};
constexpr size_t kQkStridedRows = 4096;
constexpr size_t kQkStride = 4096;

// The norm, then the next layer reading y; and correct rounding against
// SIMDNORM_FAST_ROUNDING: hidden 896, one thread.
constexpr size_t kThenDotRows[] = {64, 4096};

// Default subset (no --benchmark_filter given): two hidden sizes, decode,
// a batch and a prefill, the uniform dtypes, every ISA and peer, aligned;
// and LayerNorm 16 bytes off at hidden size 896 on one thread.
constexpr const char* kDefaultFilter =
    "^((layernorm|rmsnorm)/(f32|bf16)/[^/]+/cols:(896|4096)/"
    "rows:(1|128|8192)/threads:[^/]+/offset:0|"
    "layernorm/(f32|bf16)/[^/]+/cols:896/rows:(1|128|8192)/threads:1/"
    "offset:16)/";
constexpr const char* kDefaultMinTime = "0.1";

// kSimdnormThenDot: simdnorm, then simdnorm_peers::dot_y over y.
enum class Impl {
  kSimdnorm,
  kSimdnormThenDot,
  kOneDnn,
  kLoop,
  kUnfused,
  kMemcpy
};

bool SameName(const std::string& a, const char* b) {
  return strcasecmp(a.c_str(), b) == 0;
}

// ISAs: the ones the library reports (supported here), then every target
// Highway attains on this architecture, so unsupported ones show as skipped.
std::vector<std::string> IsaNames() {
  std::vector<std::string> names;
  for (size_t i = 0; const char* n = simdnorm_isa_name(i); ++i) {
    names.emplace_back(n);
  }
  for (int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1) {
    const int64_t bit = targets & -targets;
    const char* n = hwy::TargetName(bit);
    bool seen = false;
    for (const std::string& s : names) seen = seen || SameName(s, n);
    if (!seen) names.emplace_back(n);
  }
  return names;
}

void SetCounters(benchmark::State& state, const simdnorm_desc& d,
                 size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(bytes));
  state.counters["s_per_row"] =
      benchmark::Counter(static_cast<double>(d.rows),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

// The implementations of one shape run one after another (see RegisterAll)
// and Google Benchmark calls each function several times: they share one
// problem instead of filling up to 2 x 256 MiB again each time.
const Problem& CachedProblem(const ProblemShape& shape) {
  static std::unique_ptr<Problem> cached;
  if (!cached || cached->shape() != shape) {
    cached.reset();  // free the old buffers first
    cached = std::make_unique<Problem>(shape);
  }
  return *cached;
}

bool RunSimdnorm(const simdnorm_desc& d, float*, std::string* why) {
  const simdnorm_status s = simdnorm_normalize(&d);
  if (s != SIMDNORM_OK) *why = simdnorm_status_string(s);
  return s == SIMDNORM_OK;
}

// Skips the benchmark when the implementation disagrees with the reference.
bool Checked(benchmark::State& state, const simdnorm_desc& d,
             const simdnorm_bench::RunFn& run) {
  const std::string error = simdnorm_bench::CheckAgainstReference(d, run);
  if (error.empty()) return true;
  state.SkipWithError(
      ("check against the float64 reference: " + error).c_str());
  return false;
}

void BM_Normalize(benchmark::State& state, ProblemShape shape, Impl impl,
                  std::string isa) {
  const bool simdnorm =
      impl == Impl::kSimdnorm || impl == Impl::kSimdnormThenDot;
  if (simdnorm && simdnorm_set_isa(isa.c_str()) != SIMDNORM_OK) {
    state.SkipWithError("ISA not supported by this CPU or build");
    return;
  }
  const Problem& p = CachedProblem(shape);
  const simdnorm_desc& d = p.desc();
  size_t bytes = simdnorm_peers::moved_bytes(d);
  switch (impl) {
    case Impl::kSimdnorm:
    case Impl::kSimdnormThenDot: {
      const simdnorm_status s = simdnorm_normalize(&d);
      if (s != SIMDNORM_OK) {
        state.SkipWithError(simdnorm_status_string(s));
        break;
      }
      if (!Checked(state, d, RunSimdnorm)) break;
      // The next layer's weight row: cols floats, L1-resident.
      const bool dot = impl == Impl::kSimdnormThenDot;
      const std::vector<float> w(dot ? d.cols : 0, 1.0f / 64);
      for (auto _ : state) {
        benchmark::DoNotOptimize(simdnorm_normalize(&d));
        if (dot) benchmark::DoNotOptimize(simdnorm_peers::dot_y(d, w.data()));
        benchmark::ClobberMemory();
      }
      if (dot) {
        state.SetLabel("then a dot product over y");
        bytes += d.rows * d.cols * simdnorm_peers::dtype_size(d.y_type);
      }
      break;
    }
    case Impl::kOneDnn: {
      std::string why;
      auto peer = simdnorm_peers::OneDnnLayerNorm::Create(d, &why);
      if (!peer) {
        state.SkipWithError(why.c_str());
        break;
      }
      if (shape.max_threads == 1 &&
          !simdnorm_peers::onednn_can_limit_threads()) {
        state.SetLabel("oneDNN not limited to 1 thread");
      }
      peer->Run();
      for (auto _ : state) {
        peer->Run();
        benchmark::ClobberMemory();
      }
      if (shape.max_threads != 1) {
        // libgomp's idle workers spin for a few ms after a parallel region;
        // let them sleep before the next benchmark wants the cores.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      break;
    }
    case Impl::kLoop: {
      if (!simdnorm_peers::naive_normalize(d)) {
        state.SkipWithError("the hand-written loop cannot run this");
        break;
      }
      for (auto _ : state) {
        simdnorm_peers::naive_normalize(d);
        benchmark::ClobberMemory();
      }
      break;
    }
    case Impl::kUnfused: {
      std::string why;
      if (!simdnorm_peers::unfused_normalize(d, p.scratch(), &why)) {
        state.SkipWithError(why.c_str());
        break;
      }
      if (!Checked(state, d, simdnorm_peers::unfused_normalize)) break;
      for (auto _ : state) {
        simdnorm_peers::unfused_normalize(d, p.scratch());
        benchmark::ClobberMemory();
      }
      state.SetLabel(std::string(d.residual ? "add loop" : "quantize loop") +
                     " + simdnorm " + simdnorm_active_isa());
      bytes = simdnorm_peers::unfused_moved_bytes(d);
      break;
    }
    case Impl::kMemcpy: {
      simdnorm_peers::copy_bytes(d, p.x(), p.y());
      for (auto _ : state) {
        simdnorm_peers::copy_bytes(d, p.x(), p.y());
        benchmark::ClobberMemory();
      }
      break;
    }
  }
  if (simdnorm) simdnorm_set_isa("auto");
  SetCounters(state, d, bytes);
}

struct Entry {
  Impl impl;
  std::string name;
};

// Registers every implementation of one shape, in a row: the output reads as
// a comparison, and the problem buffers are shared. With `offset_name` the
// name ends in /offset:<x_offset>, or /offset:<x_offset>:<y_offset> when
// they differ.
void RegisterShape(const std::string& op, const char* dtype,
                   const ProblemShape& s, const std::vector<Entry>& impls,
                   bool offset_name = false) {
  for (const Entry& e : impls) {
    const std::string name =
        op + "/" + dtype + "/" + e.name + "/cols:" + std::to_string(s.cols) +
        "/rows:" + std::to_string(s.rows) +
        "/threads:" + (s.max_threads == 1 ? "1" : "all") +
        (offset_name ? "/offset:" + std::to_string(s.x_offset) : "") +
        (offset_name && s.y_offset != s.x_offset
             ? ":" + std::to_string(s.y_offset)
             : "");
    benchmark::RegisterBenchmark(name.c_str(), BM_Normalize, s, e.impl, e.name)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

ProblemShape Shape(simdnorm_kind kind, const DTypeSpec& t, size_t cols,
                   size_t rows, size_t threads, bool beta) {
  ProblemShape s;
  s.kind = kind;
  s.rows = rows;
  s.cols = cols;
  s.x_type = t.x;
  s.y_type = t.y;
  s.param_type = t.param;
  s.gamma = true;
  s.beta = beta;
  s.max_threads = threads;
  return s;
}

void RegisterAll() {
  std::vector<Entry> isas;
  for (const std::string& isa : IsaNames()) {
    isas.push_back({Impl::kSimdnorm, isa});
  }
  auto with = [&](std::initializer_list<Entry> peers) {
    std::vector<Entry> v = isas;
    v.insert(v.end(), peers);
    return v;
  };
  const std::vector<Entry> fused =
      with({{Impl::kUnfused, "unfused"}, {Impl::kMemcpy, "memcpy"}});
  const std::vector<Entry> qk =
      with({{Impl::kLoop, "loop"}, {Impl::kMemcpy, "memcpy"}});

  for (const KindSpec& k : Kinds()) {
    for (const DTypeSpec& t : kDTypes) {
      // oneDNN 2.x: LayerNorm only, one dtype for x and y.
      const bool onednn = simdnorm_peers::onednn_built() &&
                          k.kind == SIMDNORM_LAYERNORM && t.x == t.y;
      const std::vector<Entry> impls =
          onednn ? with({{Impl::kOneDnn, "onednn"},
                         {Impl::kLoop, "loop"},
                         {Impl::kMemcpy, "memcpy"}})
                 : with({{Impl::kLoop, "loop"}, {Impl::kMemcpy, "memcpy"}});
      for (size_t cols : kCols) {
        for (size_t rows : kRows) {
          for (size_t threads : kThreads) {
            for (const Offsets& o : kOffsets) {
              if (o.x != o.y && (cols != 896 || threads != 1)) continue;
              ProblemShape s = Shape(k.kind, t, cols, rows, threads, k.beta);
              s.x_offset = o.x;
              s.y_offset = o.y;
              RegisterShape(k.name, t.name, s, impls, true);
            }
          }
        }
      }
    }
  }

  // Fused residual add, vLLM's fused_add_rms_norm form: sum_out = residual
  // and y = x, both in place; "unfused" is the add loop, then the norm.
  for (const KindSpec& k : Kinds()) {
    for (size_t ti = 0; ti < kFusedDTypes; ++ti) {
      for (size_t cols : kFusedCols) {
        for (size_t rows : kFusedRows) {
          for (size_t threads : kThreads) {
            ProblemShape s =
                Shape(k.kind, kDTypes[ti], cols, rows, threads, k.beta);
            s.residual = true;
            s.in_place = true;
            RegisterShape(std::string("add_") + k.name, kDTypes[ti].name, s,
                          fused);
          }
        }
      }
    }
  }

  // Int8 output, one scale per row (vLLM's per-token quantization);
  // "unfused" is the norm to f32 rows, then the quantize loop.
  for (size_t ti = 0; ti < kFusedDTypes; ++ti) {
    for (size_t cols : kFusedCols) {
      for (size_t rows : kFusedRows) {
        for (size_t threads : kThreads) {
          ProblemShape s =
              Shape(SIMDNORM_RMSNORM, kDTypes[ti], cols, rows, threads, false);
          s.y_type = SIMDNORM_I8;
          RegisterShape("rmsnorm_i8", kDTypes[ti].name, s, fused);
        }
      }
    }
  }

  // Per-head QK-norm (RMSNorm with a head_dim-wide gamma).
  for (size_t ti = 0; ti < kFusedDTypes; ++ti) {
    for (size_t cols : kHeadDims) {
      for (size_t threads : kThreads) {
        for (size_t rows : kQkRows) {
          RegisterShape(
              "qknorm", kDTypes[ti].name,
              Shape(SIMDNORM_RMSNORM, kDTypes[ti], cols, rows, threads, false),
              qk);
        }
        ProblemShape s = Shape(SIMDNORM_RMSNORM, kDTypes[ti], cols,
                               kQkStridedRows, threads, false);
        s.x_stride = kQkStride;
        RegisterShape("qknorm_strided", kDTypes[ti].name, s, qk);
      }
    }
  }

  // The norm, then the next layer reading y (a dot product over all of
  // it, as its matmul would): cached stores of y leave it for that read,
  // non-temporal ones send it to memory and back.
  std::vector<Entry> then_dot;
  for (const Entry& e : isas) {
    then_dot.push_back({Impl::kSimdnormThenDot, e.name});
  }
  for (const KindSpec& k : Kinds()) {
    for (size_t ti = 0; ti < kFusedDTypes; ++ti) {
      for (size_t rows : kThenDotRows) {
        RegisterShape(std::string(k.name) + "_then_dot", kDTypes[ti].name,
                      Shape(k.kind, kDTypes[ti], 896, rows, 1, k.beta),
                      then_dot);
      }
    }
    // What correct rounding costs: bf16 calls with the default rounding and
    // the same calls with SIMDNORM_FAST_ROUNDING, side by side.
    for (size_t rows : kThenDotRows) {
      ProblemShape s = Shape(k.kind, kDTypes[1], 896, rows, 1, k.beta);
      RegisterShape(k.name, kDTypes[1].name, s, isas);
      s.flags = SIMDNORM_FAST_ROUNDING;
      RegisterShape(std::string(k.name) + "_fast_rounding", kDTypes[1].name, s,
                    isas);
    }
  }
}

bool HasFlag(int argc, char** argv, const char* flag) {
  const size_t n = std::strlen(flag);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, n) == 0 &&
        (argv[i][n] == '=' || argv[i][n] == '\0')) {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Defaults that keep a plain run short; explicit flags win.
  std::vector<std::string> extra;
  if (!HasFlag(argc, argv, "--benchmark_filter") &&
      !HasFlag(argc, argv, "--benchmark_list_tests")) {
    extra.push_back(std::string("--benchmark_filter=") + kDefaultFilter);
    std::fprintf(stderr,
                 "simdnorm_bench: no --benchmark_filter given, running the "
                 "default subset %s (--benchmark_filter=all for all)\n",
                 kDefaultFilter);
  }
  if (!HasFlag(argc, argv, "--benchmark_min_time")) {
    extra.push_back(std::string("--benchmark_min_time=") + kDefaultMinTime);
  }
  std::vector<char*> args(argv, argv + argc);
  for (std::string& e : extra) args.push_back(e.data());
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);

  benchmark::AddCustomContext("oneDNN", simdnorm_peers::onednn_info());
  RegisterAll();
  simdnorm_bench::RegisterFamilies();
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
