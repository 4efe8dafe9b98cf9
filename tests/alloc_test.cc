// Zero heap allocations per call: after a warm-up, many calls of every
// kind, dtype combination, weight variant, layout and ISA allocate nothing,
// counted process-wide by the malloc replacement of alloc_hooks.c (which
// also sees what oneTBB allocates: libtbbmalloc is kept out, so TBB falls
// back to malloc). A separate executable: the replacement must not touch
// the other tests, and it is not built under sanitizers.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "alloc_hooks.h"
#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isas.h"
#include "support/matrix.h"
#include "tbb/task_arena.h"
#include "tbb/tbb_allocator.h"

namespace simdnorm_test {
namespace {

// Buffers for one (dtypes, rows, cols) layout, made before counting starts.
struct Buffers {
  Matrix x, y, gamma, beta;
  Buffers(const DTypes& t, size_t rows, size_t cols, size_t x_stride = 0,
          size_t y_stride = 0)
      : x(t.x, rows, cols, x_stride),
        y(t.y, rows, cols, y_stride),
        gamma(t.param, 1, cols),
        beta(t.param, 1, cols) {
    x.Fill(MakeRows(Family::kTypical, rows, cols, 7));
    gamma.Fill(ParamData(true, cols));
    beta.Fill(ParamData(false, cols));
  }
};

simdnorm_desc Desc(simdnorm_kind kind, const DTypes& t, Buffers& b, int weights,
                   size_t max_threads, bool in_place) {
  simdnorm_desc d{};
  d.kind = kind;
  d.rows = b.x.rows();
  d.cols = b.x.cols();
  d.x = b.x.data();
  d.x_type = t.x;
  d.x_stride = b.x.stride();
  d.y = in_place ? b.x.data() : b.y.data();
  d.y_type = in_place ? t.x : t.y;
  d.y_stride = in_place ? b.x.stride() : b.y.stride();
  d.gamma = (weights & 1) ? b.gamma.data() : nullptr;
  d.beta = (weights & 2) ? b.beta.data() : nullptr;
  d.param_type = t.param;
  d.eps = 1e-5f;
  d.max_threads = max_threads;
  return d;
}

// Counts the allocations of `calls` rounds of f after one warm-up round.
template <class F>
size_t AllocationsOf(size_t calls, F f) {
  f();  // warm-up: first-use initialization (ISA list, TBB, thread data)
  simdnorm_alloc_reset();
  simdnorm_alloc_counting(1);
  for (size_t i = 0; i < calls; ++i) f();
  simdnorm_alloc_counting(0);
  return simdnorm_alloc_count();
}

// The allocations of 10 calls of call(&d), each of which must succeed.
template <class Desc>
size_t AllocationsOfCalls(const Desc& d, simdnorm_status (*call)(const Desc*)) {
  return AllocationsOf(10, [&] {
    if (call(&d) != SIMDNORM_OK) std::abort();
  });
}
size_t AllocationsOfCalls(const simdnorm_desc& d) {
  return AllocationsOfCalls(d, simdnorm_normalize);
}

class AllocTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK); }
};

// The counter sees allocations of this process, TBB's included.
TEST_F(AllocTest, CounterSeesMallocNewAndTbb) {
  EXPECT_EQ(AllocationsOf(10,
                          [] {
                            std::vector<int> v(100);
                            asm volatile("" : : "r"(v.data()) : "memory");
                          }),
            10u)
      << "operator new is not counted";
  // TBB's allocator is initialized on this first use; it must be malloc.
  EXPECT_EQ(tbb::tbb_allocator<char>::allocator_type(),
            tbb::tbb_allocator<char>::standard)
      << "TBB uses libtbbmalloc: its allocations would not be counted";
  EXPECT_GT(simdnorm_refused_dlopens(), 0u);
  EXPECT_EQ(AllocationsOf(10,
                          [] {
                            tbb::tbb_allocator<double> a;
                            a.deallocate(a.allocate(64), 64);
                          }),
            10u)
      << "TBB's allocations are not counted";
}

// One row, on every ISA: every kind, dtype combination, weight variant
// (none, gamma, beta, both), dense, strided and in place.
TEST_F(AllocTest, OneRowEveryKindDtypeAndIsaAllocatesNothing) {
  size_t total_calls = 0;
  for (const std::string& isa : SupportedIsas()) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK);
    for (size_t cols : {1u, 17u, 896u, 4097u}) {
      for (const DTypes& t : AllDTypes()) {
        Buffers dense(t, 1, cols), strided(t, 1, cols, cols + 3, cols + 5);
        for (simdnorm_kind kind : AllKinds()) {
          for (int weights = 0; weights < 4; ++weights) {
            simdnorm_desc d[3] = {
                Desc(kind, t, dense, weights, 0, false),
                Desc(kind, t, strided, weights, 1, false),
                Desc(kind, t, dense, weights, 0, /*in_place=*/true)};
            const size_t n = AllocationsOf(20, [&] {
              for (const simdnorm_desc& desc : d) {
                if (simdnorm_normalize(&desc) != SIMDNORM_OK) std::abort();
              }
            });
            total_calls += 3 * 21;
            EXPECT_EQ(n, 0u)
                << "[ISA " << isa << "] " << KindName(kind)
                << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
                << " param=" << DTypeName(t.param) << " cols=" << cols
                << " weights=" << weights;
          }
        }
      }
    }
  }
  std::printf("%zu calls checked\n", total_calls);
}

// Many rows on the calling thread only (max_threads 1), and the C++ API.
TEST_F(AllocTest, ManyRowsOneThreadAllocatesNothing) {
  for (const DTypes& t : AllDTypes()) {
    Buffers b(t, 256, 896);
    for (simdnorm_kind kind : AllKinds()) {
      const simdnorm_desc d = Desc(kind, t, b, 3, 1, false);
      EXPECT_EQ(AllocationsOfCalls(d), 0u)
          << KindName(kind) << " x=" << DTypeName(t.x)
          << " y=" << DTypeName(t.y) << " param=" << DTypeName(t.param);
    }
  }
  Buffers b({SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_BF16}, 256, 896);
  const simdnorm::Rows<const simdnorm::bf16> x(
      static_cast<const simdnorm::bf16*>(b.x.data()), 256, 896);
  const simdnorm::Rows<float> y(static_cast<float*>(b.y.data()), 256, 896);
  const auto* g = static_cast<const simdnorm::bf16*>(b.gamma.data());
  simdnorm::Options opt;
  opt.max_threads = 1;
  EXPECT_EQ(AllocationsOf(10,
                          [&] {
                            if (simdnorm::layer_norm(x, y, g, g, opt) !=
                                    simdnorm::Status::kOk ||
                                simdnorm::rms_norm(x, y, g, g, opt) !=
                                    simdnorm::Status::kOk)
                              std::abort();
                          }),
            0u)
      << "C++ API";
}

// The fields of a GroupNorm or BatchNorm descriptor for n samples of c
// channels and hw positions in b's buffers: one thread, fast rounding.
template <class Desc>
Desc ChannelDesc(const DTypes& t, Buffers& b, size_t n, size_t c, size_t hw,
                 simdnorm_layout layout) {
  Desc d{};
  d.n = n;
  d.c = c;
  d.hw = hw;
  d.layout = layout;
  d.x = b.x.data();
  d.x_type = t.x;
  d.y = b.y.data();
  d.y_type = t.y;
  d.gamma = b.gamma.data();
  d.beta = b.beta.data();
  d.param_type = t.param;
  d.eps = 1e-5f;
  d.max_threads = 1;
  d.flags = SIMDNORM_FAST_ROUNDING;
  return d;
}

// GroupNorm and BatchNorm take their working arrays (fp32 weights,
// per-channel constants and sums) from a block each thread keeps
// (lib/scratch.h): after a first call, calls on one thread allocate
// nothing, in both layouts, training and inference, f32 and bf16 x, f32 y
// and fast-rounded bf16 y. (Correctly rounded 16-bit y still allocates the
// units' exact-sums caches.)
TEST_F(AllocTest, ChannelKindsOnOneThreadAllocateNothing) {
  const size_t n = 2, c = 64, hw = 81;  // gamma and beta: hw >= c values
  for (const DTypes& t : {DTypes{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
                          DTypes{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
                          DTypes{SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32}}) {
    Buffers b(t, n * c, hw);
    std::vector<float> running(2 * c, 1.0f), saved(2 * c);
    for (simdnorm_layout layout : {SIMDNORM_NCHW, SIMDNORM_NHWC}) {
      auto g = ChannelDesc<simdnorm_group_desc>(t, b, n, c, hw, layout);
      g.groups = 8;
      EXPECT_EQ(AllocationsOfCalls(g, simdnorm_group_norm), 0u)
          << "GroupNorm layout " << layout << " x=" << DTypeName(t.x)
          << " y=" << DTypeName(t.y);
      for (int training : {0, 1}) {
        auto d = ChannelDesc<simdnorm_batch_desc>(t, b, n, c, hw, layout);
        d.running_mean = running.data();
        d.running_var = running.data() + c;
        d.save_mean = saved.data();
        d.save_invstd = saved.data() + c;
        d.momentum = 0.0f;  // the running statistics stay as they are
        d.training = training;
        EXPECT_EQ(AllocationsOfCalls(d, simdnorm_batch_norm), 0u)
            << "BatchNorm training " << training << " layout " << layout
            << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y);
      }
    }
  }
}

// Streamed calls copy weights that sit at another offset than x on the
// stack (norm_rows-inl.h, WeightsApart): rows 16 bytes off with aligned
// weights, y with x and apart.
TEST_F(AllocTest, StreamedRowsWithWeightsApartAllocateNothing) {
  for (const DTypes& t : AllDTypes()) {
    Buffers b(t, 64, 896);
    Matrix x(t.x, 64, 896, 896, 16 / ElemSize(t.x));
    x.Fill(MakeRows(Family::kTypical, 64, 896, 7));
    for (size_t y_off : {16u, 0u}) {
      Matrix y(t.y, 64, 896, 896, y_off / ElemSize(t.y));
      for (simdnorm_kind kind : AllKinds()) {
        simdnorm_desc d = Desc(kind, t, b, 3, 1, false);
        d.x = x.data();
        d.y = y.data();
        d.flags = SIMDNORM_Y_STREAM;
        EXPECT_EQ(AllocationsOfCalls(d), 0u)
            << KindName(kind) << " x=" << DTypeName(t.x)
            << " y=" << DTypeName(t.y) << " param=" << DTypeName(t.param)
            << " y at +" << y_off;
      }
    }
  }
}

// Calls that fail validation allocate nothing either.
TEST_F(AllocTest, FailedValidationAllocatesNothing) {
  const DTypes t{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32};
  Buffers b(t, 4, 8);
  simdnorm_desc bad[5];
  for (simdnorm_desc& d : bad) d = Desc(SIMDNORM_LAYERNORM, t, b, 3, 0, false);
  bad[0].x = nullptr;
  bad[1].eps = -1.0f;
  bad[2].cols = 0;
  bad[3].y = static_cast<float*>(b.x.data()) + 1;
  bad[4].x_stride = 3;
  EXPECT_EQ(AllocationsOf(100,
                          [&] {
                            for (const simdnorm_desc& d : bad) {
                              if (simdnorm_normalize(&d) == SIMDNORM_OK)
                                std::abort();
                            }
                          }),
            0u);
}

// Rows split over TBB worker threads (max_threads 0 = the arena's default,
// and 2). The library's call path allocates nothing of its own; a
// parallel_for takes its task objects from TBB's per-thread small-object
// pools. Those go to malloc now and then even in a steady state: a task
// freed by a worker returns to its owner's pool through a remote free list,
// and an owner that finds its local list empty before the return allocates
// (CI once saw 1 allocation in 200 calls). That is TBB's, rare, and
// bounded; what this test rules out is an allocation per call, which
// would show as at least one per call.
TEST_F(AllocTest, ManyRowsOverTbbThreads) {
  const DTypes t{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
  Buffers b(t, 256, 4096);  // 16 blocks' worth: every thread gets a block
  {
    // The first parallel call of the process starts TBB (market, arena,
    // workers, task pools): the counter sees those allocations.
    const simdnorm_desc d = Desc(SIMDNORM_LAYERNORM, t, b, 3, 0, false);
    simdnorm_alloc_reset();
    simdnorm_alloc_counting(1);
    const simdnorm_status s = simdnorm_normalize(&d);
    simdnorm_alloc_counting(0);
    ASSERT_EQ(s, SIMDNORM_OK);
    std::printf(
        "first parallel call: %zu allocations (TBB start-up when "
        "this is the first parallel call of the process)\n",
        simdnorm_alloc_count());
  }
  constexpr size_t kCalls = 200;
  for (size_t mt : {size_t{0}, size_t{2}}) {
    for (simdnorm_kind kind : AllKinds()) {
      const simdnorm_desc d = Desc(kind, t, b, 3, mt, false);
      auto call = [&] {
        if (simdnorm_normalize(&d) != SIMDNORM_OK) std::abort();
      };
      for (int i = 0; i < 50; ++i) call();  // let the pools settle
      const size_t n = AllocationsOf(kCalls, call);
      std::printf(
          "%s max_threads %zu, %d TBB threads: %zu allocations in %zu "
          "calls\n",
          KindName(kind), mt, tbb::this_task_arena::max_concurrency(), n,
          kCalls);
      EXPECT_LT(n, kCalls / 4) << KindName(kind) << " max_threads " << mt;
    }
  }
}

}  // namespace
}  // namespace simdnorm_test
