// Included first by the AVX3_BF16 kernel files (kernels_avx3_bf16.cc,
// kernels_backward_avx3_bf16.cc, kernels_channel_avx3_bf16.cc): compiles
// what follows like one target of foreach_target.h, Highway's AVX3 target
// attributes plus "avx512bf16", in namespace simdnorm::N_AVX3_BF16, so that
// no function there shares a mangled name with the dynamic AVX3 build (the
// linker would keep either). Nothing with a Highway that has AVX3_ZEN4:
// those files are then empty, and AVX3_ZEN4 (and AVX3_SPR) take the same
// paths in the foreach_target.h builds.
#ifndef SIMDNORM_LIB_AVX3_BF16_TARGET_H_
#define SIMDNORM_LIB_AVX3_BF16_TARGET_H_

#include "hwy/detect_targets.h"

#if !defined(HWY_AVX3_ZEN4)
#define SIMDNORM_NAMESPACE N_AVX3_BF16
#define SIMDNORM_WITH_AVX512BF16 1
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3
#include "hwy/highway.h"
// After highway.h (its ops keep the AVX3 attributes): our kernels get
// AVX512_BF16 too.
#undef HWY_TARGET_STR
#define HWY_TARGET_STR HWY_TARGET_STR_AVX3 ",avx512bf16"
#endif  // !defined(HWY_AVX3_ZEN4)

#endif  // SIMDNORM_LIB_AVX3_BF16_TARGET_H_
