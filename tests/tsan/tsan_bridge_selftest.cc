// Self-test of tbb_tsan_bridge.cc (tsan builds only): the bridge must add
// only the happens-before edges TBB really provides. Two tasks of one
// tbb::parallel_for, forced onto two threads, both write one variable; TSan
// must still report that race (ctest expects the report in the output). If
// the bridge ever over-synchronized, this test would fail instead of
// silently hiding real races in the kernels.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tbb/blocked_range.h"
#include "tbb/parallel_for.h"
#include "tbb/partitioner.h"

namespace {
int shared_value = 0;
}  // namespace

int main() {
  std::atomic<int> started{0};  // relaxed only: no happens-before
  bool two_threads = true;
  tbb::parallel_for(
      tbb::blocked_range<int>(0, 2, 1),
      [&](const tbb::blocked_range<int>& r) {
        for (int i = r.begin(); i != r.end(); ++i) {
          started.fetch_add(1, std::memory_order_relaxed);
          const auto deadline =
              std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (started.load(std::memory_order_relaxed) < 2) {
            if (std::chrono::steady_clock::now() > deadline) {
              two_threads = false;  // the other task is queued behind us
              break;
            }
            std::this_thread::yield();
          }
          shared_value += i + 1;  // the deliberate race
        }
      },
      tbb::simple_partitioner());
  std::printf("tasks ran on %s; shared_value %d\n",
              two_threads ? "two threads" : "one thread", shared_value);
  return 0;
}
