// Threading, on every ISA: the output does not depend on max_threads (bit
// for bit), and concurrent calls from several threads give the same bits
// as the same calls made one after another.
#include <cstddef>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/matrix.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(ThreadsTest);

struct Problem {
  simdnorm_kind kind;
  DTypes t;
  size_t rows, cols;
};

// Normalizes the shared data of p with gamma and beta, eps 1e-5, into a new
// y buffer; returns its bytes.
std::vector<unsigned char> Normalize(const Problem& p, size_t max_threads) {
  Matrix x(p.t.x, p.rows, p.cols);
  x.Fill(RowData(Family::kTypical, p.rows, p.cols));
  Matrix gamma(p.t.param, 1, p.cols), beta(p.t.param, 1, p.cols);
  gamma.Fill(ParamData(true, p.cols));
  beta.Fill(ParamData(false, p.cols));
  Matrix y(p.t.y, p.rows, p.cols);
  simdnorm_desc d{};
  d.kind = p.kind;
  d.rows = p.rows;
  d.cols = p.cols;
  d.x = x.data();
  d.x_type = p.t.x;
  d.y = y.data();
  d.y_type = p.t.y;
  d.gamma = gamma.data();
  d.beta = beta.data();
  d.param_type = p.t.param;
  d.eps = 1e-5f;
  d.max_threads = max_threads;
  const simdnorm_status s = simdnorm_normalize(&d);
  EXPECT_EQ(s, SIMDNORM_OK) << simdnorm_status_string(s);
  std::string where;
  EXPECT_TRUE(y.PaddingIntact(&where)) << where;
  return y.ElementBytes();
}

std::string Describe(const Problem& p) {
  std::ostringstream os;
  os << "[ISA " << simdnorm_active_isa() << "] " << KindName(p.kind)
     << " x=" << DTypeName(p.t.x) << " y=" << DTypeName(p.t.y)
     << " param=" << DTypeName(p.t.param) << " rows=" << p.rows
     << " cols=" << p.cols;
  return os.str();
}

std::vector<DTypes> SomeDTypes() {
  return {{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
          {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
          {SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32},
          {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_BF16}};
}

TEST_P(ThreadsTest, BitwiseIndependentOfMaxThreads) {
  for (simdnorm_kind kind : AllKinds()) {
    for (const DTypes& t : SomeDTypes()) {
      for (const auto& shape : {std::make_pair(size_t{1000}, size_t{896}),
                                std::make_pair(size_t{5}, size_t{16384}),
                                std::make_pair(size_t{3}, size_t{33})}) {
        const Problem p{kind, t, shape.first, shape.second};
        const std::vector<unsigned char> one = Normalize(p, 1);
        for (size_t threads : {2u, 0u, 7u}) {
          EXPECT_TRUE(Normalize(p, threads) == one)
              << Describe(p) << ": max_threads " << threads
              << " gives other bits than max_threads 1";
        }
      }
    }
  }
}

TEST_P(ThreadsTest, ConcurrentCallsMatchSequential) {
  std::vector<Problem> problems;
  for (simdnorm_kind kind : AllKinds()) {
    for (const DTypes& t : SomeDTypes()) {
      problems.push_back({kind, t, 200, 896});
    }
  }
  std::vector<std::vector<unsigned char>> sequential;
  for (const Problem& p : problems) sequential.push_back(Normalize(p, 0));
  // Warm the data cache (RowData/ParamData are not thread-safe), then run
  // all problems at once, each twice, from 4 threads.
  std::vector<std::vector<unsigned char>> concurrent(problems.size() * 2);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (size_t i = w; i < concurrent.size(); i += 4) {
        concurrent[i] = Normalize(problems[i % problems.size()], 0);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t i = 0; i < concurrent.size(); ++i) {
    EXPECT_TRUE(concurrent[i] == sequential[i % problems.size()])
        << Describe(problems[i % problems.size()])
        << ": a concurrent call gave other bits";
  }
}

SIMDNORM_INSTANTIATE_PER_ISA(ThreadsTest);

}  // namespace
}  // namespace simdnorm_test
