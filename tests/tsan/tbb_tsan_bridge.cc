// ThreadSanitizer bridge for an uninstrumented oneTBB (Debian's libtbb.so.12),
// built and linked into the test executables only when the build uses
// -fsanitize=thread (the tsan preset).
//
// Why: TBB hands tasks to its workers and signals their completion through
// atomics inside libtbb.so, which TSan cannot see. Without this bridge every
// parallel call is reported as a race: the kernel's stores of y (in a worker)
// against the caller's reads after the call returns, and the caller's stores
// of x before the call against the kernel's loads. Those reports sit in
// simdnorm's own code and the test's, so a suppression would have to name
// them (or TBB frames, which are on the stack of every worker and would hide
// real races in the kernels too). Instead, the bridge gives TSan the
// happens-before edges TBB really provides, through TBB's own hooks for
// threading tools:
//
// 1. ITT sync notifications. With TBB_USE_PROFILING_TOOLS=2 (set by the tsan
//    preset for all code, the library included), TBB's headers call
//    r1::call_itt_notify(releasing, p) when a task is spawned or a wait
//    context / tree node is released, and (acquired, p) when it is taken or
//    waited for. libtbb forwards them to the ITT collector named by
//    INTEL_LIBITTNOTIFY64 for the groups in INTEL_ITTNOTIFY_GROUPS. This
//    library is that collector: __itt_sync_releasing is __tsan_release,
//    __itt_sync_acquired is __tsan_acquire.
// 2. TBB's small-object pool (task and tree-node memory) recycles objects
//    between threads through uninstrumented free lists. The exported
//    r1::allocate/deallocate are interposed (this library comes before
//    libtbb in the executable's dependencies) to add release on free and
//    acquire on reuse of the same address, as TSan does for malloc/free.
//
// 3. A wait for a task tree ends in libtbb, whose acquire load of the wait
//    context's reference count TSan cannot see; the worker that finished the
//    last task does its ITT "releasing" just before the final fetch_add on
//    that count, so the fetch_add itself would stay unordered with whatever
//    the waiter later does with that (stack) memory. r1::execute_and_wait
//    and r1::wait are interposed to repeat, in instrumented code, the
//    acquire load of the count that TBB did once the wait is over.
//
// INTEL_LIBITTNOTIFY64 and INTEL_ITTNOTIFY_GROUPS are set by the
// constructor below unless already set. Nothing here changes what TBB or
// simdnorm compute.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "oneapi/tbb/detail/_small_object_pool.h"
#include "oneapi/tbb/detail/_task.h"

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}

namespace {

template <class F>
F Next(const char* mangled) {
  void* f = dlsym(RTLD_NEXT, mangled);
  if (f == nullptr) std::abort();  // not a oneTBB 2021 ABI: fail loudly
  return reinterpret_cast<F>(f);
}

// Points TBB's ITT loader at this library (unless the caller chose).
__attribute__((constructor)) void RegisterAsIttCollector() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&RegisterAsIttCollector), &info) &&
      info.dli_fname != nullptr) {
    setenv("INTEL_LIBITTNOTIFY64", info.dli_fname, /*overwrite=*/0);
  }
  setenv("INTEL_ITTNOTIFY_GROUPS", "sync", /*overwrite=*/0);
}

}  // namespace

// ---------------------------------------------------------------- ITT
extern "C" {

// Its presence makes libtbb's ITT loader look the sync functions up by name.
__attribute__((visibility("default"))) const char* __itt_api_version(void) {
  return "simdnorm TSan bridge";
}
__attribute__((visibility("default"))) void __itt_sync_releasing(void* addr) {
  __tsan_release(addr);
}
__attribute__((visibility("default"))) void __itt_sync_acquired(void* addr) {
  __tsan_acquire(addr);
}
__attribute__((visibility("default"))) void __itt_sync_prepare(void*) {}
__attribute__((visibility("default"))) void __itt_sync_cancel(void*) {}
__attribute__((visibility("default"))) void __itt_sync_destroy(void*) {}
__attribute__((visibility("default"))) void __itt_sync_create(void*,
                                                              const char*,
                                                              const char*,
                                                              int) {}

}  // extern "C"

// ---------------------------------------------------------------- pool
namespace tbb {
namespace detail {
namespace r1 {

using AllocateEd = void* (*)(d1::small_object_pool*&, std::size_t,
                             const d1::execution_data&);
using Allocate = void* (*)(d1::small_object_pool*&, std::size_t);
using DeallocateEd = void (*)(d1::small_object_pool&, void*, std::size_t,
                              const d1::execution_data&);
using Deallocate = void (*)(d1::small_object_pool&, void*, std::size_t);

__attribute__((visibility("default"))) void* allocate(
    d1::small_object_pool*& pool, std::size_t n, const d1::execution_data& ed) {
  static const AllocateEd next = Next<AllocateEd>(
      "_ZN3tbb6detail2r18allocateERPNS0_2d117small_object_poolEmRKNS2_"
      "14execution_dataE");
  void* p = next(pool, n, ed);
  __tsan_acquire(p);
  return p;
}

__attribute__((visibility("default"))) void* allocate(
    d1::small_object_pool*& pool, std::size_t n) {
  static const Allocate next = Next<Allocate>(
      "_ZN3tbb6detail2r18allocateERPNS0_2d117small_object_poolEm");
  void* p = next(pool, n);
  __tsan_acquire(p);
  return p;
}

__attribute__((visibility("default"))) void deallocate(
    d1::small_object_pool& pool, void* p, std::size_t n,
    const d1::execution_data& ed) {
  static const DeallocateEd next = Next<DeallocateEd>(
      "_ZN3tbb6detail2r110deallocateERNS0_2d117small_object_poolEPvmRKNS2_"
      "14execution_dataE");
  __tsan_release(p);
  next(pool, p, n, ed);
}

__attribute__((visibility("default"))) void deallocate(
    d1::small_object_pool& pool, void* p, std::size_t n) {
  static const Deallocate next = Next<Deallocate>(
      "_ZN3tbb6detail2r110deallocateERNS0_2d117small_object_poolEPvm");
  __tsan_release(p);
  next(pool, p, n);
}

// ---------------------------------------------------------------- waits

// oneTBB 2021 wait_context: { uint64_t m_version_and_traits;
// std::atomic<uint64_t> m_ref_count; } (part of its binary interface).
static_assert(sizeof(d1::wait_context) == 2 * sizeof(std::uint64_t),
              "unexpected tbb::detail::d1::wait_context layout");

static void AcquireWaitContext(d1::wait_context& w) {
  auto* count = reinterpret_cast<std::atomic<std::uint64_t>*>(
      reinterpret_cast<char*>(&w) + sizeof(std::uint64_t));
  (void)count->load(std::memory_order_acquire);
}

using ExecuteAndWait = void (*)(d1::task&, d1::task_group_context&,
                                d1::wait_context&, d1::task_group_context&);
using Wait = void (*)(d1::wait_context&, d1::task_group_context&);

__attribute__((visibility("default"))) void execute_and_wait(
    d1::task& t, d1::task_group_context& t_ctx, d1::wait_context& w,
    d1::task_group_context& w_ctx) {
  static const ExecuteAndWait next = Next<ExecuteAndWait>(
      "_ZN3tbb6detail2r116execute_and_waitERNS0_2d14taskERNS2_18task_group_"
      "contextERNS2_12wait_contextES6_");
  next(t, t_ctx, w, w_ctx);
  AcquireWaitContext(w);
}

__attribute__((visibility("default"))) void wait(d1::wait_context& w,
                                                 d1::task_group_context& ctx) {
  static const Wait next = Next<Wait>(
      "_ZN3tbb6detail2r14waitERNS0_2d112wait_contextERNS2_18task_group_"
      "contextE");
  next(w, ctx);
  AcquireWaitContext(w);
}

}  // namespace r1
}  // namespace detail
}  // namespace tbb
