#include "lib/isa.h"

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "hwy/targets.h"

namespace simdnorm {
namespace internal {
namespace {

constexpr size_t kMaxIsas = 64;

// Filled by static initializers of the kernel files, before main(); plain
// arrays, so they are constant-initialized before any of those run.
Isa g_registered[kMaxIsas];
size_t g_num_registered = 0;

struct IsaList {
  const Isa* isas[kMaxIsas];
  size_t count = 0;
  const Isa* best = nullptr;

  IsaList() {
    const int64_t supported = hwy::SupportedTargets();
    for (size_t i = 0; i < g_num_registered; ++i) {
      const Isa& isa = g_registered[i];
      bool complete = true;
      for (const auto& by_x : isa.fn)
        for (const auto& by_y : by_x)
          for (const auto& by_p : by_y)
            for (RowsFn f : by_p) complete = complete && f != nullptr;
      if (complete && (isa.target & supported) != 0) isas[count++] = &isa;
    }
    // Highway numbers targets so that a lower bit is a better target.
    std::sort(isas, isas + count,
              [](const Isa* a, const Isa* b) { return a->target < b->target; });
    const int64_t chosen = BestTarget();
    for (size_t i = 0; i < count && !best; ++i) {
      if (isas[i]->target == chosen) best = isas[i];
    }
    if (!best && count) best = isas[0];
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
      std::fprintf(
          stderr,
          "simdnorm: SIMDNORM_ISA=%s is not a supported ISA; using auto\n",
          env);
    }
    return isa ? isa : List().best;
  }();
  return active;
}

}  // namespace

bool RegisterKernels(int64_t target, const char* name, int kind,
                     const KindTable& table) {
  Isa* isa = nullptr;
  for (size_t i = 0; i < g_num_registered; ++i) {
    if (g_registered[i].target == target) isa = &g_registered[i];
  }
  if (!isa) {
    if (g_num_registered == kMaxIsas) return false;
    isa = &g_registered[g_num_registered++];
    isa->target = target;
    isa->name = name;
  }
  for (int x = 0; x < kNumDTypes; ++x)
    for (int y = 0; y < kNumDTypes; ++y)
      for (int p = 0; p < kNumDTypes; ++p)
        isa->fn[kind][x][y][p] = table[x][y][p];
  return true;
}

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
