#include "lib/isa.h"

#include <strings.h>

#if SIMDNORM_HAVE_AVX3_BF16
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {
namespace {

constexpr size_t kMaxIsas = 64;

// The ISAs compiled in and supported by this CPU, best first; built once,
// on first use, from the kernel files' dispatch tables.
struct IsaList {
  Isa storage[kMaxIsas] = {};
  size_t num_stored = 0;
  const Isa* isas[kMaxIsas] = {};
  size_t count = 0;
  const Isa* best = nullptr;

  // The entry of a target, made on first use (nullptr when full).
  Isa* Entry(int64_t target, const char* name) {
    for (size_t i = 0; i < num_stored; ++i) {
      if (storage[i].target == target) return &storage[i];
    }
    if (num_stored == kMaxIsas) return nullptr;
    Isa* isa = &storage[num_stored++];
    isa->target = target;
    isa->name = name;
    return isa;
  }

  // Adds a target's kernels of one family, for every kind of that family.
  template <int kFamily>
  static void Add(const TargetKernels& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    for (int kind = 0; kind < kNumRowKinds; ++kind) {
      if (FamilyOf(kind) != kFamily) continue;
      for (int x = 0; x < kNumInTypes; ++x)
        for (int y = 0; y < kNumOutTypes; ++y)
          for (int p = 0; p < kNumInTypes; ++p)
            isa->fn[kind][x][y][p] = (*k.table)[x][y][p];
    }
  }

  // Adds a target's backward kernels.
  static void AddBackward(const TargetBackward& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    for (int x = 0; x < kNumInTypes; ++x)
      for (int dy = 0; dy < kNumInTypes; ++dy)
        for (int dx = 0; dx < kNumInTypes; ++dx)
          isa->backward[x][dy][dx] = (*k.table)[x][dy][dx];
  }

  // Adds a target's GroupNorm kernels.
  static void AddGroup(const TargetGroup& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    for (int l = 0; l < kNumLayouts; ++l)
      for (int x = 0; x < kNumInTypes; ++x)
        for (int y = 0; y < kNumInTypes; ++y)
          isa->group[l][x][y] = (*k.table)[l][x][y];
  }

  // Adds a target's GroupNorm backward kernels.
  static void AddGroupBackward(const TargetGroupBackward& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    std::memcpy(isa->group_backward, k.table, sizeof(GroupBackwardTable));
  }

  // Adds a target's BatchNorm kernels.
  static void AddBatch(const TargetBatch& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    std::memcpy(isa->batch, k.table, sizeof(BatchTable));
  }

  // Adds a target's BatchNorm backward kernels.
  static void AddBatchBackward(const TargetBatchBackward& k, void* self) {
    Isa* isa = static_cast<IsaList*>(self)->Entry(k.target, k.name);
    if (isa == nullptr) return;
    std::memcpy(isa->batch_backward, k.table, sizeof(BatchBackwardTable));
  }

  // Fills each null kernel of `to` with the one of `from`.
  template <typename Fn>
  static void FillNulls(Fn& to, const Fn& from) {
    if (to == nullptr) to = from;
  }
  template <typename T, size_t N>
  static void FillNulls(T (&to)[N], const T (&from)[N]) {
    for (size_t i = 0; i < N; ++i) FillNulls(to[i], from[i]);
  }

  static bool Complete(const Isa& isa) {
    for (const auto& by_x : isa.fn)
      for (const auto& by_y : by_x)
        for (const auto& by_p : by_y)
          for (RowsFn f : by_p)
            if (f == nullptr) return false;
    for (const auto& by_x : isa.backward)
      for (const auto& by_dy : by_x)
        for (BackwardRowsFn f : by_dy)
          if (f == nullptr) return false;
    for (const auto& by_layout : isa.group)
      for (const auto& by_x : by_layout)
        for (GroupFn f : by_x)
          if (f == nullptr) return false;
    for (const auto& by_layout : isa.group_backward)
      for (GroupBackwardFn f : by_layout)
        if (f == nullptr) return false;
    for (const auto& by_layout : isa.batch)
      for (const auto& by_x : by_layout)
        for (BatchFn f : by_x)
          if (f == nullptr) return false;
    for (const auto& by_layout : isa.batch_backward)
      for (const auto& by_x : by_layout)
        for (const auto& by_dy : by_x)
          for (BatchBackwardFn f : by_dy)
            if (f == nullptr) return false;
    return true;
  }

#if SIMDNORM_HAVE_AVX3_BF16 && !defined(HWY_AVX3_ZEN4)
  // Whether AVX3 runs here (Highway's check: the CPU's AVX-512 subsets and
  // the OS's saving of their registers) and CPUID leaf 7, subleaf 1 has
  // AVX512_BF16 (EAX bit 5).
  static bool CpuHasAvx512Bf16() {
    if ((hwy::SupportedTargets() & HWY_AVX3) == 0) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax >> 5) & 1;
  }
#endif

  IsaList() {
    VisitLayerNormKernels(&Add<kCenteredFamily>, this);
    VisitRMSNormKernels(&Add<kUncenteredFamily>, this);
    VisitBackwardKernels(&AddBackward, this);
    VisitGroupKernels(&AddGroup, this);
    VisitGroupBackwardKernels(&AddGroupBackward, this);
    VisitBatchKernels(&AddBatch, this);
    VisitBatchBackwardKernels(&AddBatchBackward, this);
    int64_t supported = hwy::SupportedTargets();
    int64_t chosen = BestTarget();
#if SIMDNORM_HAVE_AVX3_BF16 && !defined(HWY_AVX3_ZEN4)
    // Highway's dispatch knows nothing of AVX3_BF16: listed, and the best,
    // where AVX3 runs and the CPU has AVX512_BF16.
    if (CpuHasAvx512Bf16()) {
      Add<kCenteredFamily>(kAvx3Bf16LayerNormKernels, this);
      Add<kUncenteredFamily>(kAvx3Bf16RMSNormKernels, this);
      AddBackward(kAvx3Bf16BackwardKernels, this);
      AddGroup(kAvx3Bf16GroupKernels, this);
      AddBatch(kAvx3Bf16BatchKernels, this);
      // The rest is AVX3's: the kernels that write no bf16 (the same code;
      // convert-inl.h, kCompiledHere), and the GroupNorm and BatchNorm
      // backward passes, which have no AVX3_BF16 build (their bf16 stores
      // round in integer steps, to the same bits).
      Isa* bf16 = Entry(kTargetAvx3Bf16, kAvx3Bf16LayerNormKernels.name);
      for (size_t i = 0; i < num_stored && bf16 != nullptr; ++i) {
        if (storage[i].target == HWY_AVX3) {
          const Isa& avx3 = storage[i];
          FillNulls(bf16->fn, avx3.fn);
          FillNulls(bf16->backward, avx3.backward);
          FillNulls(bf16->group, avx3.group);
          FillNulls(bf16->group_backward, avx3.group_backward);
          FillNulls(bf16->batch, avx3.batch);
          FillNulls(bf16->batch_backward, avx3.batch_backward);
        }
      }
      supported |= kTargetAvx3Bf16;
      chosen = kTargetAvx3Bf16;
    }
#endif
    for (size_t i = 0; i < num_stored; ++i) {
      const Isa& isa = storage[i];
      if (Complete(isa) && (isa.target & supported) != 0) isas[count++] = &isa;
    }
    // Highway numbers targets so that a lower bit is a better target.
    std::sort(isas, isas + count,
              [](const Isa* a, const Isa* b) { return a->target < b->target; });
    for (size_t i = 0; i < count && !best; ++i) {
      if (isas[i]->target == chosen) best = isas[i];
    }
    if (!best && count) best = isas[0];
    // Best first: Highway's choice leads even where a target with a lower
    // bit is listed (e.g. SVE2_128 beside SVE2 on 128-bit SVE).
    std::rotate(isas, std::find(isas, isas + count, best),
                std::find(isas, isas + count, best) + (best ? 1 : 0));
  }
};

const IsaList& List() {
  static const IsaList list;
  return list;
}

const Isa* Find(const char* name) {
  const IsaList& list = List();
  if (name == nullptr || strcasecmp(name, "auto") == 0) return list.best;
  for (size_t i = 0; i < list.count; ++i) {
    if (strcasecmp(name, list.isas[i]->name) == 0) return list.isas[i];
  }
  return nullptr;
}

std::atomic<const Isa*>& Active() {
  static std::atomic<const Isa*> active = [] {
    const char* env = std::getenv("SIMDNORM_ISA");
    const Isa* isa = env && *env ? Find(env) : nullptr;
    if (env && *env && !isa) {
      std::fprintf(stderr,
                   "simdnorm: SIMDNORM_ISA=%s is not a supported ISA; using "
                   "auto\n",
                   env);
    }
    return isa ? isa : List().best;
  }();
  return active;
}

}  // namespace

size_t IsaCount() { return List().count; }

const Isa* IsaAt(size_t i) {
  return i < List().count ? List().isas[i] : nullptr;
}

const Isa& ActiveIsa() { return *Active().load(std::memory_order_acquire); }

bool SetActiveIsa(const char* name) {
  const Isa* isa = Find(name);
  if (!isa) return false;
  Active().store(isa, std::memory_order_release);
  return true;
}

}  // namespace internal
}  // namespace simdnorm
