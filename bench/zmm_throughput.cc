// simdnorm_zmm_throughput: what this core issues per cycle of the 512-bit
// operations the bf16 kernels are made of (x86 with AVX512_BF16 only).
//
// Each class runs 16 independent chains (more than latency x throughput on
// current cores), so the loop measures throughput; the clock is a chain of
// dependent 64-bit adds (1 cycle each). Built with -mavx512bf16 where the
// compiler has it (bench/CMakeLists.txt). Used for docs/performance.md's
// port bounds: instructions per vector (objdump of the hot loops) over
// instructions per cycle here.
// GCC 12's own intrinsics (_mm512_undefined_* in the casts and
// reductions) trip -Wuninitialized once inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

using Clock = std::chrono::steady_clock;
constexpr long kIters = 4000000;

// Operations per ns of f(), best of 7 runs.
template <class F>
double PerNs(F f, double ops) {
  double best = 1e300;
  for (int k = 0; k < 7; ++k) {
    const auto t0 = Clock::now();
    f();
    best = std::min(
        best,
        std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return ops / best;
}

// 16 chains, op_a on the first 8 and op_b on the others; the empty asm
// keeps them in registers.
template <class OpA, class OpB>
__m512 Chains(OpA op_a, OpB op_b) {
  __m512 v0 = _mm512_set1_ps(1.0f), v1 = v0, v2 = v0, v3 = v0, v4 = v0, v5 = v0,
         v6 = v0, v7 = v0, w0 = v0, w1 = v0, w2 = v0, w3 = v0, w4 = v0, w5 = v0,
         w6 = v0, w7 = v0;
  for (long i = 0; i < kIters; ++i) {
    v0 = op_a(v0), v1 = op_a(v1), v2 = op_a(v2), v3 = op_a(v3);
    v4 = op_a(v4), v5 = op_a(v5), v6 = op_a(v6), v7 = op_a(v7);
    w0 = op_b(w0), w1 = op_b(w1), w2 = op_b(w2), w3 = op_b(w3);
    w4 = op_b(w4), w5 = op_b(w5), w6 = op_b(w6), w7 = op_b(w7);
    asm volatile(""
                 : "+v"(v0), "+v"(v1), "+v"(v2), "+v"(v3), "+v"(v4), "+v"(v5),
                   "+v"(v6), "+v"(v7));
    asm volatile(""
                 : "+v"(w0), "+v"(w1), "+v"(w2), "+v"(w3), "+v"(w4), "+v"(w5),
                   "+v"(w6), "+v"(w7));
  }
  return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(v0, v7), w0),
                       _mm512_add_ps(_mm512_add_ps(v3, w4), w7));
}

int Run() {
  const double ghz = PerNs(
      [] {
        uint64_t a = 1;
        for (long i = 0; i < kIters; ++i) {
          asm volatile(
              "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
              "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0"
              : "+r"(a));
        }
      },
      8.0 * kIters);
  std::printf("clock (dependent adds): %.2f GHz\n", ghz);
  std::printf("%-32s %8s %10s\n", "512-bit operation", "per ns", "per cycle");
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
  const __m512i mask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i idx = _mm512_set1_epi16(3);
  float sink = 0.0f;
  const auto report2 = [&](const char* name, auto op_a, auto op_b) {
    __m512 r{};
    const double per_ns = PerNs([&] { r = Chains(op_a, op_b); }, 16.0 * kIters);
    sink += _mm512_reduce_add_ps(r);
    std::printf("%-32s %8.2f %10.2f\n", name, per_ns, per_ns / ghz);
  };
  const auto report = [&](const char* name, auto op) { report2(name, op, op); };
  report("vfmadd231ps", [&](__m512 v) { return _mm512_fmadd_ps(v, m, c); });
  report("vaddps", [&](__m512 v) { return _mm512_add_ps(v, c); });
  report2(
      "vfmadd231ps and vaddps, 1:1",
      [&](__m512 v) { return _mm512_fmadd_ps(v, m, c); },
      [&](__m512 v) { return _mm512_add_ps(v, c); });
  report("vpandd (abs)", [&](__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), mask));
  });
  report("vpslld (bf16 to f32)", [&](__m512 v) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(v), 1));
  });
  report("vcvtps2pd (8 floats)", [&](__m512 v) {
    return _mm512_castpd_ps(_mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  });
  report("vcvtne2ps2bf16 (32 results)", [&](__m512 v) {
    return _mm512_castsi512_ps((__m512i)_mm512_cvtne2ps_pbh(v, c));
  });
  report("vpermw", [&](__m512 v) {
    return _mm512_castsi512_ps(
        _mm512_permutexvar_epi16(idx, _mm512_castps_si512(v)));
  });
  std::printf("(checksum %g)\n", static_cast<double>(sink));
  return 0;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) {
    std::printf("this CPU has no AVX512_BF16: nothing measured\n");
    return 0;
  }
  return Run();
}
