#include "support/inputs.h"

#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace simdnorm_test {

double Rng::Uniform() {
  const uint64_t a = gen_() >> 5;
  const uint64_t b = gen_() >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b) + 0.5) /
         9007199254740992.0;
}

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double r = std::sqrt(-2.0 * std::log(Uniform()));
  const double t = 6.283185307179586 * Uniform();
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kTypical:
      return "typical";
    case Family::kStdNormal:
      return "N(0,1)";
    case Family::kLargeMean:
      return "1e4+1e-2*N(0,1)";
    case Family::kOutliers:
      return "N(0,1)+outliers(+-3000)";
    case Family::kHuge:
      return "1e25*N(0,1)";
    case Family::kTiny:
      return "1e-25*N(0,1)";
    case Family::kConstant:
      return "constant rows";
    case Family::kSubnormal:
      return "1e-40*N(0,1) (subnormal)";
    case Family::kLlm:
      return "LLM-like (channel scales, massive channels)";
  }
  return "?";
}

namespace {

bool IsOutlierChannel(size_t c, size_t cols) {
  return c % 61 == 7 || c + 1 == cols;
}

// MakeRows(f, rows, cols, seed) with seed = base + a hash of the arguments,
// made once per (f, rows, cols) and kept in *cache.
using RowCache = std::map<std::tuple<int, size_t, size_t>, std::vector<float>>;
const std::vector<float>& CachedRows(RowCache* cache, uint32_t base, Family f,
                                     size_t rows, size_t cols) {
  const auto key = std::make_tuple(static_cast<int>(f), rows, cols);
  auto it = cache->find(key);
  if (it == cache->end()) {
    const uint32_t seed = static_cast<uint32_t>(
        base + 1000003u * static_cast<uint32_t>(f) + 7919u * rows + cols);
    it = cache->emplace(key, MakeRows(f, rows, cols, seed)).first;
  }
  return it->second;
}

}  // namespace

std::vector<float> MakeRows(Family f, size_t rows, size_t cols, uint32_t seed) {
  static const float kConstants[] = {3.0f, -7.25f, 1e4f,  0.1f,
                                     0.0f, 1e-3f,  -2e5f, 1.0f};
  Rng rng(seed);
  std::vector<float> v(rows * cols);
  // kLlm: a fixed scale per channel (log-normal, 0.1x to 10x) and every
  // 509th channel (from 3) massive, a few hundred to a few thousand, with a
  // fixed sign, as in the hidden states of large transformers. Values stay
  // well inside the f16 range, also when two of them are added.
  std::vector<double> channel;
  if (f == Family::kLlm) {
    Rng crng(static_cast<uint32_t>(4242u + cols));
    for (size_t c = 0; c < cols; ++c) {
      const double s = std::exp(0.8 * crng.Normal());
      channel.push_back(c % 509 == 3 ? (c % 2 ? -1.0 : 1.0) * 300.0 * (1 + s)
                                     : s);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const double mean = 4.0 * rng.Uniform() - 2.0;
    const double sd = 0.5 + 2.5 * rng.Uniform();
    for (size_t c = 0; c < cols; ++c) {
      double x = 0.0;
      switch (f) {
        case Family::kTypical:
          x = mean + sd * rng.Normal();
          break;
        case Family::kStdNormal:
          x = rng.Normal();
          break;
        case Family::kLargeMean:
          x = 1e4 + 1e-2 * rng.Normal();
          break;
        case Family::kOutliers:
          x = rng.Normal();
          if (IsOutlierChannel(c, cols)) x = ((r + c) % 2) ? 3000.0 : -3000.0;
          break;
        case Family::kHuge:
          x = 1e25 * rng.Normal();
          break;
        case Family::kTiny:
          x = 1e-25 * rng.Normal();
          break;
        case Family::kConstant:
          x = kConstants[r % (sizeof(kConstants) / sizeof(kConstants[0]))];
          break;
        case Family::kSubnormal:
          x = 1e-40 * rng.Normal();
          break;
        case Family::kLlm:
          x = c % 509 == 3 ? channel[c] * (1.0 + 0.05 * rng.Normal())
                           : channel[c] * rng.Normal();
          break;
      }
      v[r * cols + c] = static_cast<float>(x);
    }
  }
  return v;
}

const std::vector<float>& RowData(Family f, size_t rows, size_t cols) {
  static RowCache cache;
  return CachedRows(&cache, 12345u, f, rows, cols);
}

const std::vector<float>& ResidualData(Family f, size_t rows, size_t cols) {
  static RowCache cache;
  return CachedRows(&cache, 987654u, f, rows, cols);
}

const std::vector<float>& ParamData(bool gamma, size_t cols) {
  static std::map<std::pair<bool, size_t>, std::vector<float>> cache;
  const auto key = std::make_pair(gamma, cols);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Rng rng(static_cast<uint32_t>((gamma ? 777u : 999u) + 31u * cols));
    std::vector<float> v(cols);
    for (float& p : v) {
      p = static_cast<float>(gamma ? 1.0 + 0.5 * rng.Normal()
                                   : 0.5 * rng.Normal());
    }
    it = cache.emplace(key, std::move(v)).first;
  }
  return it->second;
}

const std::vector<size_t>& AllCols() {
  static const std::vector<size_t> cols = [] {
    std::vector<size_t> c;
    for (size_t i = 1; i <= 17; ++i) c.push_back(i);
    for (size_t base : {32u, 64u, 128u}) {
      c.push_back(base - 1);
      c.push_back(base);
      c.push_back(base + 1);
    }
    for (size_t n : {896u, 897u, 4096u, 4097u, 16384u}) c.push_back(n);
    return c;
  }();
  return cols;
}

}  // namespace simdnorm_test
