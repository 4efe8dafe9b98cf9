// simdnorm benchmarks: every kind x dtype combination x ISA x shape x thread
// count, generated from the lists below, with the peers (oneDNN's LayerNorm
// when built, the hand-written loop, memcpy of the same bytes) beside them.
//
// Names: <kind>/<dtype>/<impl>/cols:<N>/rows:<M>/threads:<1|all>, where impl
// is a Highway target name (AVX3, AVX2, ...; ISAs this CPU lacks are
// registered and skipped), "onednn", "loop" or "memcpy". bytes_per_second
// counts x read + y written once per row; s_per_row is the time per row.
//
// With no --benchmark_filter a default subset runs (kDefaultFilter); pass
// --benchmark_filter=all for the whole cross product (about 10 minutes).
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
#include "simdnorm/simdnorm.h"

namespace {

using simdnorm_peers::Problem;
using simdnorm_peers::ProblemShape;

struct KindSpec {
  const char* name;
  simdnorm_kind kind;
  bool beta;  // LayerNorm: gamma + beta; RMSNorm: gamma only
};
constexpr KindSpec kKinds[] = {
    {"layernorm", SIMDNORM_LAYERNORM, true},
    {"rmsnorm", SIMDNORM_RMSNORM, false},
};

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

// Default subset (no --benchmark_filter given): two hidden sizes, decode,
// a batch and a prefill, the uniform dtypes, every ISA and peer.
constexpr const char* kDefaultFilter =
    "^(layernorm|rmsnorm)/(f32|bf16)/[^/]+/cols:(896|4096)/"
    "rows:(1|128|8192)/";
constexpr const char* kDefaultMinTime = "0.1";

enum class Impl { kSimdnorm, kOneDnn, kLoop, kMemcpy };

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

void SetCounters(benchmark::State& state, const simdnorm_desc& d) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(simdnorm_peers::moved_bytes(d)));
  state.counters["s_per_row"] =
      benchmark::Counter(static_cast<double>(d.rows),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

bool SameShape(const ProblemShape& a, const ProblemShape& b) {
  return a.kind == b.kind && a.rows == b.rows && a.cols == b.cols &&
         a.x_type == b.x_type && a.y_type == b.y_type &&
         a.param_type == b.param_type && a.gamma == b.gamma &&
         a.beta == b.beta && a.max_threads == b.max_threads && a.eps == b.eps;
}

// The implementations of one shape run one after another (see RegisterAll)
// and Google Benchmark calls each function several times: they share one
// problem instead of filling up to 2 x 256 MiB again each time.
const Problem& CachedProblem(const ProblemShape& shape) {
  static std::unique_ptr<Problem> cached;
  if (!cached || !SameShape(cached->shape(), shape)) {
    cached.reset();  // free the old buffers first
    cached = std::make_unique<Problem>(shape);
  }
  return *cached;
}

void BM_Normalize(benchmark::State& state, ProblemShape shape, Impl impl,
                  std::string isa) {
  if (impl == Impl::kSimdnorm && simdnorm_set_isa(isa.c_str()) != SIMDNORM_OK) {
    state.SkipWithError("ISA not supported by this CPU or build");
    return;
  }
  const Problem& p = CachedProblem(shape);
  const simdnorm_desc& d = p.desc();
  switch (impl) {
    case Impl::kSimdnorm: {
      const simdnorm_status s = simdnorm_normalize(&d);
      if (s != SIMDNORM_OK) {
        state.SkipWithError(simdnorm_status_string(s));
        break;
      }
      for (auto _ : state) {
        benchmark::DoNotOptimize(simdnorm_normalize(&d));
        benchmark::ClobberMemory();
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
    case Impl::kMemcpy: {
      simdnorm_peers::copy_bytes(d, p.x(), p.y());
      for (auto _ : state) {
        simdnorm_peers::copy_bytes(d, p.x(), p.y());
        benchmark::ClobberMemory();
      }
      break;
    }
  }
  if (impl == Impl::kSimdnorm) simdnorm_set_isa("auto");
  SetCounters(state, d);
}

void RegisterAll() {
  struct Entry {
    Impl impl;
    std::string name;
  };
  std::vector<Entry> impls;
  for (const std::string& isa : IsaNames()) {
    impls.push_back({Impl::kSimdnorm, isa});
  }
  impls.push_back({Impl::kOneDnn, "onednn"});
  impls.push_back({Impl::kLoop, "loop"});
  impls.push_back({Impl::kMemcpy, "memcpy"});

  // One shape after another, every implementation of a shape in a row: the
  // output reads as a comparison, and the problem buffers are shared.
  for (const KindSpec& k : kKinds) {
    for (const DTypeSpec& t : kDTypes) {
      for (size_t cols : kCols) {
        for (size_t rows : kRows) {
          for (size_t threads : kThreads) {
            ProblemShape s;
            s.kind = k.kind;
            s.rows = rows;
            s.cols = cols;
            s.x_type = t.x;
            s.y_type = t.y;
            s.param_type = t.param;
            s.gamma = true;
            s.beta = k.beta;
            s.max_threads = threads;
            for (const Entry& e : impls) {
              if (e.impl == Impl::kOneDnn &&
                  (!simdnorm_peers::onednn_built() ||
                   k.kind != SIMDNORM_LAYERNORM || t.x != t.y)) {
                continue;  // oneDNN 2.x: LayerNorm only, one dtype for x, y
              }
              const std::string name =
                  std::string(k.name) + "/" + t.name + "/" + e.name +
                  "/cols:" + std::to_string(cols) +
                  "/rows:" + std::to_string(rows) +
                  "/threads:" + (threads == 1 ? "1" : "all");
              benchmark::RegisterBenchmark(name.c_str(), BM_Normalize, s,
                                           e.impl, e.name)
                  ->UseRealTime()
                  ->Unit(benchmark::kMicrosecond);
            }
          }
        }
      }
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
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
