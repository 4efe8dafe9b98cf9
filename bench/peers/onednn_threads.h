// How the oneDNN peers (onednn.cc, onednn_passes.cc) limit oneDNN's
// threads. Only with SIMDNORM_HAVE_ONEDNN.
#ifndef SIMDNORM_BENCH_PEERS_ONEDNN_THREADS_H_
#define SIMDNORM_BENCH_PEERS_ONEDNN_THREADS_H_

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#elif DNNL_CPU_RUNTIME == DNNL_RUNTIME_TBB
#include <tbb/task_arena.h>
#endif

namespace simdnorm_peers {

// Runs f with oneDNN limited to one thread when threads == 1; with all
// threads (its own default) otherwise.
template <class F>
inline void WithThreads(size_t threads, F&& f) {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  if (threads == 1) {
    const int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    f();
    omp_set_num_threads(prev);
    return;
  }
#elif DNNL_CPU_RUNTIME == DNNL_RUNTIME_TBB
  if (threads == 1) {
    tbb::task_arena arena(1);
    arena.execute(f);
    return;
  }
#endif
  (void)threads;
  f();
}

}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_ONEDNN_THREADS_H_
