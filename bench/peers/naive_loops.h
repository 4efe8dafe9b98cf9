// The hand-written loop's row kernels (naive_loops.cc, the only file compiled
// with -march=native). Internal to simdnorm_peers.
#ifndef SIMDNORM_BENCH_PEERS_NAIVE_LOOPS_H_
#define SIMDNORM_BENCH_PEERS_NAIVE_LOOPS_H_

#include <cstddef>

#include "simdnorm/simdnorm.h"

namespace simdnorm_peers {
namespace detail {

// Normalizes rows [r0, r1) of d on the calling thread; false when a dtype
// combination is unknown.
bool naive_rows(const simdnorm_desc& d, size_t r0, size_t r1);

}  // namespace detail
}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_NAIVE_LOOPS_H_
