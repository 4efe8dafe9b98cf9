// The other passes' benchmarks: GroupNorm and InstanceNorm forward,
// BatchNorm inference and training forward, and the backward passes
// (LayerNorm, RMSNorm, L2 rows; GroupNorm; BatchNorm training and
// inference), every ISA beside memcpy of the call's bytes and, where
// oneDNN 2.6 has the primitive (layer normalization backward, batch
// normalization forward and backward), beside oneDNN. f32, on the shapes
// of family_problem.h (profile_shapes): Stable Diffusion's GroupNorms
// (1,320,64x64) and (1,1280,8x8) in 32 groups, ResNet's BatchNorm
// (8,64,56x56), rows of 896 (64 and 4096 of them).
//
// Names: <op>/f32/<impl>/<shape>/threads:<1|all>, op as simdnorm-profile
// --op spells it (groupnorm, batchnorm-training-backward, ...), shape as
// "1x320x4096_g32_nchw" or "4096x896". bytes_per_second counts x (and
// dy) read and y (or dx) written; memcpy copies half that many bytes.
// Not in the default subset: --benchmark_filter='^groupnorm/' etc.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "family_problem.h"
#include "onednn_passes.h"

namespace simdnorm_bench {
namespace {

using simdnorm_peers::FamilyOp;
using simdnorm_peers::FamilyOutput;
using simdnorm_peers::FamilyProblem;
using simdnorm_peers::FamilyShape;
using simdnorm_peers::OneDnnPass;

// The oneDNN primitive of an op, if 2.6 has one (f32 only).
bool OneDnnOp(const FamilyOp& op, OneDnnPass::Op* out) {
  if (op.rows() && op.op->kind == SIMDNORM_LAYERNORM) {
    *out = OneDnnPass::Op::kLayerNormBackward;
  } else if (op.batch() && !op.backward) {
    *out = op.training ? OneDnnPass::Op::kBatchNormTraining
                       : OneDnnPass::Op::kBatchNormInference;
  } else if (op.batch() && op.training) {
    *out = OneDnnPass::Op::kBatchNormBackward;
  } else {
    return false;
  }
  return true;
}

// The implementations of one shape run one after another: they share one
// problem (and memcpy's buffer), made on first use; the previous one is
// freed first.
struct Cached {
  std::string key;
  std::unique_ptr<FamilyProblem> p;
  FamilyOutput out;
  std::vector<char> copy;
};
Cached& CachedProblem(const FamilyOp& op, const FamilyShape& s) {
  static Cached c;
  const std::string key = op.name + simdnorm_peers::shape_name(op, s);
  if (c.key == key) return c;
  c = Cached();
  std::vector<float> x(s.elems()), dy(s.elems());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) / 29.0f;
    dy[i] = static_cast<float>(static_cast<int>(i * 53 % 97) - 48) / 31.0f;
  }
  c.p = std::make_unique<FamilyProblem>(op, s, SIMDNORM_F32, SIMDNORM_F32,
                                        SIMDNORM_F32, x, dy);
  c.copy.assign(c.p->moved_bytes(), 1);
  c.key = key;
  return c;
}

// impl: an ISA, "onednn" or "memcpy".
void BM_Family(benchmark::State& state, FamilyOp op, FamilyShape s,
               size_t threads, std::string impl) {
  Cached& c = CachedProblem(op, s);
  FamilyProblem& p = *c.p;
  std::unique_ptr<OneDnnPass> peer;
  OneDnnPass::Op dnn{};
  std::string why;
  if (impl == "onednn") {
    if (OneDnnOp(op, &dnn)) {
      peer = OneDnnPass::Create(dnn, s.n, s.c, s.hw, s.layout == SIMDNORM_NHWC,
                                threads, &why);
    }
    if (!peer) return state.SkipWithError(why.c_str());
    peer->Run();
    for (auto _ : state) peer->Run();
  } else if (impl == "memcpy") {
    const size_t half = c.copy.size() / 2;
    for (auto _ : state) {
      std::memcpy(c.copy.data() + half, c.copy.data(), half);
      benchmark::ClobberMemory();
    }
  } else {
    simdnorm_status st = simdnorm_set_isa(impl.c_str());
    if (st == SIMDNORM_OK) st = p.run(&c.out, SIMDNORM_F32, threads, false);
    if (st != SIMDNORM_OK)
      return state.SkipWithError(simdnorm_status_string(st));
    for (auto _ : state) p.run(&c.out, SIMDNORM_F32, threads, false);
    simdnorm_set_isa("auto");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(p.moved_bytes()));
}

void Register(const FamilyOp& op, const FamilyShape& s, size_t threads) {
  std::string shape = simdnorm_peers::shape_name(op, s);
  for (char& ch : shape) ch = ch == ' ' ? '_' : ch;
  std::vector<std::string> impls;
  for (size_t i = 0; const char* isa = simdnorm_isa_name(i); ++i) {
    impls.emplace_back(isa);
  }
  OneDnnPass::Op dnn;
  if (OneDnnOp(op, &dnn)) impls.emplace_back("onednn");
  impls.emplace_back("memcpy");
  for (const std::string& impl : impls) {
    benchmark::RegisterBenchmark((op.name + "/f32/" + impl + "/" + shape +
                                  "/threads:" + (threads == 1 ? "1" : "all"))
                                     .c_str(),
                                 BM_Family, op, s, threads, impl)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

void RegisterFamilies() {
  for (const FamilyOp& op : simdnorm_peers::family_ops()) {
    for (const FamilyShape& s : simdnorm_peers::profile_shapes(op)) {
      for (size_t threads : {size_t{1}, size_t{0}}) Register(op, s, threads);
    }
  }
}

}  // namespace simdnorm_bench
