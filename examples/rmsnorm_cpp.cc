// RMSNorm of fp32 hidden states with bf16 weights through the C++ API, on
// every ISA of this CPU, checked against the float64 reference.
#include <cmath>
#include <cstdio>
#include <vector>

#include "simdnorm/simdnorm.hpp"

int main() {
  constexpr size_t kRows = 16, kCols = 1536;
  std::vector<float> x(kRows * kCols), y(kRows * kCols), want(kRows * kCols);
  std::vector<simdnorm::bf16> weight(kCols);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.01f * static_cast<float>(i)) * 3.0f;
  for (size_t c = 0; c < kCols; ++c)
    weight[c] = simdnorm::bf16::from_float(1.0f + 0.001f * c);

  const simdnorm::Rows<const float> in(x.data(), kRows, kCols);
  const simdnorm::Options opt{/*eps=*/1e-6f, /*max_threads=*/0};
  // The float64 truth, rounded once to float.
  const simdnorm_desc ref =
      simdnorm::make_desc(simdnorm::Kind::kRMSNorm, in,
                          simdnorm::Rows<float>(want.data(), kRows, kCols),
                          weight.data(), nullptr, opt);
  if (simdnorm::normalize_reference(ref) != simdnorm::Status::kOk) return 1;

  for (size_t i = 0; i < simdnorm::isa_count(); ++i) {
    const std::string_view isa = simdnorm::isa_name(i);
    simdnorm::set_isa(isa.data());
    const simdnorm::Status s =
        simdnorm::rms_norm(in, simdnorm::Rows<float>(y.data(), kRows, kCols),
                           weight.data(), nullptr, opt);
    if (s != simdnorm::Status::kOk) {
      std::fprintf(stderr, "rms_norm: %s\n", simdnorm::to_string(s));
      return 1;
    }
    float worst = 0;
    for (size_t j = 0; j < y.size(); ++j) {
      const float e = std::fabs(y[j] - want[j]);
      if (e > worst) worst = e;
    }
    std::printf("%-8s max |y - reference| = %.3g\n", isa.data(), worst);
  }
  simdnorm::set_isa("auto");
  return 0;
}
