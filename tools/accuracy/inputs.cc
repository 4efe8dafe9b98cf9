#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>

#include "accuracy.h"

namespace simdnorm_accuracy {
namespace {

constexpr double kPi = 3.14159265358979323846;

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256** seeded by splitmix64: the same stream on every platform
// (unlike std::normal_distribution, whose algorithm is the library's choice).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix64(&seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in (0, 1): never 0 or 1, so log() and tan() stay finite.
  double uniform() {
    return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53;
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // N(0,1) by Box-Muller, both values used.
  double normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 2.0 * kPi * uniform();
    spare_ = r * std::sin(a);
    have_spare_ = true;
    return r * std::cos(a);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0.0;
  bool have_spare_ = false;
};

uint64_t mix(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t s = seed ^ (a * 0xD1B54A32D192ED03ull) ^ (b * 0x8CB92BA72F3D8DD7ull);
  return splitmix64(&s);
}

// Heavy tails clipped to +-1e30, finite in fp32.
double clip(double v) { return std::max(-1e30, std::min(1e30, v)); }

void fill_llm_hidden(Rng* rng, size_t rows, size_t cols, float* out) {
  // Channel scales are properties of the model, shared by all rows (tokens).
  std::vector<double> scale(cols);
  for (double& s : scale) s = std::exp(0.8 * rng->normal());
  // "Massive activations": a handful of fixed channels of +-1e3..1e4 in
  // almost every token (Sun et al. 2024; Llama-2, Qwen residual streams).
  const size_t n_massive = std::min<size_t>(cols, 4);
  std::vector<size_t> where(n_massive);
  std::vector<double> value(n_massive);
  for (size_t k = 0; k < n_massive; ++k) {
    where[k] = static_cast<size_t>(rng->next() % cols);
    const double mag = std::pow(10.0, rng->uniform(3.0, 4.0));
    value[k] = (rng->next() & 1) ? mag : -mag;
  }
  for (size_t r = 0; r < rows; ++r) {
    float* row = out + r * cols;
    const double token_scale = std::exp(0.3 * rng->normal());
    for (size_t c = 0; c < cols; ++c) {
      row[c] = static_cast<float>(token_scale * scale[c] * rng->normal());
    }
    for (size_t k = 0; k < n_massive; ++k) {
      // Most tokens carry them; a few (e.g. late positions) do not.
      if (rng->uniform() < 0.9) {
        row[where[k]] =
            static_cast<float>(value[k] * (1.0 + 0.05 * rng->normal()));
      }
    }
  }
}

}  // namespace

std::vector<Family> default_families() {
  // The plain families; `eps0`: followed by their copy with eps = 0.
  static const std::tuple<const char*, Gen, bool> kBases[] = {
      {"normal", Gen::kNormal, false},
      {"offset1e3", Gen::kOffset1e3, false},
      {"offset1e4", Gen::kOffset1e4, false},
      {"llm-hidden", Gen::kLlmHidden, false},
      {"first-outlier", Gen::kFirstOutlier, false},
      {"student-t2", Gen::kStudentT2, false},
      {"cauchy", Gen::kCauchy, false},
      {"near-constant", Gen::kNearConstant, true},
      {"constant", Gen::kConstant, false},
      {"huge1e25", Gen::kHuge1e25, true},
      {"huge1e36", Gen::kHuge1e36, true},
      {"tiny1e-25", Gen::kTiny1e25, true},
      {"subnormal1e-40", Gen::kSubnormal, true},
  };
  std::vector<Family> out;
  for (const bool q : {false, true}) {
    for (const auto& [name, gen, eps0] : kBases) {
      const std::string full = (q ? "bf16q:" : "") + std::string(name);
      out.push_back({full, gen, false, q});
      if (eps0) out.push_back({full + "-eps0", gen, true, q});
    }
  }
  return out;
}

std::vector<Family> families_named(const std::vector<std::string>& names) {
  const std::vector<Family> all = default_families();
  std::vector<Family> out;
  for (const std::string& name : names) {
    for (const Family& f : all) {
      if (f.name == name) out.push_back(f);
    }
  }
  return out;
}

bool Family::runs_with(simdnorm_dtype t) const {
  if (bf16q && t != SIMDNORM_F32) return false;
  const bool f16_range = gen != Gen::kHuge1e25 && gen != Gen::kHuge1e36 &&
                         gen != Gen::kTiny1e25 && gen != Gen::kSubnormal;
  return t != SIMDNORM_F16 || f16_range;
}

std::vector<float> generate(Gen gen, size_t rows, size_t cols, uint64_t seed,
                            bool residual) {
  if (residual) seed ^= 0x52455349445541ull;  // "RESIDUA"
  std::vector<float> out(rows * cols);
  Rng rng(mix(seed, static_cast<uint64_t>(gen) + 1, cols));
  if (gen == Gen::kLlmHidden) {
    fill_llm_hidden(&rng, rows, cols, out.data());
    return out;
  }
  for (size_t r = 0; r < rows; ++r) {
    float* row = out.data() + r * cols;
    auto fill = [&](auto f) {
      for (size_t c = 0; c < cols; ++c) row[c] = static_cast<float>(f());
    };
    switch (gen) {
      case Gen::kOffset1e3:
      case Gen::kOffset1e4: {
        const double mean = gen == Gen::kOffset1e3 ? 1e3 : 1e4;
        const double sd = std::pow(10.0, rng.uniform(-2.0, 0.0));
        fill([&] { return mean + sd * rng.normal(); });
        break;
      }
      case Gen::kFirstOutlier: {
        fill([&] { return rng.normal(); });
        const double mag = std::pow(10.0, rng.uniform(3.0, 4.0));
        row[0] = static_cast<float>((rng.next() & 1) ? mag : -mag);
        break;
      }
      case Gen::kStudentT2:  // t_2 = Z / sqrt(chi2_2 / 2), chi2_2 = -2 ln U
        fill([&] {
          const double z = rng.normal();
          return clip(z / std::sqrt(-std::log(rng.uniform())));
        });
        break;
      case Gen::kCauchy:
        fill([&] { return clip(std::tan(kPi * (rng.uniform() - 0.5))); });
        break;
      case Gen::kNearConstant: {
        const double base = 10.0 * rng.normal();
        fill([&] {
          const int k = static_cast<int>(rng.next() % 5) - 2;
          return base * (1.0 + k * 0x1.0p-22);
        });
        break;
      }
      case Gen::kConstant:
        std::fill(row, row + cols, static_cast<float>(10.0 * rng.normal()));
        break;
      default: {
        const double scale = gen == Gen::kHuge1e25    ? 1e25
                             : gen == Gen::kHuge1e36  ? 1e36
                             : gen == Gen::kTiny1e25  ? 1e-25
                             : gen == Gen::kSubnormal ? 1e-40
                                                      : 1.0;
        fill([&] { return scale * rng.normal(); });
        break;
      }
    }
  }
  return out;
}

void make_weights(size_t cols, uint64_t seed, std::vector<float>* gamma,
                  std::vector<float>* beta) {
  Rng rng(mix(seed, 0xFEED, cols));
  gamma->resize(cols);
  beta->resize(cols);
  for (size_t c = 0; c < cols; ++c) {
    (*gamma)[c] = static_cast<float>(1.0 + 0.1 * rng.normal());
    (*beta)[c] = static_cast<float>(0.1 * rng.normal());
  }
}

bool read_rows(const std::string& path, simdnorm_dtype type, size_t cols,
               std::vector<float>* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
  const size_t elem = simdnorm_tools::ElemSize(type);
  if (bytes.empty() || bytes.size() % (cols * elem) != 0) {
    *error = fmt::format(
        "{}: {} bytes is not a positive multiple of one row ({} x {} bytes)",
        path, bytes.size(), cols, elem);
    return false;
  }
  out->resize(bytes.size() / elem);
  for (size_t i = 0; i < out->size(); ++i) {
    uint32_t u = 0;  // little-endian
    for (size_t b = elem; b-- > 0;) u = u << 8 | bytes[i * elem + b];
    if (Is16(type)) {
      (*out)[i] = half_to_float(type, static_cast<uint16_t>(u));
    } else {
      std::memcpy(&(*out)[i], &u, sizeof(u));
    }
  }
  return true;
}

}  // namespace simdnorm_accuracy
