// Concurrency: many std::threads calling at once with different shapes,
// kinds and dtypes; calls from inside the caller's own tbb::task_arena and
// from inside a tbb::parallel_for body (nested parallelism); simdnorm_set_isa
// flipping while other threads run kernels. Every result is compared bit for
// bit with a sequential run (results do not depend on max_threads, and a call
// uses one ISA from start to end). Names contain "Concurren" so that the
// tsan test preset runs them.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isas.h"
#include "support/matrix.h"
#include "tbb/blocked_range.h"
#include "tbb/parallel_for.h"
#include "tbb/task_arena.h"

namespace simdnorm_test {
namespace {

// One normalization problem: shape, layout and operands.
struct Problem {
  simdnorm_kind kind;
  DTypes t;
  size_t rows, cols;
  size_t x_stride = 0, y_stride = 0;  // as passed (0 = cols)
  bool in_place = false;              // y = x (t.x == t.y, x_stride)
  bool gamma = true, beta = true;
  size_t max_threads = 0;

  std::string Describe() const {
    std::ostringstream os;
    os << KindName(kind) << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
       << " param=" << DTypeName(t.param) << " rows=" << rows
       << " cols=" << cols << " x_stride=" << x_stride
       << (in_place ? " IN PLACE" : " y_stride=" + std::to_string(y_stride))
       << " gamma=" << gamma << " beta=" << beta
       << " max_threads=" << max_threads;
    return os.str();
  }
};

// The inputs of a problem, made once in the main thread (RowData and
// ParamData caches are not thread-safe); calls only read them.
struct Inputs {
  Problem p;
  std::vector<float> values;  // rows * cols
  Matrix x, gamma, beta;

  explicit Inputs(const Problem& prob)
      : p(prob),
        values(MakeRows(Family::kTypical, prob.rows, prob.cols,
                        static_cast<uint32_t>(prob.rows * 31 + prob.cols))),
        x(prob.t.x, prob.rows, prob.cols, prob.x_stride),
        gamma(prob.t.param, 1, prob.cols),
        beta(prob.t.param, 1, prob.cols) {
    x.Fill(values);
    gamma.Fill(ParamData(true, prob.cols));
    beta.Fill(ParamData(false, prob.cols));
  }
};

// Runs one call into a fresh output (a fresh copy of x when in place) and
// returns y's element bytes; *ok is false when the status is not OK or a
// byte outside y's rows changed.
std::vector<unsigned char> RunProblem(const Inputs& in, size_t max_threads,
                                      bool* ok) {
  const Problem& p = in.p;
  Matrix y(p.t.y, p.rows, p.cols, p.in_place ? p.x_stride : p.y_stride);
  if (p.in_place) y.Fill(in.values);
  simdnorm_desc d{};
  d.kind = p.kind;
  d.rows = p.rows;
  d.cols = p.cols;
  d.x = p.in_place ? y.data() : in.x.data();
  d.x_type = p.t.x;
  d.x_stride = p.x_stride;
  d.y = y.data();
  d.y_type = p.t.y;
  d.y_stride = p.in_place ? p.x_stride : p.y_stride;
  d.gamma = p.gamma ? in.gamma.data() : nullptr;
  d.beta = p.beta ? in.beta.data() : nullptr;
  d.param_type = p.t.param;
  d.eps = 1e-5f;
  d.max_threads = max_threads;
  std::string where;
  *ok = simdnorm_normalize(&d) == SIMDNORM_OK && y.PaddingIntact(&where);
  return y.ElementBytes();
}

// Problems of every kind, several dtype combinations, one row to many,
// strided, in place, without weights; several split over TBB blocks (rows *
// cols of 2^17 and more).
std::vector<Problem> MixedProblems() {
  const DTypes f32{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32};
  const DTypes bf16{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16};
  const DTypes bf16_in{SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32};
  const DTypes bf16_out{SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_BF16};
  const DTypes mixed{SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_BF16};
  std::vector<Problem> v;
  v.push_back({SIMDNORM_LAYERNORM, f32, 1, 896});
  v.push_back({SIMDNORM_RMSNORM, bf16, 300, 896});
  {
    Problem p{SIMDNORM_LAYERNORM, bf16_in, 64, 4097};
    p.x_stride = 4100;
    p.y_stride = 4099;
    p.max_threads = 2;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_RMSNORM, bf16_out, 7, 17};
    p.max_threads = 1;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_LAYERNORM,
              {SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_BF16},
              24,
              16384};
    p.in_place = true;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_RMSNORM, f32, 1100, 128};
    p.y_stride = 130;
    p.gamma = p.beta = false;
    p.max_threads = 3;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_LAYERNORM,
              {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_F32},
              200,
              1536};
    p.beta = false;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_RMSNORM, mixed, 3, 4096};
    p.gamma = false;
    v.push_back(p);
  }
  {
    Problem p{SIMDNORM_LAYERNORM, bf16, 130, 1024};
    p.in_place = true;
    p.x_stride = 1030;
    p.max_threads = 8;
    v.push_back(p);
  }
  return v;
}

struct Suite {
  std::vector<std::unique_ptr<Inputs>> inputs;
  std::vector<std::vector<unsigned char>> expected;  // max_threads 1
};

// Inputs and the sequential, single-threaded results of the active ISA.
Suite MakeSuite(const std::vector<Problem>& problems) {
  Suite s;
  for (const Problem& p : problems) {
    s.inputs.push_back(std::make_unique<Inputs>(p));
    bool ok = false;
    s.expected.push_back(RunProblem(*s.inputs.back(), 1, &ok));
    EXPECT_TRUE(ok) << p.Describe() << ": the sequential run failed";
  }
  return s;
}

// Runs f in its own thread; fails and aborts the process (rather than hang
// the test run) when it has not returned after `limit`: a deadlock.
template <class F>
void WithDeadline(std::chrono::seconds limit, const char* what, F f) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread worker([f, done]() mutable {
    f();
    done->set_value();
  });
  if (finished.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "%s: not finished after %lld s: deadlock\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::abort();
  }
  worker.join();
}

// Generous: ThreadSanitizer slows the kernels down ~10-50x.
constexpr std::chrono::seconds kDeadline{300};

TEST(ConcurrencyTest, EightThreadsMixedProblemsMatchSequential) {
  const std::vector<Problem> problems = MixedProblems();
  const Suite suite = MakeSuite(problems);
  constexpr size_t kThreads = 8, kRounds = 2;
  // Per thread: mismatching calls, failed calls (status or guard bytes).
  std::vector<size_t> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::string> first(kThreads);
  WithDeadline(kDeadline, "8 threads", [&] {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < kThreads; ++w) {
      threads.emplace_back([&, w] {
        for (size_t round = 0; round < kRounds; ++round) {
          for (size_t k = 0; k < problems.size(); ++k) {
            // Each thread starts elsewhere in the list and varies
            // max_threads, so that different problems overlap in time.
            const size_t i = (w + k) % problems.size();
            const size_t threads_of_call =
                (w + round) % 3 == 0 ? problems[i].max_threads : (w % 4);
            bool ok = false;
            const std::vector<unsigned char> got =
                RunProblem(*suite.inputs[i], threads_of_call, &ok);
            if (!ok) ++failures[w];
            if (got != suite.expected[i]) {
              if (mismatches[w]++ == 0) {
                first[w] = problems[i].Describe() + " (max_threads " +
                           std::to_string(threads_of_call) + ")";
              }
            }
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  });
  for (size_t w = 0; w < kThreads; ++w) {
    EXPECT_EQ(failures[w], 0u) << "thread " << w << ": failed calls";
    EXPECT_EQ(mismatches[w], 0u)
        << "thread " << w << ": results differ from the sequential run, first "
        << first[w];
  }
}

// Calls made inside the caller's own arena (1 and 2 slots), several at
// once, with max_threads 0 (= the arena's concurrency), 1 and more than
// the arena has.
TEST(ConcurrencyTest, CallsInsideCallersTaskArena) {
  const std::vector<Problem> problems = MixedProblems();
  const Suite suite = MakeSuite(problems);
  std::atomic<size_t> bad{0};
  auto run_all = [&](tbb::task_arena& arena) {
    arena.execute([&] {
      for (size_t i = 0; i < problems.size(); ++i) {
        for (size_t mt : {size_t{0}, size_t{1}, size_t{4}}) {
          bool ok = false;
          if (RunProblem(*suite.inputs[i], mt, &ok) != suite.expected[i] ||
              !ok) {
            ADD_FAILURE() << "in an arena of " << arena.max_concurrency()
                          << ": " << problems[i].Describe()
                          << " with max_threads " << mt;
            ++bad;
          }
        }
      }
    });
  };
  WithDeadline(kDeadline, "task_arena", [&] {
    for (int slots : {1, 2}) {
      tbb::task_arena arena(slots);
      run_all(arena);
    }
    // Two threads, each in its own arena, at the same time.
    tbb::task_arena one(1), two(2);
    std::thread a([&] { run_all(one); });
    std::thread b([&] { run_all(two); });
    a.join();
    b.join();
  });
  EXPECT_EQ(bad.load(), 0u);
}

// Calls from inside tbb::parallel_for bodies: the library's own
// parallel_for nests in the caller's; it must neither deadlock nor change
// results. Also inside an arena of 2 slots, and with an arena inside a body.
TEST(ConcurrencyTest, NestedInsideParallelForBody) {
  const std::vector<Problem> problems = MixedProblems();
  const Suite suite = MakeSuite(problems);
  std::atomic<size_t> bad{0}, calls{0};
  auto body = [&](size_t i, size_t mt) {
    const size_t p = i % problems.size();
    bool ok = false;
    if (RunProblem(*suite.inputs[p], mt, &ok) != suite.expected[p] || !ok)
      ++bad;
    ++calls;
  };
  WithDeadline(kDeadline, "nested parallel_for", [&] {
    const size_t n = 2 * problems.size();
    tbb::parallel_for(size_t{0}, n, [&](size_t i) { body(i, 0); });
    tbb::parallel_for(size_t{0}, n, [&](size_t i) { body(i, i % 3); });
    tbb::task_arena two(2);
    two.execute([&] {
      tbb::parallel_for(size_t{0}, n, [&](size_t i) { body(i, 0); });
    });
    tbb::parallel_for(size_t{0}, size_t{4}, [&](size_t i) {
      tbb::task_arena inner(1 + static_cast<int>(i % 2));
      inner.execute([&] { body(i, 0); });
    });
  });
  EXPECT_EQ(calls.load(), 2 * 3 * problems.size() + 4);
  EXPECT_EQ(bad.load(), 0u) << "calls inside parallel_for bodies gave other "
                               "bits than the sequential run (or failed)";
}

// One thread switches the ISA as fast as it can while four others run
// kernels: every call must give exactly the bits of one ISA's sequential
// run (the ISA is read once per call and used for every row and block).
TEST(ConcurrencyTest, SetIsaFlippingWhileThreadsRunKernels) {
  const std::vector<std::string> isas = SupportedIsas();
  ASSERT_FALSE(isas.empty());
  const std::vector<Problem> problems = MixedProblems();
  // expected[k][i]: problem i on isas[k].
  std::vector<Suite> by_isa;
  for (const std::string& isa : isas) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK) << isa;
    by_isa.push_back(MakeSuite(problems));
  }
  ASSERT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  // How many problems have results that differ between ISAs: only there can
  // a call that mixed ISAs be told apart.
  size_t distinguishing = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    for (size_t k = 1; k < isas.size(); ++k) {
      if (by_isa[k].expected[i] != by_isa[0].expected[i]) {
        ++distinguishing;
        break;
      }
    }
  }
  std::printf("%zu ISAs; %zu of %zu problems give ISA-specific bits\n",
              isas.size(), distinguishing, problems.size());

  std::atomic<bool> stop{false};
  std::atomic<size_t> flips{0}, calls{0}, bad{0}, failed{0};
  WithDeadline(kDeadline, "set_isa flipping", [&] {
    std::thread flipper([&] {
      for (size_t j = 0; !stop.load(std::memory_order_relaxed); ++j) {
        const char* name = j % (isas.size() + 1) == isas.size()
                               ? "auto"
                               : isas[j % isas.size()].c_str();
        if (simdnorm_set_isa(name) != SIMDNORM_OK) ++failed;
        ++flips;
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> workers;
    for (size_t w = 0; w < 4; ++w) {
      workers.emplace_back([&, w] {
        for (size_t round = 0; round < 3; ++round) {
          for (size_t k = 0; k < problems.size(); ++k) {
            const size_t i = (w + k) % problems.size();
            bool ok = false;
            const std::vector<unsigned char> got =
                RunProblem(*by_isa[0].inputs[i], w % 3, &ok);
            bool matches_one = false;
            for (const Suite& s : by_isa) matches_one |= got == s.expected[i];
            if (!matches_one || !ok) ++bad;
            ++calls;
          }
        }
      });
    }
    for (std::thread& t : workers) t.join();
    stop = true;
    flipper.join();
  });
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  EXPECT_EQ(failed.load(), 0u) << "simdnorm_set_isa failed while flipping";
  EXPECT_GT(flips.load(), 0u);
  EXPECT_EQ(bad.load(), 0u)
      << bad.load() << " of " << calls.load()
      << " calls matched no single ISA's result (or failed) while the ISA "
         "was switched "
      << flips.load() << " times";
}

}  // namespace
}  // namespace simdnorm_test
